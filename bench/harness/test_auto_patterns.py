#!/usr/bin/env python3
"""auto_patterns.py (auto's rule 6 judged leave-one-program-out): the stand-in
for grids the sweep did not measure, the judging of one family member, the
folds' choices and the per-pattern numbers, on small synthetic inputs."""

import math
import unittest

import auto_patterns as ap

EVALUATE = """program,kernel,trip_count,threads,blocks,median_ms
red,k_sum,16777216,32,3168,
red,k_sum,1048576,128,3200,0.25
red,k_far,16777216,32,1000,
red,k_gone,16777216,32,3168,
"""


class ParseEvaluate(unittest.TestCase):
    def test_measured_grids_and_stand_ins(self):
        measured = {
            # 3300 is 4.1 % from 3168, 3000 5.4 %: the nearer one stands in.
            ("red", "k_sum", 16777216): {(32, 3300): 0.5, (32, 3000): 0.6, (64, 3168): 0.1, (32, 4000): 0.05},
            # Only grids more than 10 % away, or of other threads: no stand-in.
            ("red", "k_far", 16777216): {(32, 1200): 0.3, (32, 800): 0.3, (64, 1000): 0.2},
        }
        stand_ins = set()
        grids = ap.parse_evaluate(EVALUATE, measured, stand_ins)
        self.assertEqual(grids, {
            ("red", "k_sum", 16777216): (32, 3168, 0.5),
            ("red", "k_sum", 1048576): (128, 3200, 0.25),
            ("red", "k_far", 16777216): (32, 1000, None),
            ("red", "k_gone", 16777216): (32, 3168, None),
        })
        self.assertEqual(stand_ins, {(("red", "k_sum", 16777216), 32, 3168)})

    def test_the_stand_in_window_is_ten_percent(self):
        at = lambda blocks: ap.parse_evaluate(EVALUATE, {("red", "k_far", 16777216): {(32, blocks): 0.3}},
                                              set())[("red", "k_far", 16777216)][2]
        self.assertEqual(at(1100), 0.3)
        self.assertEqual(at(910), 0.3)
        self.assertIsNone(at(1101))
        self.assertIsNone(at(900))


class Judge(unittest.TestCase):
    def test_slower_cases_geomean_and_missing(self):
        llvm = {"a": 1.0, "b": 1.0, "c": 2.0, "d": 1.0}
        grids = {"a": (32, 1, 0.5), "b": (32, 1, 1.04), "c": (32, 1, None), "d": (32, 1, 1.03)}
        slow, gm, missing = ap.judge(["a", "b", "c", "d"], llvm, grids)
        # b is more than 3 % slower; d is exactly 3 % slower, which does not count.
        self.assertEqual((slow, missing), (1, 1))
        # A case without a time counts as LLVM's speed in the geomean.
        self.assertAlmostEqual(gm, math.exp((math.log(2.0) - math.log(1.04) - math.log(1.03)) / 4))


class ChooseFolds(unittest.TestCase):
    def test_each_program_is_judged_with_the_others_choice(self):
        P, Q, R = ("P", "k", 1), ("Q", "k", 1), ("R", "k", 1)
        moved = [P, Q, R]
        llvm = {pk: 1.0 for pk in moved}
        before = {pk: (128, 3200, 1.0) for pk in moved}
        g = lambda t, times: {pk: (t, 100, ms) for pk, ms in zip(moved, times)}
        family = {
            (32, 1, 0): g(32, (0.5, 0.5, 1.2)),
            (64, 1, 0): g(64, (0.8, 0.8, 0.8)),
            # The same grids as (32, 1, 0) from a higher trip count: ties go to it.
            (32, 1, 1 << 23): g(32, (0.5, 0.5, 1.2)),
            # Unmeasured on Q: out of the folds that train on Q.
            (128, 1, 0): g(128, (0.1, None, 0.1)),
        }
        after, folds, held_missing = ap.choose_folds(moved, llvm, before, family)
        # P held out: (32, *) regress R, (128, 1, 0) lacks Q: 64 threads, no case slower.
        self.assertEqual(folds["P"][0], (64, 1, 0))
        slow, neg_gm, neg_min_trip = folds["P"][1]
        self.assertEqual((slow, neg_min_trip), (0, 0))
        self.assertAlmostEqual(-neg_gm, 1.25)
        self.assertEqual(after[P], (64, 100, 0.8))
        # Q held out: (128, 1, 0) is 10x on P and R, but has no time on Q: Q keeps before's.
        self.assertEqual(folds["Q"][0], (128, 1, 0))
        self.assertEqual(after[Q], before[Q])
        self.assertEqual(held_missing, 1)
        # R held out: 2x on P and Q, the tie broken by the higher trip threshold; R itself regresses.
        self.assertEqual(folds["R"][0], (32, 1, 1 << 23))
        self.assertEqual(after[R], (32, 100, 1.2))
        self.assertEqual(ap.judge(moved, llvm, after)[0], 1)


class PatternRows(unittest.TestCase):
    def test_per_pattern_numbers(self):
        a, b, c = ("red_a", "k", 1), ("red_b", "k", 1), ("gemm", "k", 1)
        cases = [a, b, c]
        pattern = {a: "cross-team reduction", b: "cross-team reduction", c: "older suite"}
        llvm = {a: 1.0, b: 2.0, c: 1.0}
        before = {a: (128, 3200, 1.0), b: (128, 3200, 2.0), c: (128, 3200, 1.05)}
        after = {a: (32, 2112, 0.5), b: (32, 2112, 1.0), c: (128, 3200, 1.05)}
        table = {
            a: {"best": (32, 1, 0.4), "occupancy": (128, 1, 1.1), "forest": (64, 1, 0.5)},
            b: {"best": (32, 1, 1.0), "occupancy": (128, 1, 2.0)},
            c: {"best": (32, 1, 0.5), "occupancy": (128, 1, 1.0), "forest": (64, 1, 2.0)},
        }
        rows = {r["pattern"]: r for r in ap.pattern_rows(cases, pattern, llvm, before, after, table)}
        self.assertEqual(list(rows), ["cross-team reduction", "older suite", "all"])
        red = rows["cross-team reduction"]
        self.assertEqual(red["cases"], 2)
        self.assertAlmostEqual(red["before"], 1.0)
        self.assertAlmostEqual(red["after"], 2.0)
        self.assertAlmostEqual(red["best"], math.sqrt(2.5 * 2.0))
        self.assertAlmostEqual(red["share"], 2.0 / math.sqrt(5.0))
        self.assertEqual((red["slow_before"], red["slow_after"], red["occupancy_slow"]), (0, 0, 1))
        self.assertAlmostEqual(red["occupancy"], math.sqrt(1 / 1.1))
        # The forest only over the cases that have a forest row.
        self.assertEqual(red["forest_cases"], 1)
        self.assertAlmostEqual(red["forest"], 2.0)
        old = rows["older suite"]
        self.assertEqual((old["slow_before"], old["slow_after"]), (1, 1))
        self.assertAlmostEqual(old["after"], 1 / 1.05)
        self.assertAlmostEqual(old["share"], (1 / 1.05) / 2.0)
        everything = rows["all"]
        self.assertEqual((everything["cases"], everything["slow_after"], everything["forest_cases"]), (3, 1, 2))
        self.assertAlmostEqual(everything["after"], (2.0 * 2.0 / 1.05) ** (1 / 3))
        self.assertAlmostEqual(everything["forest"], 1.0)


class BandFamily(unittest.TestCase):
    def test_members_change_only_the_band_and_the_empty_band_competes(self):
        below = 1 << 23
        mid, long_ = ("P", "k", 1 << 20), ("P", "k", 1 << 24)
        shipped = {mid: (128, 3200, 1.0), long_: (32, 2112, 0.5)}
        family = {
            (128, 1, 0): {mid: (128, 792, 0.9), long_: (128, 528, 0.8)},
            # MIN_TRIP at the band's end: nothing left to judge, dropped.
            (64, 1, below): {mid: (128, 3200, 1.0), long_: (64, 1056, 0.7)},
        }
        band = ap.band_family(shipped, family, below)
        self.assertEqual(set(band), {(0, 0, below), (128, 1, 0)})
        self.assertEqual(band[(0, 0, below)], shipped)
        # Below the band's end the member's grid, from it on the shipped one.
        self.assertEqual(band[(128, 1, 0)], {mid: (128, 792, 0.9), long_: (32, 2112, 0.5)})

    def test_the_empty_band_wins_ties_in_the_folds(self):
        below = 1 << 23
        P, Q = ("P", "k", 1 << 20), ("Q", "k", 1 << 20)
        llvm = {P: 1.0, Q: 1.0}
        shipped = {P: (128, 3200, 1.0), Q: (128, 3200, 1.0)}
        # The same times as LLVM's grid: no reason to move, so no band.
        family = ap.band_family(shipped, {(128, 1, 0): {P: (128, 792, 1.0), Q: (128, 792, 1.0)}}, below)
        _, folds, _ = ap.choose_folds([P, Q], llvm, shipped, family)
        self.assertEqual({prog: f[0] for prog, f in folds.items()}, {"P": (0, 0, below), "Q": (0, 0, below)})


if __name__ == "__main__":
    unittest.main()
