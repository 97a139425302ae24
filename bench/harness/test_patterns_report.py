#!/usr/bin/env python3
"""patterns_report.py: which pattern each program of the pattern lists belongs to."""

import os
import tempfile
import unittest

import patterns_report as pr

HEADER = "program\tsizes\tdescription\n"


class PatternOf(unittest.TestCase):
    def test_every_pattern_list_and_its_groups(self):
        with tempfile.TemporaryDirectory() as d:
            with open(os.path.join(d, "suite-patterns.tsv"), "w") as f:
                f.write(HEADER + "red_sum\t1 2 3\tpattern cross-team reduction: sums\n"
                        "ts_heat\t1 2 3\tpattern time stepping: 10 steps\n")
            with open(os.path.join(d, "suite-patterns2.tsv"), "w") as f:
                f.write(HEADER + "tile_t\t1 2 3\tpattern small tiled kernel: blocked transpose\n"
                        "heavy_lu\t1 2 3\tpattern few heavy iterations: N solves\n"
                        "ts_cg\t1 2 3\tpattern time stepping with mid-size cross-team reductions: CG\n"
                        "odd\t1 2 3\ta program without a known pattern\n")
            # Not a pattern list: its programs are no pattern's.
            with open(os.path.join(d, "suite-apps.tsv"), "w") as f:
                f.write(HEADER + "lbm\t1 2 3\tpattern long loop: not read\n")
            self.assertEqual(pr.pattern_of(d), {
                "red_sum": "cross-team reduction",
                "ts_heat": "time stepping",
                "tile_t": "small tiled kernel",
                "heavy_lu": "few heavy iterations",
                "ts_cg": "time stepping",
                "odd": "other",
                "probe_nested_simd": "nested parallelism (probe)",
            })

    def test_the_committed_lists_name_no_program_other(self):
        pat = pr.pattern_of()
        self.assertIn("heavy_dock", pat)
        self.assertIn("gspmd_matvec", pat)
        self.assertEqual([p for p, g in pat.items() if g == "other"], [])


if __name__ == "__main__":
    unittest.main()
