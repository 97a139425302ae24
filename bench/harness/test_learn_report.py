#!/usr/bin/env python3
"""learn_report.py (tune's learning across runs, from a bench/gpu/learn.sh
folder): per-run sums over launches and trip counts, the cases kept, the
best seen, geomeans, share of best, per-run counts and the late slow runs,
on a small synthetic folder."""

import math
import os
import unittest
from contextlib import redirect_stdout
import io

from harness_testing import TempDirTest, read, read_csv, write_profiles

import learn_report as lr

ROUNDS = [1, 2, 3, 4, 5]
# Per case, policy and round: the run's time (ns), the sum of its launches.
A = {"llvm": [100, 110, 90, 100, 100], "auto": [80, 80, 88, 80, 80], "tune": [120, 70, 75, 70, 70]}
B = {"llvm": [200] * 5, "auto": [250] * 5, "tune": [200, 210, 190, 190, 220]}


def runs():
    """load()'s shape: {(program, round, policy): {(kernel,): [ns of each launch]}}. Case A's
    runs are split over two launches; a kernel with no tune run and one with no llvm run."""
    out = {}
    for i, r in enumerate(ROUNDS):
        for pol in ("llvm", "auto", "tune"):
            a = A[pol][i]
            out[("p1", r, pol)] = {("ka",): [a - 40, 40], ("kb",): [B[pol][i]]}
            if pol != "tune":
                out[("p2", r, pol)] = {("kc",): [5]}
            if pol != "llvm":
                out[("p2", r, pol)] = {("kd",): [7]}
    return out


class Numbers(unittest.TestCase):
    def setUp(self):
        self.table = lr.case_table(runs())
        self.s = lr.summarize(self.table, ROUNDS)

    def test_case_table_sums_each_runs_launches(self):
        self.assertEqual(sorted(self.table), [("p1", "ka"), ("p1", "kb")])
        self.assertEqual(self.table[("p1", "ka")]["llvm"], dict(zip(ROUNDS, A["llvm"])))
        self.assertEqual(self.table[("p1", "kb")]["tune"], dict(zip(ROUNDS, B["tune"])))

    def test_medians_best_and_geomeans(self):
        s = self.s
        self.assertEqual(s["base"][("p1", "ka")], {"llvm": 100, "auto": 80})
        # best: the fastest of llvm's and auto's medians and every tune run.
        self.assertEqual(s["best"], {("p1", "ka"): 70, ("p1", "kb"): 190})
        self.assertAlmostEqual(s["g_auto"], 1.0)  # 1.25x on ka, 1/1.25 on kb
        self.assertAlmostEqual(s["g_best"], math.sqrt(100 / 70 * 200 / 190))
        self.assertEqual(sorted(s["noise"]), [0.0, 0.2])

    def test_per_run_rows(self):
        rows = {r: rest for r, *rest in self.s["per_run"]}
        self.assertEqual(sorted(rows), ROUNDS)
        g, near, slow, n, gpu = rows[1]
        self.assertAlmostEqual(g, math.sqrt(100 / 120 * 200 / 200))
        # ka at 120 is neither within 5 % of 70 nor within 3 % of llvm; kb at 200 is both.
        self.assertEqual((near, slow, n), (1, 1, 2))
        self.assertAlmostEqual(gpu, 320 / 330 - 1)
        self.assertEqual(rows[2][1:4], [1, 1, 2])  # kb at 210: > 3 % slower, 190/210 < 0.95
        self.assertEqual(rows[3][1:4], [1, 0, 2])  # ka at 75: 70/75 < 0.95
        self.assertEqual(rows[4][1:4], [2, 0, 2])
        self.assertAlmostEqual(rows[4][4], 260 / 330 - 1)
        share = rows[4][0] / self.s["g_best"]
        self.assertAlmostEqual(share, math.sqrt(100 / 70 * 200 / 190) / self.s["g_best"])
        self.assertAlmostEqual(share, 1.0)

    def test_autos_own_runs_against_its_median(self):
        # auto's run 3 took 88 + 250 against its medians' 80 + 250; the other runs, the medians.
        self.assertEqual(sorted(self.s["auto_noise"]), ROUNDS)
        self.assertAlmostEqual(self.s["auto_noise"][3][1], 338 / 330 - 1)
        self.assertAlmostEqual(self.s["auto_noise"][3][0], math.sqrt(100 / 88 * 200 / 250))
        self.assertAlmostEqual(self.s["auto_noise"][1][1], 0.0)

    def test_late_slow_runs_from_run_5(self):
        # ka's run 1 (120) is slower than llvm too, but only runs from 5 on count.
        self.assertEqual(self.s["late"], {("p1", "kb"): [5]})


G_LLVM, G_AUTO, G_MOVE = (128, 3200), (128, 1600), (64, 3200)


def launches():
    """load_launches()'s shape. Kernel "ka" runs once per process (judged by first launches);
    "kb" three times (judged by the later ones, the choice being the run's last launch)."""
    out = {}
    for r in (1, 2, 3):
        out[("p", r, "llvm")] = [("ka", 10, G_LLVM, 100), ("kb", 5, G_LLVM, 999), ("kb", 5, G_LLVM, 50),
                                 ("kb", 5, G_LLVM, 50)]
        out[("p", r, "auto")] = [("ka", 10, G_AUTO, 80), ("kb", 5, G_AUTO, 999), ("kb", 5, G_AUTO, 40),
                                 ("kb", 5, G_AUTO, 40)]
    # tune: ka auto, then the move (60, 64), then back on auto; kb ends on the move, then llvm's grid.
    out[("p", 1, "tune")] = [("ka", 10, G_AUTO, 82), ("kb", 5, G_AUTO, 999), ("kb", 5, G_AUTO, 40),
                             ("kb", 5, G_MOVE, 30)]
    out[("p", 2, "tune")] = [("ka", 10, G_MOVE, 60), ("kb", 5, G_MOVE, 999), ("kb", 5, G_MOVE, 30),
                             ("kb", 5, G_MOVE, 30)]
    out[("p", 3, "tune")] = [("ka", 10, G_MOVE, 64), ("kb", 5, G_MOVE, 999), ("kb", 5, G_MOVE, 30),
                             ("kb", 5, G_LLVM, 50)]
    # Each launch labelled with its policy, as the profile does.
    return {key: [row + (key[2],) for row in rows] for key, rows in out.items()}


class Choices(unittest.TestCase):
    def test_each_run_is_scored_by_its_grids_median(self):
        j = lr.judge_choices(launches())
        self.assertEqual(j["cases"], 2)
        # ka: llvm 100, auto median(80, 80, 80, 82) = 80, move median(60, 64) = 62 (best).
        # kb, later launches only: llvm 50, auto 40, move 30 (best).
        self.assertAlmostEqual(j["g_auto"], math.sqrt(100 / 80 * 50 / 40))
        self.assertAlmostEqual(j["g_best"], math.sqrt(100 / 62 * 50 / 30))
        self.assertAlmostEqual(j["auto_share"], math.sqrt(62 / 80 * 30 / 40))
        self.assertEqual(j["auto_slow"], 0)
        self.assertEqual(j["auto_far"], 2)  # 62/80 and 30/40
        rows = {r: rest for r, *rest in j["per_run"]}
        g, share, near, slow, worse, on_auto, n = rows[1]
        # Run 1: ka on auto's grid (its first launch), kb on the move (its last).
        self.assertAlmostEqual(g, math.sqrt(100 / 80 * 50 / 30))
        self.assertEqual((near, slow, worse, on_auto, n), (1, 0, 0, 1, 2))
        g, share, near, slow, worse, on_auto, n = rows[2]
        self.assertAlmostEqual(share, 1.0)
        self.assertEqual((near, on_auto), (2, 0))
        # Run 3: kb ended on llvm's grid: 25 % slower than auto's, not slower than llvm's.
        g, share, near, slow, worse, on_auto, n = rows[3]
        self.assertAlmostEqual(share, math.sqrt(30 / 50))
        self.assertEqual((near, slow, worse), (1, 0, 1))
        # ka within 95 % of its best from run 2 on; kb not at the last run.
        self.assertEqual(j["settled_from"], {("p", "ka", 10): 2, ("p", "kb", 5): math.inf})
        self.assertEqual(j["rechecks"], 0)

    def test_a_planned_recheck_is_spent_but_not_a_relapse(self):
        data = launches()
        # Run 3 re-checks ka's runner-up, auto's grid, and kb's last launch is a re-check too;
        # run 4 is back on the move.
        data[("p", 4, "tune")] = data[("p", 3, "tune")][:3]
        data[("p", 3, "tune")][0] = ("ka", 10, G_AUTO, 81, lr.RECHECK_LABEL)
        data[("p", 3, "tune")][3] = ("kb", 5, G_AUTO, 40, lr.RECHECK_LABEL)
        j = lr.judge_choices(data)
        # ka: auto's grid in run 1 (62/80 of best), the move from run 2 on but for the re-check.
        self.assertEqual(j["settled_from"][("p", "ka", 10)], 2)
        self.assertEqual(j["rechecks"], 1)
        rows = {r: rest for r, *rest in j["per_run"]}
        # Run 3 pays ka's re-check on auto's grid; kb's choice is its last other launch, the move.
        g, share, near, slow, worse, on_auto, n = rows[3]
        self.assertAlmostEqual(share, math.sqrt(62 / 80))
        self.assertEqual((near, on_auto), (1, 1))


class HeldOut(unittest.TestCase):
    def test_a_lucky_best_is_timed_on_the_other_half(self):
        # One case, rounds 1-4; auto's grid "a" always 100; "m" won the odd rounds by luck
        # (80) and lost the even ones (120); tune's last choice is "a".
        by_round = {"c": {"a": [(r, 100) for r in (1, 1, 2, 2, 3, 3, 4, 4)],
                          "m": [(1, 80), (3, 80), (2, 120), (4, 120)]}}
        h = lr.held_out_best(by_round, ["c"], {"c": "a"}, {"c": "a"})
        # Odd half chooses m (80 against 100), timed on the even half: m 120, auto 100.
        # Even half chooses a (m 120 there), timed on the odd half: a 100 against itself.
        self.assertEqual((h["halves"], h["kernels"]), (2, 1))
        self.assertAlmostEqual(h["auto_in"], math.sqrt(80 / 100 * 1.0))
        self.assertAlmostEqual(h["auto_out"], math.sqrt(120 / 100 * 1.0))
        self.assertEqual((h["auto_far_in"], h["auto_far_out"]), (1, 0))
        self.assertAlmostEqual(h["tune_out"], h["auto_out"])

    def test_case_halves_without_two_launches_of_each_grid_are_left_out(self):
        by_round = {"c": {"a": [(1, 100), (3, 100), (2, 100)], "m": [(1, 80), (3, 80), (2, 70), (4, 70)]}}
        h = lr.held_out_best(by_round, ["c"], {"c": "a"}, {"c": "m"})
        self.assertEqual(h["halves"], 0)


class Folder(TempDirTest):
    def write(self):
        # Each launch at its own trip count: a case is the kernel over all of them.
        write_profiles(self.dir, {key: [(kernel, 1000 * (i + 1), 8, 128, ns)
                                        for (kernel,), launches in cases.items()
                                        for i, ns in enumerate(launches)]
                                  for key, cases in runs().items()})
        with open(os.path.join(self.dir, "runs.csv"), "w") as f:
            f.write("round,program,n,policy,rc,check,ms\n")
            for r in ROUNDS:
                for pol in ("llvm", "auto", "tune"):
                    f.write(f"{r},p1,64,{pol},0,pass,1\n")
            f.write("1,p2,64,tune,1,FAIL,1\n")

    def test_learn_md_and_cases_csv(self):
        self.write()
        self.assertEqual(lr.load(self.dir)[("p1", 1, "llvm")][("ka",)], [60, 40])
        with redirect_stdout(io.StringIO()):
            self.assertEqual(lr.main([self.dir, "--title", "synthetic"]), 0)
        md = read(os.path.join(self.dir, "learn.md"))
        self.assertIn("# synthetic", md)
        self.assertIn("- Runs: 16 (2 programs x 5 rounds x llvm, auto, tune); failed or unchecked: 1.", md)
        self.assertIn("varies by 10.0 % (max-min over the rounds, median over cases; p90 0.0 %)", md)
        self.assertIn("- Cases (program, kernel): 2.", md)
        self.assertIn("llvm = 1.000; auto 1.000x; best seen 1.226x (auto = 81.5 % of best).", md)
        self.assertIn("| 1 | 0.913x | 74.4 % | 1/2 | 1 | -3.0 % |", md)
        self.assertIn("| 4 | 1.226x | 100.0 % | 2/2 | 0 | -21.2 % |", md)
        self.assertIn("| p1 | kb | 0.000 | [5] |", md)
        rows = read_csv(os.path.join(self.dir, "learn-cases.csv"))
        self.assertEqual([(r["kernel"], r["llvm_ns"], r["auto_ns"], r["best_ns"], r["tune_run5_ns"]) for r in rows],
                         [("ka", "100", "80", "70", "70"), ("kb", "200", "250", "190", "220")])

    def test_the_first_rounds_alone_are_printed_not_written(self):
        self.write()
        out = io.StringIO()
        with redirect_stdout(out):
            self.assertEqual(lr.main([self.dir, "--rounds", "3"]), 0)
        md = out.getvalue()
        # Rounds 4 and 5 are left out, of the runs and of the table; p2's failed run (round
        # 1) stays in.
        self.assertIn("- Runs: 10 (2 programs x 3 rounds x llvm, auto, tune); failed or unchecked: 1.", md)
        self.assertNotIn("| 4 |", md)
        self.assertFalse(os.path.exists(os.path.join(self.dir, "learn.md")))


if __name__ == "__main__":
    unittest.main()
