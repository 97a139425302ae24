#!/usr/bin/env python3
"""Tests of the measurement harness (stdlib only): summary math on a synthetic
profile, resumability and budget stopping with a fake program and a fake
`gridsel` CLI. Run: python3 -m unittest bench/harness/test_harness.py -v"""

import csv
import gzip
import io
import json
import math
import os
import shutil
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gridsel_bench as gb  # noqa: E402


def read(path):
    with open(path) as f:
        return f.read()


def write_results(root, program, n, pairs, rows, status="ok", warmup_rows=()):
    """A results dir with one job; rows = [(kernel, trip, label, threads, blocks, ns)]."""
    os.makedirs(os.path.join(root, "raw"), exist_ok=True)
    with gzip.open(os.path.join(root, "raw", f"{program}-{n}.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(gb.RAW_HEADER)
        for r in warmup_rows:
            k, t, lab, th, bl, ns = r
            w.writerow([k, t, lab, bl, th, ns, program, n, 1])
        for r in rows:
            k, t, lab, th, bl, ns = r
            w.writerow([k, t, lab, bl, th, ns, program, n, 0])
    rec = {"program": program, "n": n, "status": status, "reps": 3, "pairs": pairs,
           "cycle_lengths": [4], "env": {"gpu": "TestGPU", "driver": "1.0", "commit": "abc",
                                         "date": "2025-01-01T00:00:00+00:00", "llvm": "19.1.7"}}
    gb.append_jsonl(os.path.join(root, "jobs.jsonl"), rec)


MS = 1_000_000  # ns per ms


class SummaryMath(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def test_quantiles_and_spread(self):
        med, p10, p90, spread = gb.describe([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
        self.assertEqual(med, 6)
        self.assertAlmostEqual(p10, 2.0)
        self.assertAlmostEqual(p90, 10.0)
        self.assertAlmostEqual(spread, (10 - 2) / 6 * 100)
        self.assertAlmostEqual(gb.quantile([1.0, 2.0], 0.5), 1.5)
        self.assertAlmostEqual(gb.geomean([2, 8]), 4.0)
        self.assertEqual(gb.fmt_speedup(2.0), "2.000")
        self.assertEqual(gb.fmt_speedup(0.5), "1/2.000")
        self.assertEqual(gb.short_kernel("gemm", "__omp_offloading_fe00_510052_kernel_gemm_l16"), "gemm_l16")

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
            summary, st = gb.summarize_dir(self.dir, gridsel=None)
        self.assertEqual(st["dropped"], 1)
        self.assertEqual(st["kept"], 2)
        with open(os.path.join(self.dir, "summary.csv")) as f:
            self.assertEqual(f.readline().strip(), ",".join(gb.SUMMARY_HEADER))
        table = gb.load_summary(self.dir)
        a = table[("prog", "kA_l10", 1 << 20)]
        self.assertEqual(a["class"], "long")
        self.assertEqual(a["llvm"][:3], (32, 3200, 10.0))  # the 1 ns warmup row is not counted
        self.assertEqual(a["lloyd"][:3], (96, 1056, 5.0))
        self.assertEqual(a["best"][:3], (128, 528, 4.0))
        # spread of llvm: samples 9.9, 10, 10.1 -> p10 9.92, p90 10.08
        self.assertAlmostEqual(a["llvm"][3], 1.6, places=2)
        b = table[("prog", "kB_l20", 16)]
        self.assertEqual(b["best"][:2], (64, 16))
        with open(os.path.join(self.dir, "points.csv")) as f:
            pts = list(csv.DictReader(f))
        self.assertEqual(len(pts), 8)
        self.assertTrue(all(p["n_samples"] == "3" for p in pts))
        self.assertEqual(pts[0]["label"], "llvm")  # policies first, llvm leading

        an = gb.analyse(table, list(table), ["lloyd"])
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

    def test_within_counts(self):
        table = {("p", "k", i): {"class": "ideal", "llvm": (32, 1, 1.0, 0), "lloyd": (1, 1, lm, 0),
                                 "best": (1, 1, 1.0, 0)} for i, lm in enumerate((1.0, 1.04, 1.08, 1.2))}
        an = gb.analyse(table, list(table), ["lloyd"])
        self.assertEqual(an["within"]["lloyd"], (2, 3, 4))
        self.assertEqual(len(an["slower"]), 3)

    def test_ceiling_finds_the_best_single_rule_and_the_target_gap(self):
        # Two long cases (trip 2^20 = 8192 chunks) that both run 2x faster at
        # 64 x 8192 than LLVM, and one ideal case already at its best.
        long1, long2, ideal = ("p", "a", 1 << 20), ("p", "b", 1 << 20), ("p", "c", 1000)
        table = {
            long1: {"class": "long", "llvm": (128, 3200, 2.0, 0), "best": (64, 8192, 1.0, 0)},
            long2: {"class": "long", "llvm": (128, 3200, 4.0, 0), "best": (64, 8192, 2.0, 0)},
            ideal: {"class": "ideal", "llvm": (32, 32, 3.0, 0), "best": (128, 8, 1.0, 0)},
        }
        points = {long1: {(64, 8192): 1.0, (128, 8192): 2.2}, long2: {(64, 8192): 2.0, (32, 4096): 1.9}}
        c = gb.ceiling(table, points, sms=132)
        top = c["rows"][0]
        self.assertEqual((top["threads"], top["cap"]), (64, 8192))
        self.assertAlmostEqual(top["geomean"], 2.0)
        self.assertEqual((top["regressions"], top["within5"], top["missing"]), (0, 2, 0))
        # Every case at its best here, so the best rule reaches 100 % of best.
        self.assertAlmostEqual(c["with_rule"], c["best_all"])
        # (128, 8192) is 10 % slower than llvm on long1 and unmeasured on long2.
        slow = next(r for r in c["rows"] if (r["threads"], r["cap"]) == (128, 8192))
        self.assertEqual((slow["regressions"], slow["missing"]), (1, 1))
        self.assertAlmostEqual(c["oracle"], math.sqrt(2.0 * 4.0 / 1.9))

    def test_live_drops_warmups_and_joins_the_replay(self):
        folder = os.path.join(self.dir, "live")
        os.makedirs(folder)
        k = "__omp_offloading_fe00_1_k_l7"
        # Per process: one warm-up launch (huge) then two timed ones.
        for policy, ns in (("llvm", (200, 210)), ("auto", (100, 105))):
            for rnd in (1, 2):
                with open(os.path.join(folder, f"prog-64-{policy}-{rnd}.csv"), "w") as f:
                    f.write(",".join(gb.PROFILE_HEADER) + "\n")
                    for t in (10**9,) + ns:
                        f.write(f"{k},64,{policy},1,128,{t}\n")
        samples = gb.live_samples(folder)
        self.assertEqual(sorted(ns for ns, _ in samples[("prog", k, 64)]["auto"]), [100, 100, 105, 105])
        self.assertEqual({g for _, g in samples[("prog", k, 64)]["auto"]}, {(128, 1)})
        table = {("prog", k, 64): {"class": "ideal", "llvm": (32, 2, 4.0, 0), "auto": (128, 1, 2.5, 0)}}
        (row,) = gb.live_table(samples, table, ["auto"])
        self.assertAlmostEqual(row["auto_live"], 205 / 102.5)
        self.assertAlmostEqual(row["auto_replay"], 1.6)
        self.assertEqual((row["n_llvm"], row["auto_grid"]), (4, (128, 1)))

    def test_merge_later_wins_and_is_idempotent(self):
        d1, d2, into = (os.path.join(self.dir, x) for x in ("r1", "r2", "res"))
        pairs = [{"kernel": "k_l1", "trip_count": 8, "class": "short"}]
        write_results(d1, "p", 1, pairs, [("k_l1", 8, "llvm", 32, 1, 5 * MS)] * 3)
        write_results(d2, "p", 1, pairs, [("k_l1", 8, "llvm", 32, 1, 7 * MS)] * 3)
        write_results(d2, "q", 2, pairs, [("k_l1", 8, "llvm", 32, 1, 7 * MS)] * 3)
        with redirect_stdout(io.StringIO()):
            gb.main(["merge", d1, d2, "--into", into])
            first = read(os.path.join(into, "jobs.jsonl"))
            gb.main(["merge", d1, d2, "--into", into])
            gb.main(["merge", d1, d2, into, "--into", into])
            gb.summarize_dir(into)
        self.assertEqual(read(os.path.join(into, "jobs.jsonl")), first)
        self.assertEqual(len(first.splitlines()), 2)
        table = gb.load_summary(into)
        self.assertEqual(table[("p", "k_l1", 8)]["llvm"][2], 7.0)


FAKE_PROG = textwrap.dedent("""\
    #!/usr/bin/env python3
    # Fake benchmark: one kernel, trip N, cycles through FAKE_SPACE under sweep.
    import json, os, sys, time
    n, reps, warm = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    time.sleep(float(os.environ.get("FAKE_SETUP_S", "0")))
    space = json.load(open(os.environ["FAKE_SPACE"]))
    pol = os.environ["GRIDSEL_POLICY"]
    rows = []
    for i in range(reps + warm):
        lab, t, b = space[i % len(space)] if pol == "sweep" else space[0]
        rows.append(f"__omp_offloading_1_2_k_l7,{n},{lab},{b},{t},{int(os.environ.get('FAKE_NS', '1000'))}")
    with open(os.environ["GRIDSEL_PROFILE"], "a") as f:
        f.write("kernel,trip_count,policy,blocks,threads,ns\\n" + "\\n".join(rows) + "\\n")
    print(f"gridsel-bench: prog=fake n={n} check=pass max_err=0")
    """)

FAKE_GRIDSEL = textwrap.dedent("""\
    #!/usr/bin/env python3
    import json, os, sys
    space = json.load(open(os.environ["FAKE_SPACE"]))
    if sys.argv[1] == "space":
        print("label,threads,blocks")
        for lab, t, b in space:
            print(f"{lab},{t},{b}")
    else:
        print(json.dumps({"class": "ideal", "threads": 96, "blocks": 2}))
    """)


class RunResumeBudget(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)
        self.bin = os.path.join(self.dir, "bin")
        os.makedirs(self.bin)
        for name, text in (("fake", FAKE_PROG), ("gridsel", FAKE_GRIDSEL)):
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        self.kdir = os.path.join(self.dir, "kernels")
        os.makedirs(self.kdir)
        with open(os.path.join(self.kdir, "suite-test.tsv"), "w") as f:
            f.write("program\tsizes\tdescription\nfake\t10 20 30\tfake\nabsent\t1\tno binary\n")
        space = os.path.join(self.dir, "space.json")
        with open(space, "w") as f:
            json.dump([["llvm", 32, 1], ["lloyd", 96, 1], ["grid", 1, 1], ["grid", 64, 2]], f)
        self.lib = os.path.join(self.dir, "lib.so")
        open(self.lib, "w").close()
        self.env = {"FAKE_SPACE": space, "FAKE_SETUP_S": "0", "FAKE_NS": "1000"}
        self.old = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        self.addCleanup(self.restore)

    def restore(self):
        for k, v in self.old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    def run_harness(self, out, *extra, budget="60"):
        buf = io.StringIO()
        with redirect_stdout(buf):
            gb.main(["run", "--bin-dir", self.bin, "--gridsel", os.path.join(self.bin, "gridsel"),
                     "--lib", self.lib, "--out", out, "--budget-s", budget, "--reps", "3",
                     "--kernels-dir", self.kdir, "--noise", "fake=5", "--noise-reps", "3", *extra])
        return buf.getvalue()

    def test_run_then_resume_skips_done_jobs(self):
        out = os.path.join(self.dir, "out")
        log = self.run_harness(out)
        self.assertIn("skip absent", log)
        jobs = gb.read_jsonl(os.path.join(out, "jobs.jsonl"))
        self.assertEqual([(j["program"], j["n"], j["status"]) for j in jobs],
                         [("fake", 10, "ok"), ("fake", 20, "ok"), ("fake", 30, "ok")])
        j = jobs[0]
        self.assertEqual(j["prog_reps"], 12)  # ceil(3 samples x L=4 / 1 launch per repetition)
        self.assertEqual(j["cycle_lengths"], [4])
        self.assertEqual(j["pairs"][0]["class"], "ideal")
        self.assertEqual(j["pairs"][0]["cycle_mismatches"], 0)
        self.assertEqual(j["pairs"][0]["launches"], 13)
        with gzip.open(os.path.join(out, "raw", "fake-10.csv.gz"), "rt") as f:
            rows = list(csv.DictReader(f))
        self.assertEqual(sum(r["warmup"] == "1" for r in rows), 1)
        self.assertEqual(rows[0]["program"], "fake")
        phases = [r["phase"] for r in gb.read_jsonl(os.path.join(out, "noise.jsonl"))]
        self.assertEqual(phases, ["start", "middle", "end"])

        log2 = self.run_harness(out)
        self.assertIn("3 already done, 0 to do", log2)
        self.assertEqual(len(gb.read_jsonl(os.path.join(out, "jobs.jsonl"))), 3)
        out2 = os.path.join(self.dir, "out2")
        log3 = self.run_harness(out2, "--skip-done-in", out, "--sizes-override", "fake=10,20,40")
        self.assertIn("2 already done, 1 to do", log3)
        self.assertEqual([j["n"] for j in gb.read_jsonl(os.path.join(out2, "jobs.jsonl"))], [40])
        with redirect_stdout(io.StringIO()):
            gb.main(["merge", out, out2, "--into", os.path.join(self.dir, "res")])
            gb.main(["summarize", os.path.join(self.dir, "res"), "--gridsel", os.path.join(self.bin, "gridsel")])
        table = gb.load_summary(os.path.join(self.dir, "res"))
        self.assertEqual(len(table), 4)

    def test_budget_stops_before_a_job_that_does_not_fit(self):
        out = os.path.join(self.dir, "out")
        os.environ["FAKE_NS"] = str(100 * MS)     # 100 ms per launch: a sweep needs ~4 s
        os.environ["FAKE_SETUP_S"] = "0.2"
        log = self.run_harness(out, "--noise", "none", budget="3")
        self.assertIn("stopped cleanly: fake-10 needs", log)
        self.assertEqual(gb.read_jsonl(os.path.join(out, "jobs.jsonl")), [])
        self.assertEqual(len(gb.read_jsonl(os.path.join(out, "pilots.jsonl"))), 1)
        # The next slice reuses the pilot and, with budget, does the work.
        log = self.run_harness(out, "--noise", "none", budget="60")
        self.assertEqual(len(gb.read_jsonl(os.path.join(out, "pilots.jsonl"))), 3)
        self.assertEqual(len(gb.read_jsonl(os.path.join(out, "jobs.jsonl"))), 3)

    def test_job_limit_reduces_reps(self):
        out = os.path.join(self.dir, "out")
        os.environ["FAKE_NS"] = str(100 * MS)
        log = self.run_harness(out, "--noise", "none", "--job-timeout-s", "2", "--only", "^fake-10$")
        self.assertIn("REPS reduced 12 ->", log)
        j = gb.read_jsonl(os.path.join(out, "jobs.jsonl"))[0]
        self.assertEqual(j["reps_reduced_from"], 12)
        self.assertLess(j["prog_reps"], 12)


if __name__ == "__main__":
    unittest.main()
