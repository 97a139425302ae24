#!/usr/bin/env python3
"""add-policy and ceiling (gridsel_harness.policies): offline policies put into
summary.csv, and the static long-loop rules judged with each kernel's own
distribute chunk as `gridsel-research chunks` gives it."""

import io
import json
import math
import os
import unittest
from contextlib import redirect_stdout

from harness_testing import K, TempDirTest, gridsel_cli, read, read_csv

import gridsel_bench as gb
from gridsel_harness.gridsel import Chunks
from gridsel_harness.policies import ceiling

LONG1, LONG2 = ("kernels", f"{K}_local_array_l57", 1 << 20), ("kernels", f"{K}_limit256_l27", 1 << 20)


class Ceiling(TempDirTest):
    def test_ceiling_finds_the_best_single_rule_and_the_target_gap(self):
        # Two long cases (trip 2^20 = 8192 chunks) that both run 2x faster at
        # 64 x 8192 than LLVM, and one ideal case already at its best.
        long1, long2, ideal = ("p", "a", 1 << 20), ("p", "b", 1 << 20), ("p", "c", 1000)
        table = {
            long1: {"class": "long", "llvm": (128, 3200, 2.0, 0), "best": (64, 8192, 1.0, 0)},
            long2: {"class": "long", "llvm": (128, 3200, 4.0, 0), "best": (64, 8192, 2.0, 0)},
            ideal: {"class": "ideal", "llvm": (32, 32, 3.0, 0), "best": (128, 8, 1.0, 0)},
        }
        points = {long1: {(64, 8192): 1.0, (128, 8192): 2.2}, long2: {(64, 8192): 2.0, (32, 4096): 1.9}}
        chunks = {long1: Chunks(128, 8192, 65536), long2: Chunks(128, 8192, 65536)}
        c = ceiling(table, points, chunks, sms=132)
        top = c["rows"][0]
        self.assertEqual((top["threads"], top["cap"]), (64, 8192))
        self.assertAlmostEqual(top["geomean"], 2.0)
        self.assertEqual((top["regressions"], top["within5"], top["missing"]), (0, 2, 0))
        # Every case at its best here, so the best rule reaches 100 % of best.
        self.assertAlmostEqual(c["with_rule"], c["best_all"])
        # (128, 8192) is 10 % slower than llvm on long1 and unmeasured on long2.
        slow = next(r for r in c["rows"] if (r["threads"], r["cap"]) == (128, 8192))
        self.assertEqual((slow["regressions"], slow["missing"]), (1, 1))
        self.assertAlmostEqual(c["oracle"], math.sqrt(2.0 * 4.0 / 1.9))

    def test_a_rule_never_asks_more_blocks_than_the_sweep_tried(self):
        case = ("p", "a", 1 << 30)
        table = {case: {"class": "long", "llvm": (128, 3200, 2.0, 0), "best": (64, 1024, 1.0, 0)}}
        points = {case: {(64, 1024): 1.0}}
        # 2^23 chunks, but the sweep stopped at 1024 blocks for this kernel.
        c = ceiling(table, points, {case: Chunks(128, 1 << 23, 1024)}, sms=132)
        rule = next(r for r in c["rows"] if (r["threads"], r["cap"]) == (64, 65536))
        self.assertEqual((rule["geomean"], rule["missing"]), (2.0, 0))

    def test_ceiling_of_the_fixture_uses_each_kernels_chunk(self):
        results = self.results_copy()
        with redirect_stdout(io.StringIO()) as out:
            rc = gb.main(["ceiling", results, "--gridsel", gridsel_cli(), "--bin-dir", self.fixture_binaries()])
        self.assertEqual(rc, 0, out.getvalue())
        md = read(os.path.join(results, "static-ceiling.md"))
        self.assertIn("`gridsel-research chunks`: 128/256 iterations here", md)
        self.assertIn("each judged on all 2 long-loop cases", md)
        # 64 threads x one block per chunk: local_array's 8192 128-iteration
        # chunks (1.0 ms, 2x) and limit256's 4096 256-iteration chunks (2.0
        # ms, 2x). A 128-iteration rule would have taken limit256's 64 x 8192
        # (1.9 ms) and claimed 2.05x.
        top = [l for l in md.splitlines() if l.startswith("| 64 |")][0]
        self.assertEqual(top, "| 64 | 8192 | 2.000 | 0 | 1 | 0 |")

    def test_ceiling_refuses_binaries_that_do_not_describe_the_long_loops(self):
        results = self.results_copy()
        empty = os.path.join(self.dir, "empty")
        os.makedirs(empty)
        with redirect_stdout(io.StringIO()), self.assertRaises(SystemExit) as e:
            gb.main(["ceiling", results, "--gridsel", gridsel_cli(), "--bin-dir", empty])
        self.assertIn("no distribute chunk for 2 long-loop cases", str(e.exception))


class AddPolicy(TempDirTest):
    def rows(self, results, policy):
        return [(r["kernel"][len(K) + 1:], r["threads"], r["blocks"], r["median_ms"], r["spread_pct"], r["class"])
                for r in read_csv(os.path.join(results, "summary.csv")) if r["policy"] == policy]

    def test_adds_replaces_and_records_offline_policies(self):
        results = self.results_copy()
        with redirect_stdout(io.StringIO()):
            gb.main(["add-policy", results, "--name", "auto", "--file", os.path.join(results, "auto-loo.csv")])
        # auto's rows replaced by the leave-one-out file's: spmd_l12 has no
        # grid there (left out), the `other` case is not in the summary
        # (ignored); each spread is that grid's in points.csv.
        self.assertEqual(self.rows(results, "auto"), [
            ("heavy_l39", "1", "64", "0.55", "3.64", "short"),
            ("limit256_l27", "64", "8192", "1.9", "10.53", "long"),
            ("local_array_l57", "128", "3200", "2", "10.00", "long"),
        ])
        self.assertEqual(len(self.rows(results, "llvm")), 4)
        with redirect_stdout(io.StringIO()):
            gb.main(["add-policy", results, "--name", "tune", "--file", os.path.join(results, "tune-sim.csv"),
                     "--where", "launches_per_run=20",
                     "--columns", "kept_threads_run10,kept_blocks_run10,kept_ms_run10"])
            before = read(os.path.join(results, "summary.csv"))
            gb.main(["add-policy", results, "--name", "tune", "--file", os.path.join(results, "tune-sim.csv"),
                     "--where", "launches_per_run=20",
                     "--columns", "kept_threads_run10,kept_blocks_run10,kept_ms_run10"])
        self.assertEqual(read(os.path.join(results, "summary.csv")), before)
        # Only the 20-launches-per-run rows (the 1-launch rows keep other grids).
        self.assertEqual(self.rows(results, "tune"), [
            ("heavy_l39", "64", "1", "0.45", "4.44", "short"),
            ("spmd_l12", "128", "8", "1", "20.00", "ideal"),
        ])
        with open(os.path.join(results, "offline-policies.json")) as f:
            self.assertEqual(json.load(f), {"auto": {"file": "auto-loo.csv", "rows": 3},
                                            "tune": {"file": "tune-sim.csv", "rows": 2}})
        # The report lists them.
        with redirect_stdout(io.StringIO()):
            gb.main(["report", results])
        self.assertIn("auto (auto-loo.csv, 3 cases), tune (tune-sim.csv, 2 cases)",
                      read(os.path.join(results, "report.md")))


if __name__ == "__main__":
    unittest.main()
