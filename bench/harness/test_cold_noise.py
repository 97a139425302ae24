#!/usr/bin/env python3
"""cold_noise.py: the first launch's excess over the same process's later launches,
and how far a process's noise is shared by its kernels, on small synthetic folders."""

import unittest

from harness_testing import TempDirTest, write_profiles

import cold_noise as cn


class ColdNoise(TempDirTest):
    def write(self, procs):
        write_profiles(self.dir, {key: [(kernel, 100, 8, 128, ns) for kernel, ns in rows]
                                  for key, rows in procs.items()})
        return cn.processes(self.dir)

    def test_first_launch_excess_against_the_rest_of_the_process(self):
        # 10 launches: a first at 150 us, then 100 us; a kernel launched 9 times is left out.
        procs = self.write({("p", 1, "llvm"): [("k", 150_000)] + [("k", 100_000)] * 9 +
                            [("j", 500_000)] + [("j", 100_000)] * 8,
                            ("p", 1, "tune"): [("k", 900_000)] * 10})
        self.assertEqual(sorted(procs), [("p", 1, "llvm")])  # tune runs are not fixed grids
        self.assertEqual(cn.first_launch_excess(procs), [(1.5, 50.0)])

    def test_noise_shared_by_a_process_correlates(self):
        # Each process runs its three kernels at one speed: the deviations move together.
        speed = {1: 1.0, 2: 1.5, 3: 0.8, 4: 1.2}
        procs = self.write({("p", r, "auto"): [(k, int(base * s)) for k, base in
                                               (("a", 100_000), ("b", 30_000), ("c", 7_000))]
                            for r, s in speed.items()})
        corr, n = cn.shared_noise(procs)
        self.assertEqual(n, 12)
        self.assertAlmostEqual(corr, 1.0)

    def test_noise_of_one_kernel_alone_does_not(self):
        # Only kernel a varies; b and c never do, so the others' median does not follow it.
        procs = self.write({("p", r, "auto"): [("a", ns), ("b", 30_000), ("c", 7_000)]
                            for r, ns in ((1, 100_000), (2, 150_000), (3, 80_000), (4, 120_000))})
        corr, n = cn.shared_noise(procs)
        self.assertEqual(n, 12)
        self.assertLess(corr, 0.5)

    def test_cold_ratios_over_every_policys_runs_of_a_grid(self):
        # Four processes launch k first on one grid (two of them under tune), then again:
        # only the first launches count; j on three processes is too few to say.
        procs = self.write({("p", r, pol): [("k", ns), ("k", 10_000)] + [("j", 5_000)] * (r < 4)
                            for r, pol, ns in ((1, "auto", 100_000), (2, "auto", 120_000),
                                               (3, "tune", 80_000), (4, "tune", 100_000))
                            } | {("p", 5, "llvm"): [("x", 1)]})
        # By default the fixed grids' runs only.
        self.assertEqual(sorted(procs), [("p", 1, "auto"), ("p", 2, "auto"), ("p", 5, "llvm")])
        procs = cn.processes(self.dir, ("llvm", "auto", "tune"))
        ratios = cn.cold_ratios(procs)
        self.assertEqual(sorted(ratios), [(r, 100_000) for r in (0.8, 1.0, 1.0, 1.2)])
        # A 100 us median falls in the 50-200 us bucket: median deviation 0.1.
        self.assertEqual([(u, n, round(d, 9)) for u, n, d in cn.noise_by_duration(ratios)],
                         [(200, 4, 0.1)])


if __name__ == "__main__":
    unittest.main()
