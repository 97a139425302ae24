#!/usr/bin/env python3
"""summarize (gridsel_harness.summary) and the statistics it uses: medians,
spreads and the best point of a synthetic profile, warmup launches and
under-sampled points left out, and the report's numbers over them."""

import io
import math
import os
import unittest
from contextlib import redirect_stdout

from harness_testing import MS, TempDirTest, read, read_csv, write_results

import gridsel_bench as gb
from gridsel_harness.report import analyse
from gridsel_harness.results import SUMMARY_HEADER, load_summary, short_kernel
from gridsel_harness.stats import describe, fmt_speedup, geomean, quantile
from gridsel_harness.summary import summarize_dir


class SummaryMath(TempDirTest):
    def test_quantiles_and_spread(self):
        med, p10, p90, spread = describe([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
        self.assertEqual(med, 6)
        self.assertAlmostEqual(p10, 2.0)
        self.assertAlmostEqual(p90, 10.0)
        self.assertAlmostEqual(spread, (10 - 2) / 6 * 100)
        self.assertAlmostEqual(quantile([1.0, 2.0], 0.5), 1.5)
        self.assertAlmostEqual(geomean([2, 8]), 4.0)
        self.assertEqual(fmt_speedup(2.0), "2.000")
        self.assertEqual(fmt_speedup(0.5), "1/2.000")
        self.assertEqual(short_kernel("gemm", "__omp_offloading_fe00_510052_kernel_gemm_l16"), "gemm_l16")

    def build(self):
        # Pair A (long): llvm 10 ms, lloyd 5 ms, grid 4 ms (best), grid 20 ms.
        # Pair B (short): llvm 2 ms, lloyd 2.2 ms (10 % slower), grid 1.96 ms (best).
        # Pair C: one point has 2 samples only -> dropped.
        A, B, C = ("kA_l10", 1 << 20), ("kB_l20", 16), ("kC_l30", 1000)
        rows = []
        for rep, jitter in enumerate((0.0, 0.1, -0.1)):
            rows += [(*A, "llvm", 32, 3200, int((10 + jitter) * MS)), (*A, "lloyd", 96, 1056, int((5 + jitter) * MS)),
                     (*A, "grid", 128, 528, int((4 + jitter) * MS)), (*A, "grid", 1, 1, int((20 + jitter) * MS))]
            rows += [(*B, "llvm", 32, 1, 2 * MS), (*B, "lloyd", 1, 16, int(2.2 * MS)),
                     (*B, "grid", 64, 16, int(1.96 * MS)), (*B, "grid", 1, 1, 50 * MS)]
            rows += [(*C, "llvm", 32, 32, MS), (*C, "lloyd", 96, 11, MS)]
            if rep < 2:
                rows.append((*C, "grid", 128, 8, MS))
        # A warmup launch that would be the best point if it were counted.
        warm = [(*A, "llvm", 32, 3200, 1)]
        pairs = [{"kernel": A[0], "trip_count": A[1], "class": "long", "launches_per_rep": 1, "cycle_length": 4},
                 {"kernel": B[0], "trip_count": B[1], "class": "short", "launches_per_rep": 1, "cycle_length": 4},
                 {"kernel": C[0], "trip_count": C[1], "class": "ideal", "launches_per_rep": 1, "cycle_length": 3}]
        write_results(self.dir, "prog", 100, pairs, rows, warmup_rows=warm)

    def test_summary_and_report_numbers(self):
        self.build()
        with redirect_stdout(io.StringIO()):
            summary, st = summarize_dir(self.dir, gridsel=None)
        self.assertEqual(st["dropped"], 1)
        self.assertEqual(st["kept"], 2)
        with open(os.path.join(self.dir, "summary.csv")) as f:
            self.assertEqual(f.readline().strip(), ",".join(SUMMARY_HEADER))
        table = load_summary(self.dir)
        a = table[("prog", "kA_l10", 1 << 20)]
        self.assertEqual(a["class"], "long")
        self.assertEqual(a["llvm"][:3], (32, 3200, 10.0))  # the 1 ns warmup row is not counted
        self.assertEqual(a["lloyd"][:3], (96, 1056, 5.0))
        self.assertEqual(a["best"][:3], (128, 528, 4.0))
        # spread of llvm: samples 9.9, 10, 10.1 -> p10 9.92, p90 10.08
        self.assertAlmostEqual(a["llvm"][3], 1.6, places=2)
        b = table[("prog", "kB_l20", 16)]
        self.assertEqual(b["best"][:2], (64, 16))
        pts = read_csv(os.path.join(self.dir, "points.csv"))
        self.assertEqual(len(pts), 8)
        self.assertTrue(all(p["n_samples"] == "3" for p in pts))
        self.assertEqual(pts[0]["label"], "llvm")  # policies first, llvm leading

        an = analyse(table, list(table), ["lloyd"])
        geo = an["geo"]
        self.assertAlmostEqual(geo["lloyd"]["long"][0], 2.0)
        self.assertAlmostEqual(geo["lloyd"]["short"][0], 2 / 2.2)
        self.assertAlmostEqual(geo["lloyd"]["all"][0], math.sqrt(2.0 * 2 / 2.2))
        self.assertAlmostEqual(geo["best"]["all"][0], math.sqrt(2.5 * 2 / 1.96))
        # lloyd: A 5 vs best 4 (25 % off), B 2.2 vs 1.96 (12 % off) -> none within 5 or 10 %
        self.assertEqual(an["within"]["lloyd"], (0, 0, 2))
        self.assertEqual([(p, r["pk"][1]) for p, r in an["slower"]], [("lloyd", "kB_l20")])

        with redirect_stdout(io.StringIO()):
            gb.main(["report", self.dir, "--policies", "llvm,lloyd"])
        md = read(os.path.join(self.dir, "report.md"))
        self.assertIn("| prog_l10 | 1048576 | long | (32,3200) |", md)
        self.assertIn("1/1.100", md)
        self.assertIn("TestGPU", md)


if __name__ == "__main__":
    unittest.main()
