#!/usr/bin/env python3
"""first_launch.py: a configuration's first launches paired with auto's by repetition,
on a small synthetic folder."""

import unittest

from harness_testing import TempDirTest, write_profiles

import first_launch as fl
import learn_report


class FirstLaunch(TempDirTest):
    def write(self, procs):
        write_profiles(self.dir, {key: [(kernel, 2048, blocks, 128, ns) for kernel, blocks, ns in rows]
                                  for key, rows in procs.items()})
        return fl.against_auto(fl.first_launches(learn_report.load_launches(self.dir)))

    def test_a_fixed_cost_pairs_by_repetition_and_only_on_the_same_grid(self):
        procs = {}
        for rep, auto_ns in enumerate([50_000, 40_000, 60_000, 45_000, 55_000, 52_000], 1):
            # Only the first launch of a kernel counts: the second is warm.
            procs[("p", rep, "auto")] = [("k", 16, auto_ns), ("k", 16, 1_000)]
            procs[("p", rep, "tune")] = [("k", 16, auto_ns + 20_000)]
            # Repetition 1 launched another grid: it pairs with nothing.
            procs[("p", rep, "llvm")] = [("k", 64 if rep == 1 else 16, auto_ns - 1_000)]
        rows = {r[2]: r for r in self.write(procs)}
        self.assertEqual(rows["auto"][3], 0)
        self.assertEqual(rows["auto"][8], 51.0)
        _, _, _, n, ratio, diff, slower, p, _ = rows["tune"]
        self.assertEqual((n, diff, slower), (6, 20.0, 6))
        self.assertAlmostEqual(ratio, (20_000 + 51_000) / 51_000, delta=0.01)
        self.assertAlmostEqual(p, 2 / 64)
        _, _, _, n, _, diff, slower, p, _ = rows["llvm"]
        self.assertEqual((n, diff, slower, p), (5, -1.0, 0, 2 / 32))

    def test_the_sign_test_is_two_sided_and_at_most_one(self):
        self.assertEqual(fl.sign_test(0, 0), 1.0)
        self.assertEqual(fl.sign_test(2, 4), 1.0)
        self.assertAlmostEqual(fl.sign_test(12, 12), fl.sign_test(0, 12))
        self.assertAlmostEqual(fl.sign_test(10, 12), 2 * (1 + 12 + 66) / 4096)


if __name__ == "__main__":
    unittest.main()
