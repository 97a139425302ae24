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

    def alternating_runs(self, prefix, learned_ns, auto_ns):
        for side in ("odd", "even"):
            prof = ["kernel,trip_count,policy,blocks,threads,ns"]
            ncu = []
            for i in range(12):
                learned = (i % 2 == 1) == (side == "odd") and i > 0
                p, t, b, ns = ("learned", 32, 2112, learned_ns) if learned else ("auto", 64, 8448, auto_ns)
                prof.append(f"{K},1000,{p},{b},{t},1")
                ncu.append((K, t, b, ns))
            self.write(f"app/{prefix}-{side}-r1.csv", "\n".join(prof) + "\n")
            self.write(f"app/{prefix}-{side}-r1.ncu.csv", ncu_csv(ncu))

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


if __name__ == "__main__":
    unittest.main()
