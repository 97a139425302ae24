#!/usr/bin/env python3
"""run and merge (gridsel_harness.runner): resumability, budget stopping and
REPS reduction with a fake program and a fake `gridsel` CLI, and merging run
folders."""

import csv
import gzip
import io
import json
import os
import textwrap
import unittest
from contextlib import redirect_stdout

from harness_testing import MS, TempDirTest, read, write_results

import gridsel_bench as gb
from gridsel_harness.results import load_summary, read_jsonl
from gridsel_harness.summary import summarize_dir


class Merge(TempDirTest):
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
            summarize_dir(into)
        self.assertEqual(read(os.path.join(into, "jobs.jsonl")), first)
        self.assertEqual(len(first.splitlines()), 2)
        table = load_summary(into)
        self.assertEqual(table[("p", "k_l1", 8)]["llvm"][2], 7.0)


FAKE_PROG = textwrap.dedent("""\
    #!/usr/bin/env python3
    # Fake benchmark: one kernel, trip N, cycles through FAKE_SPACE under sweep.
    # With FAKE_TEAMS_REGION set, a `target teams` region instead (trip count 0), which
    # gridsel keeps at LLVM's grid (the space's first point) unless GRIDSEL_TEAMS_REGIONS=change.
    import json, os, sys, time
    n, reps, warm = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    time.sleep(float(os.environ.get("FAKE_SETUP_S", "0")))
    space = json.load(open(os.environ["FAKE_SPACE"]))
    region = bool(os.environ.get("FAKE_TEAMS_REGION"))
    sweeps = os.environ["GRIDSEL_POLICY"] == "sweep" and (
        not region or os.environ.get("GRIDSEL_TEAMS_REGIONS") == "change")
    trip = 0 if region else n
    rows = []
    for i in range(reps + warm):
        lab, t, b = space[i % len(space)] if sweeps else space[0]
        rows.append(f"__omp_offloading_1_2_k_l7,{trip},{lab},{b},{t},{int(os.environ.get('FAKE_NS', '1000'))}")
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


class RunResumeBudget(TempDirTest):
    def setUp(self):
        super().setUp()
        self.bin = os.path.join(self.dir, "bin")
        os.makedirs(self.bin)
        for name, text in (("fake", FAKE_PROG), ("gridsel", FAKE_GRIDSEL), ("gridsel-research", FAKE_GRIDSEL)):
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
        self.env = {"FAKE_SPACE": space, "FAKE_SETUP_S": "0", "FAKE_NS": "1000", "FAKE_TEAMS_REGION": "",
                    "GRIDSEL_TEAMS_REGIONS": ""}
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
        jobs = read_jsonl(os.path.join(out, "jobs.jsonl"))
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
        phases = [r["phase"] for r in read_jsonl(os.path.join(out, "noise.jsonl"))]
        self.assertEqual(phases, ["start", "middle", "end"])

        log2 = self.run_harness(out)
        self.assertIn("3 already done, 0 to do", log2)
        self.assertEqual(len(read_jsonl(os.path.join(out, "jobs.jsonl"))), 3)
        out2 = os.path.join(self.dir, "out2")
        log3 = self.run_harness(out2, "--skip-done-in", out, "--sizes-override", "fake=10,20,40")
        self.assertIn("2 already done, 1 to do", log3)
        self.assertEqual([j["n"] for j in read_jsonl(os.path.join(out2, "jobs.jsonl"))], [40])
        with redirect_stdout(io.StringIO()):
            gb.main(["merge", out, out2, "--into", os.path.join(self.dir, "res")])
            gb.main(["summarize", os.path.join(self.dir, "res"), "--gridsel", os.path.join(self.bin, "gridsel")])
        table = load_summary(os.path.join(self.dir, "res"))
        self.assertEqual(len(table), 4)

    def test_a_change_sweep_is_another_job_and_makes_the_case(self):
        # A teams region swept under the default is kept as given: no case. The same
        # program and size under GRIDSEL_TEAMS_REGIONS=change is a job of its own, not
        # one already done, and once merged its sweep alone makes the case.
        os.environ["FAKE_TEAMS_REGION"] = "1"
        keep, change, res = (os.path.join(self.dir, x) for x in ("keep", "change", "res"))
        self.run_harness(keep, "--noise", "none", "--only", "^fake-10$")
        [j] = read_jsonl(os.path.join(keep, "jobs.jsonl"))
        self.assertEqual((j["teams_regions"], j["pairs"][0]["kept_as_given"]), ("keep", True))

        os.environ["GRIDSEL_TEAMS_REGIONS"] = "change"
        log = self.run_harness(change, "--noise", "none", "--only", "^fake-10$", "--skip-done-in", keep)
        self.assertIn("0 already done, 1 to do", log)
        [j] = read_jsonl(os.path.join(change, "jobs.jsonl"))
        self.assertEqual((j["teams_regions"], j["pairs"][0]["kept_as_given"]), ("change", False))
        self.assertTrue(os.path.exists(os.path.join(change, "raw", "fake-10-teams-change.csv.gz")))
        log = self.run_harness(os.path.join(self.dir, "again"), "--noise", "none", "--only", "^fake-10$",
                               "--skip-done-in", change)
        self.assertIn("1 already done, 0 to do", log)

        with redirect_stdout(io.StringIO()):
            gb.main(["merge", keep, change, "--into", res])
            summarize_dir(res, quiet=True)
        self.assertEqual(sorted(read_jsonl(os.path.join(res, "jobs.jsonl")), key=lambda j: j["teams_regions"]),
                         read_jsonl(os.path.join(change, "jobs.jsonl")) + read_jsonl(os.path.join(keep, "jobs.jsonl")))
        case = load_summary(res)[("fake", "__omp_offloading_1_2_k_l7", 0)]
        self.assertEqual((case["llvm"][:2], case["lloyd"][:2]), ((32, 1), (96, 1)))
        # LLVM's grid from the sweep's cycle alone: 3 timed samples, not 3 + the 12 kept ones.
        with open(os.path.join(res, "points.csv"), newline="") as f:
            llvm = [r for r in csv.DictReader(f) if r["label"] == "llvm"]
        self.assertEqual([r["n_samples"] for r in llvm], ["3"])

    def test_budget_stops_before_a_job_that_does_not_fit(self):
        out = os.path.join(self.dir, "out")
        os.environ["FAKE_NS"] = str(100 * MS)     # 100 ms per launch: a sweep needs ~4 s
        os.environ["FAKE_SETUP_S"] = "0.2"
        log = self.run_harness(out, "--noise", "none", budget="3")
        self.assertIn("stopped cleanly: fake-10 needs", log)
        self.assertEqual(read_jsonl(os.path.join(out, "jobs.jsonl")), [])
        self.assertEqual(len(read_jsonl(os.path.join(out, "pilots.jsonl"))), 1)
        # The next slice reuses the pilot and, with budget, does the work.
        log = self.run_harness(out, "--noise", "none", budget="60")
        self.assertEqual(len(read_jsonl(os.path.join(out, "pilots.jsonl"))), 3)
        self.assertEqual(len(read_jsonl(os.path.join(out, "jobs.jsonl"))), 3)

    def test_job_limit_reduces_reps(self):
        out = os.path.join(self.dir, "out")
        os.environ["FAKE_NS"] = str(100 * MS)
        log = self.run_harness(out, "--noise", "none", "--job-timeout-s", "2", "--only", "^fake-10$")
        self.assertIn("REPS reduced 12 ->", log)
        j = read_jsonl(os.path.join(out, "jobs.jsonl"))[0]
        self.assertEqual(j["reps_reduced_from"], 12)
        self.assertLess(j["prog_reps"], 12)


if __name__ == "__main__":
    unittest.main()
