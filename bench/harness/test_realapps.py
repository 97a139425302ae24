"""Tests of bench/harness/realapps.py on synthetic runs (no GPU, no upstream program)."""

import csv
import gzip
import json
import os
import shutil
import tempfile
import unittest

import realapps
from gridsel_harness.results import SUMMARY_HEADER

K = "__omp_offloading_fe00_1_main_l10"


def ncu_csv(rows):
    """ncu's --csv output for (kernel, threads, blocks, ns) launches, its preamble first."""
    head = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
            '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"')
    lines = ["==PROF== Connected to process 1", head]
    for i, (k, t, b, ns) in enumerate(rows):
        lines.append(f'"{i}","1","p","h","{k}","1","7","({t}, 1, 1)","({b}, 1, 1)","0","9.0",'
                     f'"Command line profiler metrics","gpu__time_duration.sum","ns","{ns:,}"')
    return "\n".join(lines) + "\n"


class RealappsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="realapps-test-")
        self.runs = os.path.join(self.dir, "runs")
        self.results = os.path.join(self.dir, "results")
        os.makedirs(os.path.join(self.runs, "app"))
        with open(os.path.join(self.runs, "env.txt"), "w") as f:
            f.write("NVIDIA H100 80GB HBM3, 580.159.04\nSun Dec  6 07:28:44 AM UTC 2026\nabc\n")

    def tearDown(self):
        shutil.rmtree(self.dir)

    def write(self, name, text):
        with open(os.path.join(self.runs, name), "w") as f:
            f.write(text)

    def test_a_sweep_run_is_timed_by_ncu_matched_by_grid_not_by_order(self):
        # gridsel forwarded llvm's launch first, then auto's; ncu saw them the other way round
        # (nowait regions): each keeps its own device time. The profile's wall times are not used.
        self.write("runs.csv", 'entry,mode,config,round,rc,check,wall_ms\napp,sweep,"sweep",1,0,pass,10\n')
        prof = ["kernel,trip_count,policy,blocks,threads,ns"]
        launches = [("llvm", 128, 3200), ("auto", 64, 8448)] * 3
        prof += [f"{K},1000,{p},{b},{t},999999" for p, t, b in launches]
        self.write("app/sweep-r1.csv", "\n".join(prof) + "\n")
        ncu = []
        for _ in range(3):
            ncu += [(K, 64, 8448, 100), (K, 128, 3200, 200)]
        self.write("app/sweep-r1.ncu.csv", ncu_csv(ncu))
        jobs = realapps.convert(self.runs, self.results, os.path.join(self.dir, "bin"))
        self.assertEqual(jobs[0]["status"], "ok")
        self.assertEqual(jobs[0]["env"]["gpu"], "NVIDIA H100 80GB HBM3")
        self.assertEqual(jobs[0]["env"]["driver"], "580.159.04")
        self.assertTrue(jobs[0]["method"])
        with gzip.open(os.path.join(self.results, "raw", "app-0.csv.gz"), "rt") as f:
            rows = list(csv.DictReader(f))
        by = {(r["policy"], r["warmup"]): set() for r in rows}
        for r in rows:
            by[(r["policy"], r["warmup"])].add(int(r["ns"]))
        # The first launch of the kernel is its warm-up; every other keeps ncu's time.
        self.assertEqual(by[("llvm", "1")], {200})
        self.assertEqual(by[("llvm", "0")], {200})
        self.assertEqual(by[("auto", "0")], {100})

    def test_a_failed_run_is_left_out_and_fixed_grids_are_grid_points(self):
        self.write("runs.csv", 'entry,mode,config,round,rc,check,wall_ms\n'
                               'app,panel,"auto",1,0,pass,10\napp,panel,"fixed:64,1056",1,0,pass,10\n'
                               'app,panel,"llvm",1,1,fail,10\n')
        for tag, policy, t, b in (("auto-r1", "auto", 128, 3200), ("fixed_64_1056-r1", "fixed:64,1056", 64, 1056),
                                  ("llvm-r1", "llvm", 128, 3200)):
            self.write(f"app/{tag}.csv", f"kernel,trip_count,policy,blocks,threads,ns\n"
                                         f'{K},1000,"{policy}",{b},{t},5000\n')
        jobs = realapps.convert(self.runs, self.results, os.path.join(self.dir, "bin"))
        self.assertEqual(jobs[0]["failed_runs"], ["llvm round 1"])
        with gzip.open(os.path.join(self.results, "raw", "app-0.csv.gz"), "rt") as f:
            rows = list(csv.DictReader(f))
        # Launched once a run: that launch is the sample, not a warm-up.
        self.assertEqual(sorted((r["policy"], r["warmup"]) for r in rows), [("auto", "0"), ("grid", "0")])

    def alternating_runs(self, prefix, learned_ns, auto_ns, ncu=True):
        """Two alternating runs PREFIX-odd and PREFIX-even; timed by ncu (the profile's times
        then meaningless), or by the profile alone."""
        for side in ("odd", "even"):
            prof = ["kernel,trip_count,policy,blocks,threads,ns"]
            timed = []
            for i in range(12):
                learned = (i % 2 == 1) == (side == "odd") and i > 0
                p, t, b, ns = ("learned", 32, 2112, learned_ns) if learned else ("auto", 64, 8448, auto_ns)
                prof.append(f"{K},1000,{p},{b},{t},{1 if ncu else int(ns)}")
                timed.append((K, t, b, int(ns)))
            self.write(f"app/{prefix}-{side}-r1.csv", "\n".join(prof) + "\n")
            if ncu:
                self.write(f"app/{prefix}-{side}-r1.ncu.csv", ncu_csv(timed))

    def summary(self, llvm_ms, auto_ms, best_ms):
        os.makedirs(self.results, exist_ok=True)
        with open(os.path.join(self.results, "summary.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(SUMMARY_HEADER)
            for policy, t, b, ms in (("llvm", 128, 3200, llvm_ms), ("auto", 64, 8448, auto_ms),
                                     ("best", 32, 2112, best_ms)):
                w.writerow(["app", K, 1000, "long", policy, t, b, ms, 1.0])

    def test_retime_replaces_the_sweeps_lucky_best_by_the_speedup_within_one_process(self):
        self.alternating_runs("best", learned_ns=800, auto_ns=1000)
        self.summary(llvm_ms=1.2, auto_ms=1.0, best_ms=0.5)
        found = realapps.retime(self.runs, self.results)
        self.assertAlmostEqual(found[("app", K, 1000)]["speedup"], 1.25)
        with open(os.path.join(self.results, "summary.csv")) as f:
            best = [r for r in csv.DictReader(f) if r["policy"] == "best"][0]
        self.assertAlmostEqual(float(best["median_ms"]), 0.8)
        with open(os.path.join(self.results, "retime.csv")) as f:
            row = list(csv.DictReader(f))[0]
        self.assertEqual((row["store_threads"], row["store_blocks"]), ("32", "2112"))
        self.assertEqual((row["speedup_odd"], row["speedup_even"]), ("1.2500", "1.2500"))

    def test_production_is_auto_by_construction_where_the_store_keeps_autos_grid(self):
        self.summary(llvm_ms=1.2, auto_ms=1.0, best_ms=0.8)
        # A session whose store changed nothing: no learned launch in its runs.
        self.write("runs.csv", 'entry,mode,config,round,rc,check,wall_ms\napp,session,"tune",1,0,pass,2500\n')
        rows = realapps.production(self.runs, self.results)
        self.assertEqual(len(rows), 1)
        self.assertEqual(rows[0][3], "auto's grid")
        self.assertEqual(rows[0][5], "1.0000")
        with open(os.path.join(self.results, "sessions.csv")) as f:
            self.assertEqual(list(csv.DictReader(f))[0]["wall_s"], "2.5")

    def test_production_within_one_process_scales_autos_speedup(self):
        self.summary(llvm_ms=1.2, auto_ms=1.0, best_ms=0.8)
        self.write("runs.csv", 'entry,mode,config,round,rc,check,wall_ms\napp,session,"tune",1,0,pass,2500\n')
        self.alternating_runs("learned", learned_ns=900, auto_ns=1000)
        row = realapps.production(self.runs, self.results)[0]
        self.assertEqual(row[3], "one process")
        self.assertAlmostEqual(float(row[6]), 1.2 / 0.9, places=3)   # LLVM's over production's
        self.assertAlmostEqual(float(row[7]), 1.5, places=3)          # best's

    def assignment_results(self, k2_one_grid_ms):
        """Two kernels of `app`: K (10 launches a run; auto 1.0 ms, occupancy 0.8, best 0.5,
        production 2x auto) and K2 (100; auto 0.1, occupancy 0.2, best 0.1, production auto's)."""
        os.makedirs(self.results, exist_ok=True)
        k2 = "__omp_offloading_fe00_1_main_l20"
        with open(os.path.join(self.results, "jobs.jsonl"), "w") as f:
            f.write(json.dumps({"program": "app", "pairs": [
                {"kernel": K, "trip_count": 1000, "launches_per_run": 10},
                {"kernel": k2, "trip_count": 1000, "launches_per_run": 100}]}) + "\n")
        with open(os.path.join(self.results, "summary.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(SUMMARY_HEADER)
            for kernel, times in ((K, (1.0, 0.8, 0.5)), (k2, (0.1, 0.2, 0.1))):
                for policy, ms in zip(("auto", "occupancy", "best"), times):
                    w.writerow(["app", kernel, 1000, "long", policy, 64, 8448, ms, 1.0])
        with open(os.path.join(self.results, "points.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["program", "kernel", "trip_count", "label", "threads", "blocks", "n_samples",
                        "median_ms", "p10_ms", "p90_ms"])
            for kernel, t, b, ms in ((K, 32, 2112, 0.5), (K, 64, 8448, 1.0), (k2, 32, 2112, k2_one_grid_ms),
                                     (k2, 64, 8448, 0.1), (k2, 128, 64, 0.01)):
                w.writerow(["app", kernel, 1000, "grid", t, b, 3, ms, ms, ms])
        with open(os.path.join(self.results, "production.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(realapps.PRODUCTION_HEADER)
            for kernel, over_auto in ((K, 2.0), (k2, 1.0)):
                w.writerow(["app", kernel, 1000, "one process", 1, over_auto, 1, 1, 1, 1])

    def test_assignment_weighs_each_kernel_by_its_time_per_run(self):
        # Per run: auto 10 + 10 = 20 ms, each kernel's best 5 + 10 = 15, occupancy 8 + 20 = 28,
        # production 5 + 10 = 15; one grid for all, 32x2112, 5 + 12 = 17 (128x64 was not
        # measured for K: no grid of one kernel alone counts).
        self.assignment_results(k2_one_grid_ms=0.12)
        [row] = realapps.assignment(self.results)
        self.assertEqual(row[:2], ["app", 2])
        self.assertEqual(row[4:6], ["32x2112", f"{20 / 17:.4f}"])
        self.assertEqual(row[6:], [f"{20 / 15:.4f}", "0.7500", f"{15 / 28:.4f}", "1.0000"])

    def test_one_grid_for_all_is_the_best_assignment_where_it_is_faster(self):
        self.assignment_results(k2_one_grid_ms=0.05)   # 32x2112: 5 + 5 = 10 ms a run
        [row] = realapps.assignment(self.results)
        self.assertEqual(row[6:], [f"{20 / 10:.4f}", "0.5000", f"{10 / 28:.4f}", f"{10 / 15:.4f}"])

    def test_assignment_within_runs_of_both_stores_timed_by_the_profile(self):
        # Without ncu the profile's own times are read; K's best 1.25x auto, production 1.1x,
        # K2 absent from the runs is left out; production's share is 1.1 / 1.25.
        self.assignment_results(k2_one_grid_ms=0.12)
        self.alternating_runs("best", learned_ns=800, auto_ns=1000, ncu=False)
        self.alternating_runs("learned", learned_ns=1000 / 1.1, auto_ns=1000, ncu=False)
        out = os.path.join(self.dir, "within")
        os.makedirs(out)
        [row] = realapps.assignment(self.results, out, self.runs)
        self.assertEqual((row[1], row[4]), (1, ""))
        self.assertAlmostEqual(float(row[9]), 1.1 / 1.25, places=3)
        self.assertTrue(os.path.exists(os.path.join(out, "assignment.csv")))

    def test_online_compares_each_tune_run_with_the_auto_run_of_its_round(self):
        # Round 1: tune spends one trial of 3 ms over auto's 2 x 1 ms; round 2 settled, as fast.
        self.write("runs.csv", 'entry,mode,config,round,rc,check,wall_ms\n'
                               'app,online,"auto",1,0,pass,10\napp,online,"tune",1,0,pass,12\n'
                               'app,online,"tune",2,0,pass,10\napp,online,"auto",2,0,pass,8\n'
                               'app,online,"tune",3,1,fail,10\napp,online,"auto",3,0,pass,10\n')
        head = "kernel,trip_count,policy,blocks,threads,ns\n"
        rows = {"auto-r1": [("auto", 1_000_000)] * 3, "tune-r1": [("tune", 1_000_000), ("tune-trial", 3_000_000),
                                                                  ("tune", 1_000_000)],
                "auto-r2": [("auto", 1_000_000)] * 3, "tune-r2": [("tune", 1_000_000)] * 3,
                "auto-r3": [("auto", 1_000_000)] * 3}
        for tag, launches in rows.items():
            self.write(f"app/{tag}.csv", head + "".join(f"{K},1000,{p},8448,64,{ns}\n" for p, ns in launches))
        out = os.path.join(self.dir, "online.csv")
        got = realapps.online(self.runs, out)
        # Round 3's tune run failed its check: no ratio for it. Round 1's trial cost 2 ms over the
        # kernel's other launch after the first, of the run's 5 ms; the median launch (1 ms) stands
        # for all three in the median-based ratio. The runs' wall times: 12 / 10 and 10 / 8.
        self.assertEqual(got, [["app", 1, "3.000", "5.000", "1.6667", "1.0000", "1.2000", 1, "0.4000"],
                               ["app", 2, "3.000", "3.000", "1.0000", "1.0000", "1.2500", 0, "0.0000"]])
        with open(out) as f:
            self.assertEqual(next(csv.reader(f)), realapps.ONLINE_HEADER)
        # Kernel by kernel: each run's median launch after the first (round 1's tune run: 3 ms and
        # 1 ms, median 2 ms; round 2's 1 ms), then the median over the passing rounds' runs.
        got = realapps.online_kernels(self.runs, os.path.join(self.dir, "kernels.csv"))
        self.assertEqual(got, [["app", K, 2, "1000.00", "1500.00", "1.5000"]])


if __name__ == "__main__":
    unittest.main()
