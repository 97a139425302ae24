#!/usr/bin/env python3
"""gridsel measurement harness: sweep launch grids, summarize, report.

Subcommands (see bench/README.md, "## Harness"):
  run        pilot + sweep every (program, size) of the suites, resumable, budgeted
  merge      merge run directories into one results directory (later ones win)
  summarize  RESULTS/summary.csv (policies and best grid per kernel+trip) and points.csv
  report     RESULTS/report.md (Table I, geomeans) and RESULTS/fig8.svg/.png
  live       RESULTS/live-check.md: whole-program runs per policy against the replay
  best-cache a GRIDSEL_CACHE file of the sweep's best grids, for live runs of `best`
  ceiling    RESULTS/static-ceiling.md: how far any static long-loop rule can go
  crosscheck profile vs. ncu device time for one program under a fixed grid

The run / merge / summarize / report paths use the standard library only; the
plot uses matplotlib when it is importable.
"""

import argparse
import csv
import datetime
import glob
import gzip
import io
import json
import math
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import OrderedDict, defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KERNELS_DIR = os.path.join(REPO, "bench", "kernels")
PROFILE_HEADER = ["kernel", "trip_count", "policy", "blocks", "threads", "ns"]
RAW_HEADER = PROFILE_HEADER + ["program", "n", "warmup"]
SUMMARY_HEADER = ["program", "kernel", "trip_count", "class", "policy", "threads", "blocks",
                  "median_ms", "spread_pct"]
POINTS_HEADER = ["program", "kernel", "trip_count", "label", "threads", "blocks", "n_samples",
                 "median_ms", "p10_ms", "p90_ms"]
CLASS_ORDER = ["long", "ideal", "short"]
SWEEP_WARMUP = 1          # WARMUP argument of the sweep run
TERMINAL = ("ok", "timeout", "check_failed", "failed", "pilot_failed")
LLVM_VERSION = os.environ.get("GRIDSEL_LLVM_VERSION", "19.1.7")


def log(msg):
    print(msg, flush=True)


def loud(msg):
    bar = "!" * 78
    print(f"{bar}\n!!! {msg}\n{bar}", flush=True)


# --------------------------------------------------------------------------- stats

def quantile(sorted_xs, q):
    """Linear interpolation between closest ranks (numpy's default)."""
    if not sorted_xs:
        raise ValueError("quantile of nothing")
    pos = q * (len(sorted_xs) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def describe(xs):
    """(median, p10, p90, spread_pct) of a list of numbers."""
    s = sorted(xs)
    med = statistics.median(s)
    p10, p90 = quantile(s, 0.1), quantile(s, 0.9)
    spread = (p90 - p10) / med * 100.0 if med > 0 else 0.0
    return med, p10, p90, spread


def geomean(xs):
    xs = [x for x in xs if x and x > 0]
    if not xs:
        return float("nan")
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def fmt_speedup(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3f}" if x >= 1.0 else f"1/{1.0 / x:.3f}"


# --------------------------------------------------------------------------- suite

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


def job_key(prog, n):
    return f"{prog}-{n}"


def short_kernel(program, kernel):
    m = re.search(r"_l(\d+)$", kernel)
    return f"{program}_l{m.group(1)}" if m else f"{program}:{kernel}"


# --------------------------------------------------------------------------- results dirs

def read_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass  # a line cut by a kill; ignore
    return out


def append_jsonl(path, obj):
    with open(path, "a") as f:
        f.write(json.dumps(obj, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def jobs_in(d):
    """{key: last job record} of a results/run directory."""
    out = OrderedDict()
    for j in read_jsonl(os.path.join(d, "jobs.jsonl")):
        out[job_key(j["program"], j["n"])] = j
    return out


def done_keys(dirs, retry_failed):
    done = {}
    for d in dirs:
        for key, j in jobs_in(d).items():
            if j.get("status") not in TERMINAL:
                continue
            if retry_failed and j["status"] != "ok":
                continue
            raw = os.path.join(d, "raw", f"{key}.csv.gz")
            if j["status"] == "ok" and not os.path.exists(raw):
                continue
            done[key] = d
    return done


# --------------------------------------------------------------------------- processes

def environment():
    gpu, driver = "none", "none"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            first = out.stdout.strip().splitlines()[0]
            gpu, _, driver = (x.strip() for x in first.rpartition(","))
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {
        "gpu": gpu,
        "driver": driver,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": os.environ.get("GRIDSEL_COMMIT", "unknown"),
        "llvm": LLVM_VERSION,
        "host": os.uname().nodename,
        "gridsel_device": os.environ.get("GRIDSEL_DEVICE", ""),
    }


def run_prog(argv, env, timeout_s, stdout_path):
    """Runs argv in its own process group; kills the group at timeout_s.
    Returns (returncode or None when killed, wall seconds, stdout text)."""
    t0 = time.monotonic()
    with open(stdout_path, "w") as out:
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=max(timeout_s, 0.1))
        except subprocess.TimeoutExpired:
            rc = None
            for sig, grace in ((signal.SIGTERM, 3), (signal.SIGKILL, 30)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
    wall = time.monotonic() - t0
    with open(stdout_path, errors="replace") as f:
        text = f.read()
    return rc, wall, text


def check_line(text):
    lines = [l for l in text.splitlines() if l.startswith("gridsel-bench:") and " check=" in l]
    return lines[-1] if lines else ""


def bench_lines(text):
    return [l for l in text.splitlines() if l.startswith("gridsel-bench:")]


def read_profile(path):
    """Rows of a GRIDSEL_PROFILE csv as dicts (header lines repeated by appends are skipped)."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="", errors="replace") as f:
        for rec in csv.reader(f):
            if len(rec) == 7 and rec[2].startswith("fixed:"):
                # gridsel writes the label `fixed:T,B` unquoted: rejoin it.
                rec = rec[:2] + [rec[2] + "," + rec[3]] + rec[4:]
            if len(rec) != 6 or rec[0] == "kernel":
                continue  # header, or a row cut by a kill
            try:
                rows.append({"kernel": rec[0], "trip_count": int(rec[1]), "policy": rec[2],
                             "blocks": int(rec[3]), "threads": int(rec[4]), "ns": int(rec[5])})
            except ValueError:
                continue
    return rows


def prog_env(base, lib, policy, profile):
    env = dict(base)
    env["LD_PRELOAD"] = os.path.abspath(lib) + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["OMP_TARGET_OFFLOAD"] = "MANDATORY"
    env["GRIDSEL_POLICY"] = policy
    if profile:
        env["GRIDSEL_PROFILE"] = profile
    else:
        env.pop("GRIDSEL_PROFILE", None)
    return env


class Gridsel:
    """The CLI, with caches (gramschmidt has thousands of (kernel, trip) pairs)."""

    def __init__(self, exe, device="h100"):
        self.exe = exe
        self.device = device
        self._space = {}
        self._select = {}

    def space(self, binary, kernel, trip):
        key = (binary, kernel, trip)
        if key not in self._space:
            out = subprocess.run([self.exe, "space", "--device", self.device, "--binary", binary,
                                  "--kernel", kernel, "--trip-count", str(trip)],
                                 capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                raise RuntimeError(f"gridsel space failed: {out.stderr.strip()}")
            pts = []
            for row in csv.DictReader(io.StringIO(out.stdout)):
                pts.append((row["label"], int(row["threads"]), int(row["blocks"])))
            self._space[key] = pts
        return self._space[key]

    def select(self, binary, kernel, trip, policy="lloyd"):
        key = (binary, kernel, trip, policy)
        if key not in self._select:
            out = subprocess.run([self.exe, "select", "--device", self.device, "--binary", binary,
                                  "--kernel", kernel, "--trip-count", str(trip), "--policy", policy,
                                  "--json"], capture_output=True, text=True, timeout=60)
            if out.returncode != 0:
                raise RuntimeError(f"gridsel select failed: {out.stderr.strip()}")
            self._select[key] = json.loads(out.stdout)
        return self._select[key]


# --------------------------------------------------------------------------- run

class Runner:
    def __init__(self, a):
        self.a = a
        self.t0 = time.monotonic()
        self.out = a.out
        os.makedirs(os.path.join(self.out, "raw"), exist_ok=True)
        self.gs = Gridsel(a.gridsel, a.device)
        self.base_env = dict(os.environ)
        self.env_info = environment()
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

    def run_job(self, prog, n, p, pairs, prog_reps, reduced_from):
        key = job_key(prog, n)
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
        # Mark warmup launches and check the cycle against `gridsel space`.
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
            loud(f"{key}: the sweep's launches do not follow `gridsel space` for {len(bad)} pair(s), "
                 f"e.g. {bad[0]['kernel']} trip {bad[0]['trip_count']} "
                 f"({bad[0]['cycle_mismatches']} of {bad[0]['launches']} launches)")
        kern_s = sum(r["ns"] for r in rows) / 1e9
        rec = {"program": prog, "n": n, "status": status, "rc": rc, "reps": self.a.reps,
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
        todo = [(p, n) for p, n in jobs if job_key(p, n) not in done]
        log(f"gridsel-bench run {self.run_id}: {len(jobs)} jobs, {len(jobs) - len(todo)} already done, "
            f"{len(todo)} to do; budget {a.budget_s:.0f} s, job limit {a.job_timeout_s:.0f} s, "
            f"{a.reps} samples per point; GPU {self.env_info['gpu']}")
        if not todo:
            log("nothing to do")
            return 0
        self.noise("start")
        n_done, n_failed, configs_done, launches_done = 0, 0, 0, 0
        job_times = []
        mid_done = False
        stopped = None
        for idx, (prog, n) in enumerate(todo):
            key = job_key(prog, n)
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
                             {"program": prog, "n": n, "status": "pilot_failed", "rc": p["rc"],
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
        remaining = sum(1 for p, n in todo if job_key(p, n) not in recorded)
        log(f"done: {n_done} jobs measured ({n_failed} failed), {launches_done} launches, "
            f"{self.elapsed():.0f} s; {max(remaining, 0)} jobs left for the next run")
        shutil.rmtree(self.tmp, ignore_errors=True)
        return 0


def cmd_run(a):
    for path, what in ((a.gridsel, "--gridsel"), (a.lib, "--lib")):
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


# --------------------------------------------------------------------------- summarize

def iter_raw(path):
    with gzip.open(path, "rt", newline="") as f:
        for row in csv.DictReader(f):
            yield row


def summarize_dir(results, gridsel=None, bin_dir=None, min_samples=3, quiet=False):
    """Computes and writes summary.csv and points.csv; returns (summary rows, stats)."""
    jobs = jobs_in(results)
    samples = defaultdict(lambda: defaultdict(list))   # (prog, kernel, trip) -> point -> [ms]
    order = defaultdict(list)                          # point order as first seen (cycle order)
    recorded_class, kept = {}, set()
    binaries = {}
    skipped_status = []
    for key, j in jobs.items():
        if j["status"] not in ("ok", "timeout"):
            skipped_status.append(f"{key} ({j['status']})")
            continue
        prog = j["program"]
        for q in j.get("pairs", []):
            recorded_class[(prog, q["kernel"], q["trip_count"])] = q.get("class", "unknown")
            if q.get("kept_as_given"):
                kept.add((prog, q["kernel"], q["trip_count"]))
        bd = bin_dir or j.get("bin_dir")
        if bd:
            binaries[prog] = os.path.join(bd, prog)
        raw = os.path.join(results, "raw", f"{key}.csv.gz")
        if not os.path.exists(raw):
            continue
        for r in iter_raw(raw):
            if r.get("warmup", "0") == "1":
                continue
            pk = (prog, r["kernel"], int(r["trip_count"]))
            pt = (r["policy"], int(r["threads"]), int(r["blocks"]))
            if pt not in samples[pk]:
                order[pk].append(pt)
            samples[pk][pt].append(int(r["ns"]) / 1e6)

    gs = Gridsel(gridsel) if gridsel and os.path.exists(gridsel) else None
    class_source = defaultdict(int)

    def klass(prog, kernel, trip):
        b = binaries.get(prog)
        if gs and b and os.path.exists(b):
            try:
                c = gs.select(b, kernel, trip)["class"]
                class_source["gridsel select"] += 1
                return c
            except (RuntimeError, KeyError, ValueError, subprocess.TimeoutExpired):
                pass
        class_source["recorded"] += 1
        return recorded_class.get((prog, kernel, trip), "unknown")

    summary, points = [], []
    dropped, dropped_kept = [], []
    for pk in sorted(samples, key=lambda k: (k[0], k[1], k[2])):
        prog, kernel, trip = pk
        pts = samples[pk]
        if pk in kept:
            dropped_kept.append(pk)
            continue
        if min(len(v) for v in pts.values()) < min_samples:
            dropped.append(pk)
            continue
        # The policies' points first (llvm leading), then the grid in cycle order.
        order[pk].sort(key=lambda p: (p[0] == "grid", p[0] != "llvm"))
        stats = {}
        for pt in order[pk]:
            med, p10, p90, spread = describe(pts[pt])
            stats[pt] = (med, spread)
            points.append([prog, kernel, trip, pt[0], pt[1], pt[2], len(pts[pt]),
                           f"{med:.6f}", f"{p10:.6f}", f"{p90:.6f}"])
        cls = klass(prog, kernel, trip)
        labels = []
        for pt in order[pk]:
            if pt[0] != "grid" and pt[0] not in labels:
                labels.append(pt[0])
        for lab in labels:
            pt = next(p for p in order[pk] if p[0] == lab)
            med, spread = stats[pt]
            summary.append([prog, kernel, trip, cls, lab, pt[1], pt[2], f"{med:.6f}", f"{spread:.2f}"])
        best = min(order[pk], key=lambda p: (stats[p][0], order[pk].index(p)))
        summary.append([prog, kernel, trip, cls, "best", best[1], best[2],
                        f"{stats[best][0]:.6f}", f"{stats[best][1]:.2f}"])
    for name, header, rows in (("summary.csv", SUMMARY_HEADER, summary), ("points.csv", POINTS_HEADER, points)):
        with open(os.path.join(results, name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
    st = {"pairs": len(samples), "kept": len({(r[0], r[1], r[2]) for r in summary}),
          "dropped": len(dropped), "dropped_list": dropped, "not_swept": len(dropped_kept),
          "skipped_jobs": skipped_status, "class_source": dict(class_source)}
    with open(os.path.join(results, "summary-stats.json"), "w") as f:
        json.dump({k: v for k, v in st.items() if k != "dropped_list"}
                  | {"dropped_pairs": [list(p) for p in dropped]}, f, indent=1)
    if not quiet:
        log(f"summary: {st['kept']} (kernel, trip) pairs kept of {st['pairs']}; dropped {st['dropped']} with "
            f"fewer than {min_samples} samples at some point; {st['not_swept']} not swept (launches with "
            f"explicit num_teams/thread_limit are kept as given); jobs left out: "
            f"{', '.join(skipped_status) or 'none'}; class from {dict(class_source) or '-'}")
        log(f"wrote {os.path.join(results, 'summary.csv')} ({len(summary)} rows), "
            f"{os.path.join(results, 'points.csv')} ({len(points)} rows)")
    return summary, st


def cmd_summarize(a):
    summarize_dir(a.results, a.gridsel, a.bin_dir, a.min_samples)
    return 0


def cmd_add_policy(a):
    """Puts a policy evaluated offline (leave-one-out) into summary.csv.

    FILE has columns program,kernel,trip_count and the policy's threads,
    blocks and time (named by --columns): the grid the policy chose for each
    case and that grid's MEASURED median (from points.csv). Rows of the same policy name already in the summary are
    replaced; cases without a row (or without a time) are left out of it.
    """
    spreads = {}
    with open(os.path.join(a.results, "points.csv"), newline="") as f:
        for r in csv.DictReader(f):
            key = (r["program"], r["kernel"], int(r["trip_count"]), int(r["threads"]), int(r["blocks"]))
            med = float(r["median_ms"])
            if med > 0:
                spreads[key] = (float(r["p90_ms"]) - float(r["p10_ms"])) / med * 100
    path = os.path.join(a.results, "summary.csv")
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["policy"] != a.name]
    classes = {(r["program"], r["kernel"], int(r["trip_count"])): r["class"] for r in rows}
    added = 0
    tcol, bcol, mcol = a.columns.split(",")
    with open(a.file, newline="") as f:
        for r in csv.DictReader(f):
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            if pk not in classes or not r.get(mcol):
                continue
            t, b = int(r[tcol]), int(r[bcol])
            rows.append({"program": pk[0], "kernel": pk[1], "trip_count": pk[2], "class": classes[pk],
                         "policy": a.name, "threads": t, "blocks": b, "median_ms": r[mcol],
                         "spread_pct": f"{spreads.get(pk + (t, b), 0.0):.2f}"})
            added += 1
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_HEADER)
        w.writeheader()
        w.writerows(rows)
    prov_path = os.path.join(a.results, "offline-policies.json")
    prov = json.load(open(prov_path)) if os.path.exists(prov_path) else {}
    prov[a.name] = {"file": os.path.basename(a.file), "rows": added}
    with open(prov_path, "w") as f:
        json.dump(prov, f, indent=1, sort_keys=True)
    log(f"add-policy: {added} rows of {a.name} in {path}")
    return 0


# --------------------------------------------------------------------------- ceiling

def static_long_rules(sms):
    """The family of static long-loop rules the ceiling searches: T threads,
    blocks = min(one per 128-iteration chunk, B), B a multiple of the SM count
    or a power of two (the sweep measured these for every thread count)."""
    caps = sorted({sms * m for m in range(1, 9)} | {1 << k for k in range(8, 17)})
    return [(t, b) for t in (32, 64, 96, 128) for b in caps]


def rule_blocks(trip, cap):
    """A static long-loop rule's blocks: one per 128-iteration chunk, at most `cap` (and 2^16)."""
    return min(-(-trip // 128), cap, 1 << 16)


def ceiling(table, points, sms, target=0.95):
    """How far any static rule of `static_long_rules` can take long loops, in-sample
    (each rule judged on the very cases that choose it, so an upper bound), and what
    the issue's geomean target would need from them. Returns a dict of numbers and rows."""
    cases = [pk for pk, e in table.items() if "llvm" in e and "best" in e]
    longs = [pk for pk in cases if table[pk]["class"] == "long"]
    rows = []
    for t, cap in static_long_rules(sms):
        sp, regressions, within5, missing = [], 0, 0, 0
        for pk in longs:
            llvm, best = table[pk]["llvm"][2], table[pk]["best"][2]
            ms = points.get(pk, {}).get((t, rule_blocks(pk[2], cap)))
            if ms is None:
                missing += 1
                ms = llvm
            sp.append(llvm / ms)
            regressions += ms > 1.03 * llvm
            within5 += ms <= 1.05 * best
        rows.append(dict(threads=t, cap=cap, geomean=geomean(sp), regressions=regressions,
                         within5=within5, missing=missing))
    rows.sort(key=lambda r: -r["geomean"])
    ln = lambda pk, pol: math.log(table[pk]["llvm"][2] / table[pk][pol][2])
    best_all = math.exp(sum(ln(pk, "best") for pk in cases) / len(cases))
    other = [pk for pk in cases if pk not in longs]
    # Short and ideal loops at their best grid, long loops under the best rule.
    top = rows[0]["geomean"] if rows else 1.0
    perfect_rest = sum(ln(pk, "best") for pk in other)
    with_rule = math.exp((perfect_rest + len(longs) * math.log(top)) / len(cases))
    need_long = math.exp((len(cases) * math.log(target * best_all) - perfect_rest) / max(len(longs), 1))
    oracle = []
    for pk in longs:
        got = [points.get(pk, {}).get((t, rule_blocks(pk[2], cap)))
               for t, cap in static_long_rules(sms)]
        got = [g for g in got if g]
        if got:
            oracle.append(table[pk]["llvm"][2] / min(got))
    return dict(cases=len(cases), longs=len(longs), best_all=best_all, rows=rows,
                with_rule=with_rule, need_long=need_long, oracle=geomean(oracle),
                best_long=geomean([table[pk]["llvm"][2] / table[pk]["best"][2] for pk in longs]))


def load_points(results):
    """{(prog, kernel, trip): {(threads, blocks): fastest median ms of that grid}}"""
    out = defaultdict(dict)
    with open(os.path.join(results, "points.csv"), newline="") as f:
        for r in csv.DictReader(f):
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            g = (int(r["threads"]), int(r["blocks"]))
            ms = float(r["median_ms"])
            out[pk][g] = min(ms, out[pk].get(g, ms))
    return out


def cmd_ceiling(a):
    c = ceiling(load_summary(a.results), load_points(a.results), a.sms)
    lines = [
        "# What a static long-loop rule can reach (in-sample upper bound)",
        "",
        f"Written by `gridsel_bench.py ceiling {a.results} --sms {a.sms}` from summary.csv and points.csv.",
        f"Family: T threads x min(one block per 128-iteration chunk, B) blocks, T in 32/64/96/128, "
        f"B a multiple of {a.sms} (x1..8) or 2^8..2^16: {len(static_long_rules(a.sms))} rules, each judged "
        f"on all {c['longs']} long-loop cases it would choose for (in-sample, so an upper bound on any "
        "leave-one-out rule of the family). Speedups are over LLVM's grid, measured medians.",
        "",
        "| threads | B | long-loop geomean | cases > 3 % slower than llvm | within 5 % of best | not measured (counted as llvm) |",
        "|---|---|---|---|---|---|",
    ]
    for r in c["rows"][:10]:
        lines.append(f"| {r['threads']} | {r['cap']} | {r['geomean']:.3f} | {r['regressions']} | "
                     f"{r['within5']} | {r['missing']} |")
    lines += [
        "",
        f"- Best grid per case (the sweep's best): long-loop geomean {c['best_long']:.3f}; "
        f"all {c['cases']} cases {c['best_all']:.3f}.",
        f"- Picking the family's best rule *per case* (an oracle, not a static rule): {c['oracle']:.3f}.",
        f"- Short and ideal loops at their best grid and long loops under the best single rule: "
        f"{c['with_rule']:.3f} = {100 * c['with_rule'] / c['best_all']:.1f} % of best's geomean.",
        f"- Reaching 95 % of best's geomean with short and ideal loops perfect needs long loops at "
        f"{c['need_long']:.3f}x over LLVM from a single rule.",
    ]
    path = os.path.join(a.results, "static-ceiling.md")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    log(f"wrote {path}")
    return 0


# --------------------------------------------------------------------------- live

LIVE_NAME = re.compile(r"^(?P<program>.+)-(?P<n>\d+)-(?P<policy>[a-z]+)-(?P<round>\d+)\.csv$")


def live_samples(folder, warmup=1):
    """{(program, kernel, trip): {policy: [(ns, (threads, blocks)), ...]}} from
    bench/gpu/live.sh's profiles, the first `warmup` launches of each (kernel, trip)
    of each process left out."""
    out = defaultdict(lambda: defaultdict(list))
    for path in sorted(glob.glob(os.path.join(folder, "*.csv"))):
        m = LIVE_NAME.match(os.path.basename(path))
        if not m:
            continue
        seen = defaultdict(int)
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                key = (r["kernel"], int(r["trip_count"]))
                seen[key] += 1
                if seen[key] > warmup:
                    grid = (int(r["threads"]), int(r["blocks"]))
                    out[(m["program"],) + key][m["policy"]].append((int(r["ns"]), grid))
    return out


def live_table(samples, table, policies):
    """Per case: live median speedup over llvm for each policy, the replayed one from
    summary.csv (None when the sweep has no such case) and the live spread."""
    rows = []
    for pk in sorted(samples):
        s = samples[pk]
        if "llvm" not in s:
            continue
        grid = lambda p: max(set(g for _, g in s[p]), key=[g for _, g in s[p]].count)
        llvm = statistics.median(ns for ns, _ in s["llvm"])
        row = {"program": pk[0], "kernel": pk[1], "trip_count": pk[2], "llvm_ms": llvm / 1e6,
               "n_llvm": len(s["llvm"]), "llvm_grid": grid("llvm")}
        for p in policies:
            if p not in s:
                continue
            times = [ns for ns, _ in s[p]]
            med = statistics.median(times)
            row[f"{p}_ms"] = med / 1e6
            row[f"{p}_live"] = llvm / med
            row[f"{p}_spread_pct"] = describe(times)[3]
            row[f"{p}_grid"] = grid(p)
            e = table.get(pk)
            row[f"{p}_replay"] = (e["llvm"][2] / e[p][2]) if e and p in e and "llvm" in e else None
        rows.append(row)
    return rows


def cmd_live(a):
    policies = [p for p in a.policies.split(",") if p != "llvm"]
    rows = live_table(live_samples(a.profiles), load_summary(a.results), policies)
    stem = os.path.join(a.results, a.name)
    header = ["program", "kernel", "trip_count", "llvm_ms", "n_llvm", "llvm_grid"]
    for p in policies:
        header += [f"{p}_grid", f"{p}_ms", f"{p}_live", f"{p}_replay", f"{p}_spread_pct"]
    with open(stem + ".csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for r in rows:
            cell = lambda v: ("" if v is None else f"{v:.6g}" if isinstance(v, float)
                              else f"{v[0]}x{v[1]}" if isinstance(v, tuple) else v)
            w.writerow([cell(r.get(h)) for h in header])
    lines = ["# Live check: whole programs per policy against the replayed report", "",
             f"Written by `gridsel_bench.py live {a.results} --profiles {a.profiles_label or a.profiles}` from "
             "bench/gpu/live.sh: every suite program at its middle size, each policy in its own "
             "process, policies alternating in rotating order, medians of each kernel's launches "
             "over all rounds (first launch per process left out). *Replay* is the same case's "
             "speedup in summary.csv (the sweep's measured median of the grid the policy picks "
             "there; for `forest` the leave-one-kernel-out model's grid, live runs the shipped "
             "model). Kernels launched at many trip counts (gramschmidt's per-step loops) count "
             "once per kernel in the second half of the table: the geomean over their trip counts.", "",
             "| policy | cases in the replay | live geomean over llvm | replay geomean | "
             "live > 3 % slower | live and replay > 10 % apart | kernels | live geomean, per kernel | "
             "kernels > 3 % slower |",
             "|---|---|---|---|---|---|---|---|---|"]
    by_kernel = defaultdict(list)
    for r in rows:
        by_kernel[(r["program"], r["kernel"])].append(r)
    for p in policies:
        have = [r for r in rows if f"{p}_live" in r]
        both = [r for r in have if r.get(f"{p}_replay")]
        differ = [r for r in both if abs(math.log(r[f"{p}_live"] / r[f"{p}_replay"])) > math.log(1.10)]
        kernels = {k: geomean([r[f"{p}_live"] for r in rs if f"{p}_live" in r]) for k, rs in by_kernel.items()}
        lines.append(
            f"| {p} | {len(both)} | {fmt_speedup(geomean([r[f'{p}_live'] for r in both]))} | "
            f"{fmt_speedup(geomean([r[f'{p}_replay'] for r in both]))} | "
            f"{sum(r[f'{p}_live'] < 1 / 1.03 for r in both)} | {len(differ)} | {len(kernels)} | "
            f"{fmt_speedup(geomean(list(kernels.values())))} | {sum(v < 1 / 1.03 for v in kernels.values())} |")
    table = load_summary(a.results)
    matched = [r for r in rows if (r["program"], r["kernel"], r["trip_count"]) in table]
    classes = [c for c in CLASS_ORDER if any(table[(r["program"], r["kernel"], r["trip_count"])]["class"] == c
                                             for r in matched)]
    lines += ["", "Live geomean over llvm by loop class, on the replay's cases:", "",
              "| policy | " + " | ".join(f"{c} ({sum(table[(r['program'], r['kernel'], r['trip_count'])]['class'] == c for r in matched)})"
                                        for c in classes) + " |",
              "|---|" + "---|" * len(classes)]
    for p in policies:
        cells = []
        for c in classes:
            xs = [r[f"{p}_live"] for r in matched if f"{p}_live" in r
                  and table[(r["program"], r["kernel"], r["trip_count"])]["class"] == c]
            cells.append(fmt_speedup(geomean(xs)))
        lines.append(f"| {p} | " + " | ".join(cells) + " |")
    if "best" in policies:
        for p in (q for q in policies if q != "best"):
            both = [r for r in matched if f"{p}_ms" in r and "best_ms" in r]
            w5 = sum(r[f"{p}_ms"] <= 1.05 * r["best_ms"] for r in both)
            w10 = sum(r[f"{p}_ms"] <= 1.10 * r["best_ms"] for r in both)
            ratio = geomean([r[f"{p}_live"] for r in both]) / geomean([r["best_live"] for r in both])
            lines += ["", f"`{p}` against the best grids, live: {100 * ratio:.1f} % of their geomean "
                      f"speedup; within 5 % of them on {w5}/{len(both)} cases, within 10 % on {w10}."]
    same = [abs(math.log(r[f"{p}_live"])) for p in policies for r in rows
            if r.get(f"{p}_grid") == r["llvm_grid"]]
    if same:
        same.sort()
        lines += ["", f"Noise between processes: on the {len(same)} (case, policy) pairs whose grid *is* "
                  f"LLVM's, the live ratio to llvm is within {100 * (math.exp(quantile(same, 0.5)) - 1):.1f} % "
                  f"(median), {100 * (math.exp(quantile(same, 0.9)) - 1):.1f} % (90th percentile), "
                  f"{100 * (math.exp(same[-1]) - 1):.1f} % (worst)."]
    for p in policies:
        out = []
        for (prog, kernel), rs in sorted(by_kernel.items()):
            slow = sorted((r for r in rs if r.get(f"{p}_live", 1) < 1 / 1.03), key=lambda r: r[f"{p}_live"])
            if not slow:
                continue
            worst = slow[0]
            rep = worst.get(f"{p}_replay")
            trips = (str(worst["trip_count"]) if len(rs) == 1
                     else f"{len(slow)} of {len(rs)} (worst {worst['trip_count']})")
            out.append((worst[f"{p}_live"], f"| {prog} | {short_kernel(prog, kernel)} | {trips} | "
                        f"{worst['llvm_ms']:.4f} | {fmt_speedup(worst[f'{p}_live'])} | "
                        f"{fmt_speedup(rep) if rep else '-'} | {worst[f'{p}_spread_pct']:.0f} |"))
        if out:
            lines += ["", f"`{p}` more than 3 % slower than llvm live (worst trip count per kernel):", "",
                      "| program | kernel | trip counts | llvm ms | live | replay | spread % |",
                      "|---|---|---|---|---|---|---|"]
            lines += [line for _, line in sorted(out)]
    with open(stem + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    log(f"wrote {stem}.md and .csv ({len(rows)} cases)")
    return 0


def cmd_best_cache(a):
    """A GRIDSEL_CACHE file whose winners are the sweep's best grids, so that `tune`
    launches the best grid of every measured (kernel, trip count) from the first launch."""
    entries = [dict(kernel=pk[1], device=a.device, sm_arch=a.sm_arch, trip_count=pk[2],
                    threads=e["best"][0], blocks=e["best"][1], ns=round(e["best"][2] * 1e6), launches=0)
               for pk, e in load_summary(a.results).items() if "best" in e]
    with open(a.out, "w") as f:
        json.dump({"version": 1, "entries": entries}, f, indent=0)
    log(f"wrote {a.out}: {len(entries)} best grids for device {a.device!r}")
    return 0


# --------------------------------------------------------------------------- report

def load_summary(results):
    """{(prog, kernel, trip): {"class":..., policy: (threads, blocks, median, spread)}}"""
    table = OrderedDict()
    with open(os.path.join(results, "summary.csv"), newline="") as f:
        for r in csv.DictReader(f):
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            e = table.setdefault(pk, {"class": r["class"]})
            e[r["policy"]] = (int(r["threads"]), int(r["blocks"]), float(r["median_ms"]), float(r["spread_pct"]))
    return table


def select_rows(table, max_trips):
    """Kernels with many trip counts (gramschmidt) keep max_trips of them, spread in log space."""
    by_kernel = defaultdict(list)
    for pk in table:
        by_kernel[(pk[0], pk[1])].append(pk)
    keep, thinned = [], []
    for k, pks in by_kernel.items():
        pks.sort(key=lambda p: p[2])
        if max_trips and len(pks) > max_trips:
            idx = sorted({round(i * (len(pks) - 1) / (max_trips - 1)) for i in range(max_trips)})
            keep.extend(pks[i] for i in idx)
            thinned.append((k, len(pks)))
        else:
            keep.extend(pks)
    return keep, thinned


def analyse(table, rows, policies):
    """Speedups over llvm and the aggregate numbers of the report."""
    out = {"rows": [], "geo": {}, "within": {}, "slower": []}
    for pk in rows:
        e = table[pk]
        if "llvm" not in e or "best" not in e:
            continue
        base = e["llvm"][2]
        r = {"pk": pk, "class": e["class"], "llvm": e["llvm"], "sp": {}, "grid": {}}
        for p in policies + ["best"]:
            if p in e:
                r["grid"][p] = e[p]
                r["sp"][p] = base / e[p][2] if e[p][2] > 0 else float("nan")
        out["rows"].append(r)
    for p in policies + ["best"]:
        g = {}
        for c in CLASS_ORDER + sorted({r["class"] for r in out["rows"]} - set(CLASS_ORDER)):
            xs = [r["sp"][p] for r in out["rows"] if r["class"] == c and p in r["sp"]]
            if xs:
                g[c] = (geomean(xs), len(xs))
        xs = [r["sp"][p] for r in out["rows"] if p in r["sp"]]
        g["all"] = (geomean(xs), len(xs))
        out["geo"][p] = g
    for p in policies:
        w5 = w10 = tot = 0
        for r in out["rows"]:
            if p not in r["grid"]:
                continue
            tot += 1
            ratio = r["grid"][p][2] / r["grid"]["best"][2]
            w5 += ratio <= 1.05
            w10 += ratio <= 1.10
            if r["grid"][p][2] > r["llvm"][2] * 1.03:
                out["slower"].append((p, r))
        out["within"][p] = (w5, w10, tot)
    return out


def noise_stats(results):
    recs = [r for r in read_jsonl(os.path.join(results, "noise.jsonl")) if r.get("status") == "ok"]
    within = [k["spread_pct"] for r in recs for k in r["kernels"]]
    by_run = defaultdict(list)
    for r in recs:
        for k in r["kernels"]:
            by_run[(r["run_id"], k["kernel"])].append(k["median_ms"])
    between = [(max(v) - min(v)) / statistics.median(v) * 100 for v in by_run.values() if len(v) > 1]
    allmed = [k["median_ms"] for r in recs for k in r["kernels"]]
    across = (max(allmed) - min(allmed)) / statistics.median(allmed) * 100 if len(allmed) > 1 else None
    desc = recs[0]["program"] + " " + str(recs[0]["n"]) if recs else "-"
    return {"n": len(recs), "what": desc, "within": within, "between": between, "across": across}


def cmd_report(a):
    results = a.results
    if not os.path.exists(os.path.join(results, "summary.csv")):
        summarize_dir(results, a.gridsel, None, a.min_samples)
    table = load_summary(results)
    seen_pol = []
    for e in table.values():
        for p in e:
            if p not in ("class", "best", "llvm") and p not in seen_pol:
                seen_pol.append(p)
    policies = [p for p in (a.policies.split(",") if a.policies else ["llvm"] + seen_pol) if p]
    others = [p for p in policies if p != "llvm"]
    rows, thinned = select_rows(table, a.max_trips_per_kernel)
    rows = [pk for pk in rows if pk[2] >= a.min_trip]
    rows.sort(key=lambda pk: (CLASS_ORDER.index(table[pk]["class"]) if table[pk]["class"] in CLASS_ORDER else 9,
                              pk[0], pk[1], pk[2]))
    an = analyse(table, rows, others)
    jobs = list(jobs_in(results).values())
    envs = [j["env"] for j in jobs if "env" in j]
    env = envs[-1] if envs else environment()
    gpus = sorted({e["gpu"] for e in envs}) or [env["gpu"]]
    drivers = sorted({e["driver"] for e in envs}) or [env["driver"]]
    commits = sorted({e["commit"] for e in envs}) or [env["commit"]]
    dates = sorted(e["date"] for e in envs) or [env["date"]]
    ok = [j for j in jobs if j.get("status") in ("ok", "timeout")]
    reduced = [j for j in ok if j.get("reps_reduced_from")]
    failed = [j for j in jobs if j.get("status") not in ("ok",)]
    ns = noise_stats(results)
    stats_path = os.path.join(results, "summary-stats.json")
    sst = {}
    if os.path.exists(stats_path):
        with open(stats_path) as f:
            sst = json.load(f)
    L = []
    for j in ok:
        L.extend(j.get("cycle_lengths", []))

    def pct(xs, f):
        return f"{f(xs):.1f} %" if xs else "-"

    md = []
    md.append("# gridsel: launch-grid sweep report\n")
    md.append(f"- GPU: {', '.join(gpus)}; driver {', '.join(drivers)}; LLVM/libomptarget {LLVM_VERSION}")
    md.append(f"- measured {dates[0]} .. {dates[-1]}; gridsel commit {', '.join(commits)}")
    md.append(f"- jobs: {len(ok)} measured (programs x sizes), {len(failed)} not ok"
              + (f" ({', '.join(job_key(j['program'], j['n']) + ' ' + j['status'] for j in failed)})" if failed else ""))
    md.append(f"- (kernel, trip count) pairs: {sst.get('kept', len(table))} kept, {sst.get('dropped', '?')} dropped "
              f"(a point with fewer than {a.min_samples} samples), {sst.get('not_swept', '?')} not swept "
              f"(explicit num_teams/thread_limit)")
    md.append("")
    md.append("## Method\n")
    md.append("- Timing: the wall time of the forwarded `__tgt_target_kernel` call as gridsel's "
              "`GRIDSEL_PROFILE` records it (launch and wait); it includes a launch overhead of about 20 us, "
              "so kernels shorter than ~0.1 ms show little geometry effect.")
    md.append("- Interleaving: under `GRIDSEL_POLICY=sweep` the i-th launch of each (kernel, trip count) runs "
              "point i mod L of `gridsel space` (the policies' grids first, then the grid space), so every "
              "point of a kernel is measured in the same process, interleaved with all others.")
    md.append(f"- Repetitions: the program runs REPS = ceil(samples x L / launches per repetition) timed "
              f"repetitions after {SWEEP_WARMUP} warmup repetition (not counted); target "
              f"{ok[0]['reps'] if ok else '?'} samples per point; cycle lengths L from {min(L) if L else '-'} to "
              f"{max(L) if L else '-'}. REPS was reduced to fit the per-job time limit for {len(reduced)} jobs"
              + (f" ({', '.join(job_key(j['program'], j['n']) for j in reduced)})" if reduced else "") + ".")
    md.append("- Statistics: the median of a point's samples; spread = (p90 - p10) / median. Speedup of a "
              "policy = LLVM's median / the policy's median. Best = the point with the lowest median of all "
              "points of the kernel (the policies' points included).")
    md.append(f"- Noise ({ns['n']} runs of {ns['what']} under `llvm`, at the start, middle and end of each "
              f"harness call): within a run the launch spread is median {pct(ns['within'], statistics.median)}, "
              f"max {pct(ns['within'], max)}; between the runs of one call the medians differ by median "
              f"{pct(ns['between'], statistics.median)}, max {pct(ns['between'], max)}"
              + (f"; across all calls {ns['across']:.1f} %." if ns["across"] is not None else "."))
    prov_path = os.path.join(a.results, "offline-policies.json")
    if os.path.exists(prov_path):
        prov = json.load(open(prov_path))
        md.append("- Policies evaluated offline on the measured points (each case's time is the measured "
                  "median of the grid the policy picks under the final descriptors; a policy with "
                  "calibrated constants uses those of the fold that left the case out): "
                  + ", ".join(f"{n} ({v['file']}, {v['rows']} cases)" for n, v in sorted(prov.items()))
                  + ". See NOTES.md.")
    if thinned:
        md.append("- Kernels with many trip counts are shown (and counted in the geomeans) at "
                  f"{a.max_trips_per_kernel} trip counts spread over their range: "
                  + ", ".join(f"{short_kernel(p, k)} ({n} trip counts)" for (p, k), n in thinned)
                  + "; summary.csv has all.")
    if a.min_trip:
        md.append(f"- Only trip counts >= {a.min_trip}.")
    md.append("")
    md.append("## Table I: grids and speedups over LLVM\n")
    head = ["Kernel", "Trip count", "Class", "LLVM (t,b)", "LLVM ms"]
    for p in others:
        head += [f"{p} (t,b)", f"{p} speedup"]
    head += ["Best (t,b)", "Best speedup"]
    md.append("| " + " | ".join(head) + " |")
    md.append("|" + "---|" * len(head))
    for r in an["rows"]:
        prog, kernel, trip = r["pk"]
        line = [short_kernel(prog, kernel), str(trip), r["class"], f"({r['llvm'][0]},{r['llvm'][1]})",
                f"{r['llvm'][2]:.4f}"]
        for p in others:
            if p in r["grid"]:
                g = r["grid"][p]
                line += [f"({g[0]},{g[1]})", fmt_speedup(r["sp"][p])]
            else:
                line += ["-", "-"]
        g = r["grid"]["best"]
        line += [f"({g[0]},{g[1]})", fmt_speedup(r["sp"]["best"])]
        md.append("| " + " | ".join(line) + " |")
    md.append("")
    md.append("## Geometric mean speedup over LLVM\n")
    classes = [c for c in CLASS_ORDER if any(r["class"] == c for r in an["rows"])]
    classes += sorted({r["class"] for r in an["rows"]} - set(CLASS_ORDER))
    md.append("| | " + " | ".join(f"{c} (n)" for c in classes) + " | all |")
    md.append("|" + "---|" * (len(classes) + 2))
    for p in others + ["best"]:
        g = an["geo"].get(p, {})
        cells = [f"{fmt_speedup(g[c][0])} ({g[c][1]})" if c in g else "-" for c in classes]
        cells.append(f"{fmt_speedup(g['all'][0])}" if "all" in g else "-")
        md.append(f"| {p} | " + " | ".join(cells) + " |")
    md.append("")
    md.append("## Close to the best grid\n")
    md.append("| policy | within 5 % of best | within 10 % of best | kernels |")
    md.append("|---|---|---|---|")
    for p in others:
        w5, w10, tot = an["within"][p]
        md.append(f"| {p} | {w5} | {w10} | {tot} |")
    md.append("")
    md.append("## Slower than LLVM by more than 3 %\n")
    if an["slower"]:
        md.append("| policy | kernel | trip count | class | grid | LLVM grid | speedup |")
        md.append("|---|---|---|---|---|---|---|")
        for p, r in an["slower"]:
            g = r["grid"][p]
            md.append(f"| {p} | {short_kernel(r['pk'][0], r['pk'][1])} | {r['pk'][2]} | {r['class']} | "
                      f"({g[0]},{g[1]}) | ({r['llvm'][0]},{r['llvm'][1]}) | {fmt_speedup(r['sp'][p])} |")
    else:
        md.append("none")
    md.append("")
    md.append("![Fig. 8: speedup over LLVM](fig8.svg)\n")
    path = os.path.join(results, "report.md")
    with open(path, "w") as f:
        f.write("\n".join(md) + "\n")
    log(f"wrote {path} ({len(an['rows'])} kernel rows)")
    plot_fig8(results, an, others)
    return 0


def plot_fig8(results, an, policies):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib is not available: fig8 not drawn")
        return
    rows = list(an["rows"])
    if not rows:
        log("no rows: fig8 not drawn")
        return
    series = policies + ["best"]
    classes = [c for c in CLASS_ORDER if any(r["class"] == c for r in rows)]
    classes += sorted({r["class"] for r in rows} - set(CLASS_ORDER))
    ordered = []
    for c in classes:
        ordered.extend(sorted((r for r in rows if r["class"] == c), key=lambda r: r["sp"].get("best", 1)))
    width = 0.8 / len(series)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    # One panel per loop class, stacked, so the figure stays readable
    # (about 2800 px wide) however many kernels there are.
    counts = [sum(1 for r in ordered if r["class"] == c) for c in classes]
    fig, axes = plt.subplots(len(classes), 1, squeeze=False,
                             figsize=(min(28, 0.1 * max(counts) * len(series) + 3), 4.2 * len(classes)),
                             gridspec_kw={"height_ratios": [1] * len(classes)})
    from matplotlib.ticker import FuncFormatter
    for ax, c in zip((a[0] for a in axes), classes):
        part = [r for r in ordered if r["class"] == c]
        xs = list(range(len(part)))
        for si, p in enumerate(series):
            ys = [r["sp"].get(p, float("nan")) for r in part]
            # Bars start at 1 so that slowdowns hang down (log scale, as in the paper).
            ax.bar([x - 0.4 + width * (si + 0.5) for x in xs], [y - 1 for y in ys], width, bottom=1,
                   label=p, color="black" if p == "best" else colors[si % len(colors)],
                   alpha=0.45 if p == "best" else 0.9)
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xticks(xs)
        ax.set_xticklabels([f"{short_kernel(r['pk'][0], r['pk'][1])} {r['pk'][2]}" for r in part],
                           rotation=90, fontsize=6)
        ax.set_ylabel("speedup over LLVM 19")
        ax.set_title(f"{c} loops ({len(part)} kernels x trip counts)", fontsize=10)
        ax.set_xlim(-0.6, len(part) - 0.4)
        ax.legend(loc="upper left", fontsize=7, ncol=len(series))
    fig.tight_layout()
    for ext in ("svg", "png"):
        fig.savefig(os.path.join(results, f"fig8.{ext}"), dpi=100)
    plt.close(fig)
    log(f"wrote {os.path.join(results, 'fig8.svg')} and fig8.png")


# --------------------------------------------------------------------------- crosscheck

def parse_ncu_csv(text):
    """{kernel: [ns]} from `ncu --csv --metrics gpu__time_duration.sum`, plus grids seen."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    out, grids = defaultdict(list), defaultdict(set)
    if start is None:
        return out, grids
    scale = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
    for r in csv.DictReader(lines[start:]):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            v = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        name = r.get("Kernel Name", "?")
        out[name].append(v * scale.get(r.get("Metric Unit", "nsecond"), 1))
        grids[name].add((r.get("Block Size", "?"), r.get("Grid Size", "?")))
    return out, grids


def cmd_crosscheck(a):
    t, b = (int(x) for x in a.grid.split(","))
    binary = os.path.join(a.bin_dir, a.program)
    results = a.results
    os.makedirs(results, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gridsel-xcheck-")
    base = dict(os.environ)
    policy = f"fixed:{t},{b}"
    prof = os.path.join(tmp, "profile.csv")
    argv = [binary, str(a.n), str(a.reps), "2"]
    rc1, wall1, text1 = run_prog(argv, prog_env(base, a.lib, policy, prof), a.timeout_s, os.path.join(tmp, "p.out"))
    per = defaultdict(list)
    grids_p = defaultdict(set)
    for r in read_profile(prof):
        per[r["kernel"]].append(r["ns"])
        grids_p[r["kernel"]].add((r["threads"], r["blocks"]))
    env2 = prog_env(base, a.lib, policy, None)
    ncu_argv = [a.ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv"] + argv
    try:
        rc2, wall2, text2 = run_prog(ncu_argv, env2, a.timeout_s, os.path.join(tmp, "ncu.out"))
    except OSError as e:
        rc2, text2 = None, f"cannot run {a.ncu}: {e}"
    dev, grids_n = parse_ncu_csv(text2)
    lines = [f"# crosscheck {a.program} {a.n} under GRIDSEL_POLICY={policy}, {a.reps} reps + 2 warmup",
             f"# env: {json.dumps(environment())}",
             f"# profile run: rc={rc1} {check_line(text1)}",
             f"# ncu run: rc={rc2} {check_line(text2)}",
             "# profile = wall time of __tgt_target_kernel (launch + wait, includes ~20 us launch overhead);",
             "# ncu = gpu__time_duration.sum (device time only). Warmup launches are left out of both.",
             "kernel,profile_median_us,ncu_median_us,diff_us,profile_grids,ncu_grids(block;grid)"]
    for k in sorted(set(per) | set(dev)):
        pm = statistics.median(per[k][2:] or per[k]) / 1e3 if per.get(k) else float("nan")
        nm = statistics.median(dev[k][2:] or dev[k]) / 1e3 if dev.get(k) else float("nan")
        pg = " ".join(f"{x}x{y}" for x, y in sorted(grids_p.get(k, [])))
        ng = " ".join(f"{x};{y}" for x, y in sorted(grids_n.get(k, [])))
        lines.append(f"{k},{pm:.2f},{nm:.2f},{pm - nm:.2f},{pg},{ng}")
    if not dev:
        lines.append(f"# ncu gave no gpu__time_duration rows; its output ends with: {text2[-1500:]!r}")
    out = "\n".join(lines) + "\n"
    path = os.path.join(results, f"crosscheck-{a.program}-{a.n}-{t}x{b}.csv")
    with open(path, "w") as f:
        f.write(out)
    sys.stdout.write(out)
    log(f"wrote {path}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if rc1 == 0 and rc2 == 0 else 1


# --------------------------------------------------------------------------- CLI

def main(argv=None):
    ap = argparse.ArgumentParser(prog="gridsel_bench.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

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
    r.add_argument("--device", default="h100", help="device preset for gridsel space/select")
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

    s = sub.add_parser("summarize", help="RESULTS/summary.csv and points.csv")
    s.add_argument("results")
    s.add_argument("--gridsel", default="target/release/gridsel")
    s.add_argument("--bin-dir", help="binaries for `gridsel select` (default: as recorded)")
    s.add_argument("--min-samples", type=int, default=3)
    s.set_defaults(fn=cmd_summarize)

    ap_ = sub.add_parser("add-policy", help="put an offline (leave-one-out) policy into summary.csv")
    ap_.add_argument("results")
    ap_.add_argument("--name", required=True)
    ap_.add_argument("--file", required=True, help="CSV: program,kernel,trip_count and the columns below")
    ap_.add_argument("--columns", default="threads,blocks,median_ms",
                     help="names of FILE's threads, blocks and time columns (default: %(default)s)")
    ap_.set_defaults(fn=cmd_add_policy)

    p = sub.add_parser("report", help="RESULTS/report.md and fig8.svg/png")
    p.add_argument("results")
    p.add_argument("--policies", help="comma-separated, e.g. llvm,lloyd (default: all seen)")
    p.add_argument("--gridsel", default="target/release/gridsel")
    p.add_argument("--min-samples", type=int, default=3)
    p.add_argument("--max-trips-per-kernel", type=int, default=6)
    p.add_argument("--min-trip", type=int, default=0)
    p.set_defaults(fn=cmd_report)

    lv = sub.add_parser("live", help="RESULTS/live-check.md: bench/gpu/live.sh's runs against the replay")
    lv.add_argument("results")
    lv.add_argument("--profiles", required=True, help="the live/ folder bench/gpu/live.sh wrote")
    lv.add_argument("--policies", default="llvm,auto,forest")
    lv.add_argument("--profiles-label", help="how the report names --profiles (e.g. the committed tarball)")
    lv.add_argument("--name", default="live-check", help="output files RESULTS/NAME.md and .csv")
    lv.set_defaults(fn=cmd_live)

    bc = sub.add_parser("best-cache", help="a GRIDSEL_CACHE of the sweep's best grids (live.sh's `best`)")
    bc.add_argument("results")
    bc.add_argument("--out", required=True)
    bc.add_argument("--device", default="NVIDIA H100 80GB HBM3", help="the driver's device name")
    bc.add_argument("--sm-arch", type=int, default=90)
    bc.set_defaults(fn=cmd_best_cache)

    ce = sub.add_parser("ceiling", help="RESULTS/static-ceiling.md: the best static long-loop rule, in-sample")
    ce.add_argument("results")
    ce.add_argument("--sms", type=int, default=132, help="the GPU's SM count (default: %(default)s, H100)")
    ce.set_defaults(fn=cmd_ceiling)

    c = sub.add_parser("crosscheck", help="profile vs. ncu for one program and grid")
    c.add_argument("--bin-dir", required=True)
    c.add_argument("--program", default="gemm")
    c.add_argument("--n", type=int, default=1024)
    c.add_argument("--grid", required=True, metavar="T,B")
    c.add_argument("--reps", type=int, default=20)
    c.add_argument("--lib", default="target/release/libgridsel.so")
    c.add_argument("--ncu", default="ncu")
    c.add_argument("--results", default="bench/results/h100")
    c.add_argument("--timeout-s", type=float, default=300)
    c.set_defaults(fn=cmd_crosscheck)

    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
