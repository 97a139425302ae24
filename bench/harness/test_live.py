#!/usr/bin/env python3
"""live and best-cache (gridsel_harness.live): whole-program profiles joined
with the replay, and the sweep's best grids written in tune's cache format by
`gridsel-research cache-entries`."""

import io
import json
import os
import unittest
from contextlib import redirect_stdout

from harness_testing import K, TempDirTest, gridsel_cli

import gridsel_bench as gb
from gridsel_harness.live import live_samples, live_table
from gridsel_harness.programs import PROFILE_HEADER


class Live(TempDirTest):
    def test_live_drops_warmups_and_joins_the_replay(self):
        folder = os.path.join(self.dir, "live")
        os.makedirs(folder)
        k = "__omp_offloading_fe00_1_k_l7"
        # Per process: one warm-up launch (huge) then two timed ones.
        for policy, ns in (("llvm", (200, 210)), ("auto", (100, 105))):
            for rnd in (1, 2):
                with open(os.path.join(folder, f"prog-64-{policy}-{rnd}.csv"), "w") as f:
                    f.write(",".join(PROFILE_HEADER) + "\n")
                    for t in (10**9,) + ns:
                        f.write(f"{k},64,{policy},1,128,{t}\n")
        samples = live_samples(folder)
        self.assertEqual(sorted(ns for ns, _ in samples[("prog", k, 64)]["auto"]), [100, 100, 105, 105])
        self.assertEqual({g for _, g in samples[("prog", k, 64)]["auto"]}, {(128, 1)})
        table = {("prog", k, 64): {"class": "ideal", "llvm": (32, 2, 4.0, 0), "auto": (128, 1, 2.5, 0)}}
        (row,) = live_table(samples, table, ["auto"])
        self.assertAlmostEqual(row["auto_live"], 205 / 102.5)
        self.assertAlmostEqual(row["auto_replay"], 1.6)
        self.assertEqual((row["n_llvm"], row["auto_grid"]), (4, (128, 1)))


class BestCache(TempDirTest):
    def test_the_best_grid_of_every_case_in_tunes_format(self):
        results = self.results_copy()
        out = os.path.join(self.dir, "best.json")
        with redirect_stdout(io.StringIO()) as log:
            gb.main(["best-cache", results, "--out", out, "--gridsel", gridsel_cli()])
        self.assertIn("4 best grids for device 'NVIDIA H100 80GB HBM3'", log.getvalue())
        with open(out) as f:
            text = f.read()
        cache = json.loads(text)
        self.assertEqual(cache["version"], 3)
        device = "NVIDIA H100 80GB HBM3"
        # One record a line in key order, as tune writes its store; each pins
        # the best grid of its kernel's trip-count class.
        got = [(r["kernel"], r["device"], r["sm_arch"], r["trips"], r["pinned"],
                r["grids"][r["pinned"]]["warm"]) for r in cache["records"]]
        self.assertEqual(sorted(got), sorted([
            (f"{K}_heavy_l39", device, 90, [64, 64], "grid:64,1", [450000]),
            (f"{K}_limit256_l27", device, 90, [1048576, 1048576], "grid:64,8192", [1900000]),
            (f"{K}_local_array_l57", device, 90, [1048576, 1048576], "grid:64,8192", [1000000]),
            (f"{K}_spmd_l12", device, 90, [1000, 1000], "grid:128,8", [1000000]),
        ]))
        self.assertEqual(len(text.splitlines()), 2 + 4)

    def test_another_device_and_arch(self):
        results = self.results_copy()
        out = os.path.join(self.dir, "best.json")
        with redirect_stdout(io.StringIO()):
            gb.main(["best-cache", results, "--out", out, "--gridsel", gridsel_cli(),
                     "--device", "NVIDIA A100-SXM4-40GB", "--sm-arch", "80"])
        with open(out) as f:
            records = json.load(f)["records"]
        self.assertEqual({(r["device"], r["sm_arch"]) for r in records}, {("NVIDIA A100-SXM4-40GB", 80)})


if __name__ == "__main__":
    unittest.main()
