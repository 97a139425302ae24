#!/usr/bin/env python3
"""reduction_wave.py: the policies per job and the paired report over `gridsel compare` folders."""

import io
import os
import unittest
from contextlib import redirect_stdout

from harness_testing import REPO, TempDirTest, gridsel_cli, write_profiles

import reduction_wave as rw

PLAN = ("program,n,kernel,trip_count,auto_threads,auto_blocks,rule_threads,rule_blocks\n"
        "ts_cg,512,cg_pap_l66,262144,128,2048,128,792\n"
        "ts_cg,512,cg_init_l42,262144,128,2048,128,792\n"
        "ts_ad,512,ad_bounds_l71,262144,128,2048,128,1320\n"
        "ts_ad,512,ad_mass_l61,262144,128,2048,128,792\n")
PAP, INIT = "__omp_offloading_10_2b_cg_pap_l66", "__omp_offloading_10_2b_cg_init_l42"
BOUNDS, MASS = "__omp_offloading_10_2c_ad_bounds_l71", "__omp_offloading_10_2c_ad_mass_l61"
SM90 = os.path.join(REPO, "bench/build/sm_90")  # the measured programs (git-ignored)


class ReductionWave(TempDirTest):
    def setUp(self):
        super().setUp()
        self.plan = os.path.join(self.dir, "plan.csv")
        with open(self.plan, "w") as f:
            f.write(PLAN)

    def compare_folder(self, prog, runs):
        """OUT/PROG-512 as `gridsel compare` leaves it: runs.csv naming profiles by the GPU
        machine's paths, and the profiles in PROG/, from {(round, policy): [(kernel, blocks, ns)]}."""
        folder = os.path.join(self.dir, "cmp", f"{prog}-512")
        write_profiles(folder, {})  # the folder only
        os.makedirs(os.path.join(folder, prog))
        with open(os.path.join(folder, "runs.csv"), "w") as f:
            f.write("program,round,position,policy,status,exit_code,wall_s,launches,bad_rows,profile,log\n")
            for (rnd, pol), rows in runs.items():
                stem = f"r{rnd}-{pol.replace(':', '_').replace(',', '_')}"
                status = "ok" if rows is not None else "exit 1"
                f.write(f"{prog},{rnd},1,\"{pol}\",{status},0,0.5,3,0,/gpu/out/{prog}-512/{prog}/{stem}.csv,x.log\n")
                if rows is not None:
                    with open(os.path.join(folder, prog, f"{stem}.csv"), "w") as p:
                        p.write("kernel,trip_count,policy,blocks,threads,ns\n")
                        for kernel, blocks, ns in rows:
                            p.write(f"{kernel},262144,{pol},{blocks},128,{ns}\n")

    def test_policies_per_job_name_each_rule_grid_once(self):
        self.assertEqual(rw.job_policies(rw.read_plan(self.plan)),
                         [("ts_cg", 512, "auto,fixed:128,792"), ("ts_ad", 512, "auto,fixed:128,1320,fixed:128,792")])

    def test_report_pairs_the_rounds_and_names_a_case_slower_in_every_one(self):
        cg = {}
        for rnd, (pap_auto, pap_rule) in enumerate([(200, 100), (300, 100)], 1):
            # Medians per run: three launches each, the middle one decides.
            cg[(rnd, "llvm")] = [(PAP, 2048, pap_auto), (INIT, 2048, 100)] * 3
            cg[(rnd, "auto")] = [(PAP, 2048, pap_auto), (INIT, 2048, 100)] * 3
            cg[(rnd, "fixed:128,792")] = [(PAP, 792, pap_rule), (INIT, 792, 120 if rnd == 1 else 80)] * 3
        self.compare_folder("ts_cg", cg)
        ad = {}
        for rnd in (1, 2):
            ad[(rnd, "llvm")] = ad[(rnd, "auto")] = [(BOUNDS, 2048, 100), (MASS, 2048, 100)]
            ad[(rnd, "fixed:128,792")] = [(BOUNDS, 792, 500), (MASS, 792, 110)]
            ad[(rnd, "fixed:128,1320")] = [(BOUNDS, 1320, 100), (MASS, 1320, 500)] if rnd == 1 else None
        self.compare_folder("ts_ad", ad)
        buf = io.StringIO()
        with redirect_stdout(buf):
            rw.main(["report", self.plan, os.path.join(self.dir, "cmp")])
        rows = {line.split(" | ")[2]: line.split(" | ") for line in buf.getvalue().splitlines()
                if line.startswith("| ts_")}
        # pap: rounds 2x and 3x faster, geomean sqrt(6); init: 1/1.2 and 1.25, signs disagree.
        self.assertEqual(rows["cg_pap_l66"][8:11], ["2.449", "2.000-3.000", "2/2"])
        self.assertEqual(rows["cg_init_l42"][8:11], ["1.021", "1/1.200-1.250", "1/2"])
        # bounds' rule grid ran in round 1 only (round 2 failed): one pair; mass 110 vs 100 in both.
        self.assertEqual(rows["ad_bounds_l71"][8:11], ["1.000", "1.000-1.000", "0/1"])
        self.assertEqual(rows["ad_mass_l61"][8:11], ["1/1.100", "1/1.100-1/1.100", "0/2"])
        text = buf.getvalue()
        self.assertIn("slower by more than 3 % in every round: 1 (ts_ad-512 ad_mass_l61)", text)
        self.assertIn("faster by more than 3 % in every round: 1;", text)
        self.assertIn("runs that failed (1): ts_ad-512 round 2 fixed:128,1320: exit 1", text)


class Check(unittest.TestCase):
    def test_cases_whose_rule_grid_auto_does_not_give(self):
        plan = [{"program": "ts_cg", "kernel": "cg_pap_l66", "trip_count": 262144, "rule": (128, 792)},
                {"program": "ts_cg", "kernel": "cg_init_l42", "trip_count": 262144, "rule": (128, 792)},
                {"program": "ts_ad", "kernel": "ad_mass_l61", "trip_count": 262144, "rule": (128, 792)}]
        auto = {("ts_cg", "cg_pap_l66", 262144): (128, 792), ("ts_cg", "cg_init_l42", 262144): (128, 2048)}
        self.assertEqual(rw.unadopted(plan, auto), [(plan[1], (128, 2048)), (plan[2], None)])

    @unittest.skipUnless(os.path.isdir(SM90), "bench/build/sm_90 is not built (bench/build.sh)")
    def test_auto_gives_the_long_loop_plans_rule_grids(self):
        # Rule 8 was adopted from bench/gpu/long-loop-wave.csv (long_loop_rule.py --plan-out):
        # the library's `auto` must give each of its launches the grid measured live.
        out = io.StringIO()
        with redirect_stdout(out):
            rc = rw.main(["check", os.path.join(REPO, "bench/gpu/long-loop-wave.csv"),
                          "--gridsel", gridsel_cli(), "--bin-dir", SM90])
        self.assertEqual((rc, out.getvalue()), (0, ""))


if __name__ == "__main__":
    unittest.main()
