#!/usr/bin/env python3
"""report (gridsel_harness.report): the close-to-best counts, and report.md and
Fig. 8 written for the committed four-case results folder."""

import importlib.util
import io
import os
import re
import unittest
from contextlib import redirect_stdout

from harness_testing import TempDirTest, read

import gridsel_bench as gb
from gridsel_harness.report import analyse

HAVE_MATPLOTLIB = importlib.util.find_spec("matplotlib") is not None


class Report(TempDirTest):
    def test_within_counts(self):
        table = {("p", "k", i): {"class": "ideal", "llvm": (32, 1, 1.0, 0), "lloyd": (1, 1, lm, 0),
                                 "best": (1, 1, 1.0, 0)} for i, lm in enumerate((1.0, 1.04, 1.08, 1.2))}
        an = analyse(table, list(table), ["lloyd"])
        self.assertEqual(an["within"]["lloyd"], (2, 3, 4))
        self.assertEqual(len(an["slower"]), 3)

    def report(self):
        results = self.results_copy()
        with redirect_stdout(io.StringIO()) as out:
            self.assertEqual(gb.main(["report", results]), 0)
        return results, out.getvalue()

    def test_table_and_geomeans_of_the_fixture(self):
        results, _ = self.report()
        md = read(os.path.join(results, "report.md"))
        # Table I, classes in order long, ideal, short: each case's grids and speedups.
        table = [l for l in md.splitlines() if l.startswith("| kernels_l")]
        self.assertEqual(table, [
            "| kernels_l27 | 1048576 | long | (128,3200) | 4.0000 | (256,4096) | 1.818 | (64,8192) | 2.105 |",
            "| kernels_l57 | 1048576 | long | (128,3200) | 2.0000 | (128,3200) | 1.000 | (64,8192) | 2.000 |",
            "| kernels_l12 | 1000 | ideal | (32,32) | 3.0000 | (128,8) | 3.000 | (128,8) | 3.000 |",
            "| kernels_l39 | 64 | short | (32,2) | 0.5000 | (1,64) | 1/1.100 | (64,1) | 1.111 |",
        ])
        self.assertIn(f"| auto | {(4 / 2.2) ** 0.5:.3f} (2) | 3.000 (1) | 1/1.100 (1) | "
                      f"{(4 / 2.2 * 3 / 1.1) ** 0.25:.3f} |", md)
        self.assertIn("| auto | kernels_l39 | 64 | short | (1,64) | (32,2) | 1/1.100 |", md)

    @unittest.skipUnless(HAVE_MATPLOTLIB, "matplotlib is not installed (pip install matplotlib)")
    def test_fig8_has_one_bar_per_case_and_series(self):
        results, out = self.report()
        self.assertIn("fig8.svg and fig8.png", out)
        with open(os.path.join(results, "fig8.png"), "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        svg = read(os.path.join(results, "fig8.svg"))
        bars = re.findall(r'<g id="bar-([a-z]+)-([^"]+)">', svg)
        cases = ["kernels_l27-1048576", "kernels_l57-1048576", "kernels_l12-1000", "kernels_l39-64"]
        self.assertEqual(sorted(bars), sorted((p, c) for p in ("auto", "best") for c in cases))
        # One panel per loop class.
        for title in ("long loops (2 kernels x trip counts)", "ideal loops (1 kernels x trip counts)",
                      "short loops (1 kernels x trip counts)"):
            self.assertIn(title, svg)
        # The same figure gives the same bytes (no date, fixed ids).
        with redirect_stdout(io.StringIO()):
            gb.main(["report", results])
        self.assertEqual(read(os.path.join(results, "fig8.svg")), svg)

    def test_without_matplotlib_the_report_is_still_written(self):
        if HAVE_MATPLOTLIB:
            self.skipTest("matplotlib is installed")
        results, out = self.report()
        self.assertIn("matplotlib is not available: fig8 not drawn", out)
        self.assertTrue(os.path.exists(os.path.join(results, "report.md")))
        self.assertFalse(os.path.exists(os.path.join(results, "fig8.svg")))


if __name__ == "__main__":
    unittest.main()
