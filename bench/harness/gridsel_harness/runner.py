"""`run`: the sweep (pilot, plan, sweep and noise jobs, resumable within a
time budget) and `merge`: run folders into one results folder.
"""

import csv
import datetime
import glob
import gzip
import json
import math
import os
import re
import shutil
import statistics
import tempfile
import time
from collections import OrderedDict, defaultdict

from .gridsel import Gridsel, research_exe
from .log import log, loud
from .programs import bench_lines, check_line, environment, prog_env, read_profile, run_prog
from .results import (RAW_HEADER, TERMINAL, append_jsonl, done_keys, job_key, jobs_in, read_jsonl, short_kernel,
                      teams_regions)
from .stats import describe

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
KERNELS_DIR = os.path.join(REPO, "bench", "kernels")
SWEEP_WARMUP = 1          # WARMUP argument of the sweep run


# --------------------------------------------------------------------------- run

def load_suite(kernels_dir, overrides):
    """[(program, n)] in suite order: every *.tsv, sizes ascending as listed."""
    jobs = []
    for path in sorted(glob.glob(os.path.join(kernels_dir, "suite-*.tsv"))):
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                prog = row["program"].strip()
                sizes = [int(s) for s in row["sizes"].split()]
                if prog in overrides:
                    sizes = overrides[prog]
                jobs.extend((prog, n) for n in sizes)
    for prog, sizes in overrides.items():  # programs not in a suite (probes) may be named too
        if not any(p == prog for p, _ in jobs):
            jobs.extend((prog, n) for n in sizes)
    return jobs


def parse_overrides(items):
    out = {}
    for item in items or []:
        for part in item.split(";"):
            if not part.strip():
                continue
            prog, _, sizes = part.partition("=")
            if not sizes:
                raise SystemExit(f"--sizes-override: `{part}` is not PROG=N[,N...]")
            out[prog.strip()] = [int(s) for s in re.split(r"[,\s]+", sizes.strip()) if s]
    return out


class Runner:
    def __init__(self, a):
        self.a = a
        self.t0 = time.monotonic()
        self.out = a.out
        os.makedirs(os.path.join(self.out, "raw"), exist_ok=True)
        self.gs = Gridsel(a.gridsel, a.device)
        self.base_env = dict(os.environ)
        self.env_info = environment()
        self.regions = teams_regions(self.base_env)  # part of every job's identity (results.job_key)
        self.run_id = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%S") + f"-{os.getpid()}"
        self.tmp = tempfile.mkdtemp(prefix="gridsel-bench-")
        self.pilots = {(p["program"], p["n"]): p for p in read_jsonl(os.path.join(self.out, "pilots.jsonl"))}
        self.noise_cost = 0.0
        # Sweep time per launch / pilot time per launch, learnt from finished jobs.
        self.slowdown = a.slowdown

    def elapsed(self):
        return time.monotonic() - self.t0

    def left(self):
        return self.a.budget_s - self.elapsed()

    def binary(self, prog):
        return os.path.join(self.a.bin_dir, prog)

    # -- noise
    def noise(self, phase):
        if self.a.noise == "none":
            return
        prog, _, n = self.a.noise.partition("=")
        n = int(n)
        binary = self.binary(prog)
        if not os.path.exists(binary):
            log(f"noise: no {binary}; skipped")
            return
        if self.left() < self.noise_cost + 5 and phase != "start":
            log(f"noise[{phase}]: no budget left; skipped")
            return
        prof = os.path.join(self.tmp, f"noise-{phase}.csv")
        env = prog_env(self.base_env, self.a.lib, "llvm", prof)
        rc, wall, text = run_prog([binary, str(n), str(self.a.noise_reps), "2"], env,
                                  min(self.a.job_timeout_s, max(self.left(), 10)),
                                  os.path.join(self.tmp, "noise.out"))
        self.noise_cost = max(self.noise_cost, wall)
        rows = read_profile(prof)
        os.remove(prof) if os.path.exists(prof) else None
        per = defaultdict(list)
        for r in rows:
            per[(r["kernel"], r["trip_count"])].append(r["ns"] / 1e6)
        kernels = []
        for (k, t), xs in per.items():
            xs = xs[2:]  # the two warmup launches
            if xs:
                med, p10, p90, spread = describe(xs)
                kernels.append({"kernel": k, "trip_count": t, "n_samples": len(xs), "median_ms": med,
                                "p10_ms": p10, "p90_ms": p90, "spread_pct": spread})
        ok = rc == 0 and "check=pass" in check_line(text)
        rec = {"run_id": self.run_id, "phase": phase, "program": prog, "n": n, "policy": "llvm",
               "reps": self.a.noise_reps, "wall_s": round(wall, 3), "status": "ok" if ok else "failed",
               "kernels": kernels, "env": self.env_info}
        append_jsonl(os.path.join(self.out, "noise.jsonl"), rec)
        meds = ", ".join(f"{short_kernel(prog, k['kernel'])} {k['median_ms']:.4f} ms "
                         f"(spread {k['spread_pct']:.1f} %)" for k in kernels)
        log(f"noise[{phase}] {prog} {n}: {meds or 'no launches'} in {wall:.1f} s"
            + ("" if ok else f"  FAILED rc={rc}: {check_line(text) or text[-300:]}"))

    # -- pilot
    def pilot(self, prog, n):
        if (prog, n) in self.pilots:
            return self.pilots[(prog, n)], False
        prof = os.path.join(self.tmp, f"pilot-{prog}-{n}.csv")
        if os.path.exists(prof):
            os.remove(prof)
        env = prog_env(self.base_env, self.a.lib, "llvm", prof)
        limit = min(self.a.job_timeout_s, self.left() - self.noise_cost)
        if limit <= 1:
            return None, True
        rc, wall, text = run_prog([self.binary(prog), str(n), "1", "0"], env, limit,
                                  os.path.join(self.tmp, "pilot.out"))
        if rc is None and limit < self.a.job_timeout_s:
            return None, True  # killed by the budget, not by the job's limit: retry next slice
        rows = read_profile(prof)
        counts, kern_ns = OrderedDict(), 0
        for r in rows:
            key = (r["kernel"], r["trip_count"])
            counts[key] = counts.get(key, 0) + 1
            kern_ns += r["ns"]
        p = {"program": prog, "n": n, "rc": rc, "wall_s": round(wall, 3), "kernel_s": kern_ns / 1e9,
             "check": check_line(text), "pairs": [[k, t, c] for (k, t), c in counts.items()],
             "tail": "" if rc == 0 else text[-2000:]}
        append_jsonl(os.path.join(self.out, "pilots.jsonl"), p)
        self.pilots[(prog, n)] = p
        return p, False

    # -- one job
    def plan(self, prog, p):
        """Cycle lengths, classes and program REPS for the sweep of one job."""
        binary = self.binary(prog)
        pairs, reps_needed = [], 1
        for kernel, trip, count in p["pairs"]:
            pts = self.gs.space(binary, kernel, trip)
            try:
                cls = self.gs.select(binary, kernel, trip)["class"]
            except (RuntimeError, KeyError, json.JSONDecodeError) as e:
                cls = "unknown"
                log(f"  class of {kernel} trip {trip}: {e}")
            L = len(pts)
            reps_needed = max(reps_needed, math.ceil(self.a.reps * L / count))
            pairs.append({"kernel": kernel, "trip_count": trip, "launches_per_rep": count,
                          "cycle_length": L, "class": cls,
                          "policies": {lab: [t, b] for lab, t, b in pts if lab != "grid"}})
        return pairs, reps_needed

    def estimate(self, p, prog_reps):
        setup = max(p["wall_s"] - p["kernel_s"], 0.0)
        per_rep = p["kernel_s"] * self.slowdown
        return setup + (prog_reps + SWEEP_WARMUP) * per_rep, setup, per_rep

    def key(self, prog, n):
        return job_key(prog, n, self.regions)

    def run_job(self, prog, n, p, pairs, prog_reps, reduced_from):
        key = self.key(prog, n)
        binary = self.binary(prog)
        prof = os.path.join(self.tmp, f"{key}.csv")
        if os.path.exists(prof):
            os.remove(prof)
        env = prog_env(self.base_env, self.a.lib, "sweep", prof)
        limit = min(self.a.job_timeout_s, self.left())
        rc, wall, text = run_prog([binary, str(n), str(prog_reps), str(SWEEP_WARMUP)], env, limit,
                                  os.path.join(self.tmp, f"{key}.out"))
        budget_kill = rc is None and limit < self.a.job_timeout_s
        rows = read_profile(prof)
        chk = check_line(text)
        if rc is None:
            status = "interrupted" if budget_kill else "timeout"
        elif rc == 0 and "check=pass" in chk:
            status = "ok"
        elif "check=FAIL" in chk:
            status = "check_failed"
        else:
            status = "failed"
        # Mark warmup launches and check the cycle against `gridsel-research space`.
        info = {(q["kernel"], q["trip_count"]): q for q in pairs}
        seen = defaultdict(int)
        mismatch = defaultdict(int)
        unknown_pairs = set()
        raw_path = os.path.join(self.out, "raw", f"{key}.csv.gz")
        tmp_raw = raw_path + ".tmp"
        with gzip.open(tmp_raw, "wt", newline="", compresslevel=9) as f:
            w = csv.writer(f)
            w.writerow(RAW_HEADER)
            for r in rows:
                pk = (r["kernel"], r["trip_count"])
                i = seen[pk]
                seen[pk] += 1
                q = info.get(pk)
                warm = 0
                if q is None:
                    unknown_pairs.add(pk)
                else:
                    warm = int(i < q["launches_per_rep"] * SWEEP_WARMUP)
                    pts = self.gs.space(binary, pk[0], pk[1])
                    if (r["policy"], r["threads"], r["blocks"]) != pts[i % len(pts)]:
                        mismatch[pk] += 1
                w.writerow([r["kernel"], r["trip_count"], r["policy"], r["blocks"], r["threads"], r["ns"],
                            prog, n, warm])
        if budget_kill:
            os.remove(tmp_raw)
            return None, wall, len(rows)
        os.replace(tmp_raw, raw_path)
        for q in pairs:
            pk = (q["kernel"], q["trip_count"])
            q["launches"] = seen.get(pk, 0)
            q["cycle_mismatches"] = mismatch.get(pk, 0)
            # Launches with explicit num_teams/thread_limit are kept as given (label llvm).
            q["kept_as_given"] = q["launches"] > 0 and q["cycle_mismatches"] > 0 and all(
                r["policy"] == "llvm" for r in rows if (r["kernel"], r["trip_count"]) == pk)
        bad = [q for q in pairs if q["cycle_mismatches"] and not q["kept_as_given"]]
        if bad:
            loud(f"{key}: the sweep's launches do not follow `gridsel-research space` for {len(bad)} pair(s), "
                 f"e.g. {bad[0]['kernel']} trip {bad[0]['trip_count']} "
                 f"({bad[0]['cycle_mismatches']} of {bad[0]['launches']} launches)")
        kern_s = sum(r["ns"] for r in rows) / 1e9
        rec = {"program": prog, "n": n, "teams_regions": self.regions, "status": status, "rc": rc, "reps": self.a.reps,
               "prog_reps": prog_reps, "warmup": SWEEP_WARMUP,
               "reps_reduced_from": reduced_from, "wall_s": round(wall, 3), "kernel_s": round(kern_s, 3),
               "launches": len(rows), "check": chk, "bench": bench_lines(text)[:20],
               "cycle_lengths": sorted({q["cycle_length"] for q in pairs}),
               "pairs": pairs, "unknown_pairs": [list(x) for x in sorted(unknown_pairs)],
               "pilot": {"wall_s": p["wall_s"], "kernel_s": p["kernel_s"]},
               "bin_dir": self.a.bin_dir, "binary_size": os.path.getsize(binary),
               "run_id": self.run_id, "env": self.env_info}
        if status != "ok":
            rec["tail"] = text[-3000:]
        append_jsonl(os.path.join(self.out, "jobs.jsonl"), rec)
        if status == "ok" and p["kernel_s"] > 0 and len(rows) > 0:
            pilot_launches = sum(c for _, _, c in p["pairs"])
            ratio = (kern_s / len(rows)) / (p["kernel_s"] / max(pilot_launches, 1))
            self.slowdown = max(self.a.slowdown, min(ratio * 1.2, 1000.0), self.slowdown * 0.5)
        return rec, wall, len(rows)

    def main(self):
        a = self.a
        overrides = parse_overrides(a.sizes_override)
        jobs = load_suite(a.kernels_dir, overrides)
        if a.only:
            rx = re.compile(a.only)
            jobs = [(p, n) for p, n in jobs if rx.search(job_key(p, n)) or rx.fullmatch(p)]
        missing = sorted({p for p, _ in jobs if not os.path.exists(self.binary(p))})
        for p in missing:
            log(f"skip {p}: no binary {self.binary(p)}")
        jobs = [(p, n) for p, n in jobs if p not in missing]
        done = done_keys([self.out] + (a.skip_done_in or []), a.retry_failed)
        todo = [(p, n) for p, n in jobs if self.key(p, n) not in done]
        log(f"gridsel-bench run {self.run_id}: {len(jobs)} jobs, {len(jobs) - len(todo)} already done, "
            f"{len(todo)} to do; budget {a.budget_s:.0f} s, job limit {a.job_timeout_s:.0f} s, "
            f"{a.reps} samples per point; GRIDSEL_TEAMS_REGIONS={self.regions}; GPU {self.env_info['gpu']}")
        if not todo:
            log("nothing to do")
            return 0
        self.noise("start")
        n_done, n_failed, configs_done, launches_done = 0, 0, 0, 0
        job_times = []
        mid_done = False
        stopped = None
        for idx, (prog, n) in enumerate(todo):
            key = self.key(prog, n)
            if self.left() <= self.noise_cost + 2:
                stopped = "budget spent"
                break
            p, budget_stop = self.pilot(prog, n)
            if budget_stop:
                stopped = f"no budget left for the pilot of {key}"
                break
            if p["rc"] != 0 or "check=pass" not in p["check"]:
                loud(f"{key}: PILOT FAILED (rc={p['rc']}) {p['check'] or p['tail'][-400:]}")
                append_jsonl(os.path.join(self.out, "jobs.jsonl"),
                             {"program": prog, "n": n, "teams_regions": self.regions, "status": "pilot_failed",
                              "rc": p["rc"],
                              "check": p["check"], "tail": p["tail"], "run_id": self.run_id,
                              "env": self.env_info, "bin_dir": a.bin_dir})
                n_failed += 1
                continue
            pairs, prog_reps = self.plan(prog, p)
            est, setup, per_rep = self.estimate(p, prog_reps)
            reduced_from = None
            cap = a.job_timeout_s * 0.85
            if est > cap and per_rep > 0:
                fit = int((cap - setup) / per_rep) - SWEEP_WARMUP
                new = max(1, min(prog_reps, fit))
                if new < prog_reps:
                    reduced_from, prog_reps = prog_reps, new
                    est, _, _ = self.estimate(p, prog_reps)
                    log(f"{key}: REPS reduced {reduced_from} -> {prog_reps} to fit the {a.job_timeout_s:.0f} s "
                        f"job limit (pilot {p['kernel_s'] * 1e3:.1f} ms of kernels per repetition, "
                        f"slowdown factor {self.slowdown:.1f})")
            if est > self.left() - self.noise_cost:
                stopped = f"{key} needs ~{est:.0f} s, {self.left() - self.noise_cost:.0f} s left"
                break
            Ls = sorted({q["cycle_length"] for q in pairs})
            log(f"{key}: {len(pairs)} (kernel, trip) pairs, cycle lengths {Ls[:6]}{'...' if len(Ls) > 6 else ''}, "
                f"REPS {prog_reps}, estimate {est:.1f} s")
            rec, wall, nrows = self.run_job(prog, n, p, pairs, prog_reps, reduced_from)
            if rec is None:
                stopped = f"{key} interrupted by the budget (not recorded; redone next time)"
                break
            job_times.append(wall + p["wall_s"])
            n_done += 1
            launches_done += nrows
            configs_done += sum(q["cycle_length"] for q in pairs)
            if rec["status"] != "ok":
                n_failed += 1
                loud(f"{key}: {rec['status'].upper()} (rc={rec['rc']}) {rec['check'] or rec.get('tail', '')[-400:]}")
            left_jobs = len(todo) - idx - 1
            eta = statistics.mean(job_times) * left_jobs
            log(f"[{len(jobs) - len(todo) + idx + 1}/{len(jobs)} jobs] {key} {rec['status']} in {wall:.1f} s "
                f"({nrows} launches); this run: {n_done} jobs, {configs_done} configurations, "
                f"{launches_done} launches (~{configs_done / n_done * len(todo):.0f} configurations in all "
                f"{len(todo)} jobs); elapsed {self.elapsed():.0f} s, budget left {self.left():.0f} s, "
                f"all remaining jobs ~{eta:.0f} s")
            if not mid_done and (self.elapsed() > a.budget_s / 2 or idx + 1 >= len(todo) / 2) and idx + 1 < len(todo):
                self.noise("middle")
                mid_done = True
        if stopped:
            log(f"stopped cleanly: {stopped}")
        self.noise("end")
        recorded = set(jobs_in(self.out))
        remaining = sum(1 for p, n in todo if self.key(p, n) not in recorded)
        log(f"done: {n_done} jobs measured ({n_failed} failed), {launches_done} launches, "
            f"{self.elapsed():.0f} s; {max(remaining, 0)} jobs left for the next run")
        shutil.rmtree(self.tmp, ignore_errors=True)
        return 0


def cmd_run(a):
    for path, what in ((a.gridsel, "--gridsel"), (research_exe(a.gridsel), "--gridsel's gridsel-research"),
                       (a.lib, "--lib")):
        if not os.path.exists(path):
            raise SystemExit(f"{what}: no {path}")
    return Runner(a).main()


# --------------------------------------------------------------------------- merge

def cmd_merge(a):
    into = a.into
    os.makedirs(os.path.join(into, "raw"), exist_ok=True)
    sources = [into] + [d for d in a.dirs if os.path.abspath(d) != os.path.abspath(into)]
    jobs = OrderedDict()
    origin = {}
    for d in sources:
        for key, j in jobs_in(d).items():
            if j.get("status") not in TERMINAL:
                continue
            raw = os.path.join(d, "raw", f"{key}.csv.gz")
            if j["status"] != "pilot_failed" and not os.path.exists(raw):
                continue
            jobs[key] = j
            origin[key] = d
    for key, d in origin.items():
        src = os.path.join(d, "raw", f"{key}.csv.gz")
        dst = os.path.join(into, "raw", f"{key}.csv.gz")
        if os.path.exists(src) and os.path.abspath(src) != os.path.abspath(dst):
            shutil.copyfile(src, dst + ".tmp")
            os.replace(dst + ".tmp", dst)
    with open(os.path.join(into, "jobs.jsonl.tmp"), "w") as f:
        for key in sorted(jobs):
            f.write(json.dumps(jobs[key], sort_keys=True) + "\n")
    os.replace(os.path.join(into, "jobs.jsonl.tmp"), os.path.join(into, "jobs.jsonl"))
    noise = OrderedDict()
    for d in sources:
        for r in read_jsonl(os.path.join(d, "noise.jsonl")):
            noise[(r["run_id"], r["phase"])] = r
    with open(os.path.join(into, "noise.jsonl.tmp"), "w") as f:
        for k in sorted(noise):
            f.write(json.dumps(noise[k], sort_keys=True) + "\n")
    os.replace(os.path.join(into, "noise.jsonl.tmp"), os.path.join(into, "noise.jsonl"))
    per_src = defaultdict(int)
    for d in origin.values():
        per_src[d] += 1
    log(f"merged {len(jobs)} jobs into {into} ({', '.join(f'{v} from {k}' for k, v in per_src.items())}); "
        f"{len(noise)} noise runs")
    return 0


def add_commands(sub):
    r = sub.add_parser("run", help="sweep the suites (resumable, budgeted)")
    r.add_argument("--bin-dir", required=True)
    r.add_argument("--gridsel", default="target/release/gridsel")
    r.add_argument("--lib", default="target/release/libgridsel.so")
    r.add_argument("--out", required=True)
    r.add_argument("--budget-s", type=float, default=480)
    r.add_argument("--reps", type=int, default=5, help="samples per grid point")
    r.add_argument("--only", help="regex over PROGRAM-N (or the full program name)")
    r.add_argument("--skip-done-in", action="append", default=[], metavar="DIR")
    r.add_argument("--job-timeout-s", type=float, default=120)
    r.add_argument("--sizes-override", action="append", metavar="PROG=N[,N]",
                   help="e.g. gemm=64 (repeatable, or ';'-separated)")
    r.add_argument("--kernels-dir", default=KERNELS_DIR)
    r.add_argument("--device", default="h100", help="device preset for gridsel-research space and gridsel select")
    r.add_argument("--noise", default="gemm=1024", help="PROG=N for the noise job, or none")
    r.add_argument("--noise-reps", type=int, default=20)
    r.add_argument("--slowdown", type=float, default=3.0,
                   help="assumed sweep time per launch over LLVM's, for estimates (learnt as jobs finish)")
    r.add_argument("--retry-failed", action="store_true", help="redo jobs recorded as failed")
    r.set_defaults(fn=cmd_run)

    m = sub.add_parser("merge", help="merge run dirs (later ones win)")
    m.add_argument("dirs", nargs="+")
    m.add_argument("--into", required=True)
    m.set_defaults(fn=cmd_merge)
