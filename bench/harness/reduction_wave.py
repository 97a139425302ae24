#!/usr/bin/env python3
"""The mid-size reduction rule, measured live (NOTES.md §25): cross-team reductions below
rule 6's 2^23 iterations get one wave of chunk-wide (128-thread) blocks instead of `auto`'s
grid, which is LLVM's there. Offline it gave +0.6 points in sample and was unstable held out;
this measures it in whole processes, `auto` against `fixed:` the rule's grid, interleaved.

    # here: the cases and the rule's grids (gridsel-research evaluate, from the kernels' facts)
    python3 bench/harness/reduction_wave.py plan --lib target/release/libgridsel.so \\
        --gridsel target/release/gridsel --host-bin bench/build/host --bin-dir bench/build/sm_90 \\
        --out bench/gpu/reduction-wave.csv ts_cg_poisson:512 red_sum_minmax:1048576 ...
    # on the GPU machine: bench/gpu/reduction-wave.sh (one `gridsel compare` per program and size)
    # here, on what came back:
    python3 bench/harness/reduction_wave.py report bench/gpu/reduction-wave.csv OUT/reduction-wave
    # once the rule is adopted: does `auto` give every case's rule grid?
    python3 bench/harness/reduction_wave.py check bench/gpu/long-loop-wave.csv \\
        --gridsel target/debug/gridsel --bin-dir bench/build/sm_90

`plan` runs each program once under LLVM's grid with GRIDSEL_PROFILE (any offload target:
the host build gives the same kernels and trip counts), then asks `gridsel-research evaluate
--policy auto` for every (kernel, trip count), as shipped and with `--reduction-grid 128,1,0`
(rule 6 as 128 threads and one wave from any trip count: below 2^23, exactly the rule judged).
The cases are the kernels whose grid the rule changes (SPMD cross-team reductions), with
both grids; no grid is written by hand. `jobs` prints, per program and size, the policies
`gridsel compare` runs: `auto` and one `fixed:T,B` per distinct rule grid (a fixed grid
applies to every kernel of the process; only the kernels it is the rule's grid for are read).

`check` says whether `auto` now gives each case's rule grid, as it must once the rule a plan
measured is adopted (`gridsel-research evaluate --policy auto` over the cases in points.csv);
it lists the cases where not and exits 1.

`report` pairs the runs of one round: per case and round, the median launch time of the
kernel in the `auto` run over that in the rule's `fixed` run (the two ran back to back,
their order rotating by round). A case's speedup is the geomean of its rounds' ratios; it is
"outside the noise" when every round agrees in sign. `gridsel compare` always runs `llvm` too,
which is `auto`'s grid at these sizes: its ratio to `auto` in the same rounds is the noise
of the same grid measured twice, shown beside.

Measured on 2026-11-26 (bench/results/h100/reduction-wave, NOTES.md §28) and adopted from 2^20
iterations as `auto` rule 7: since then `plan` finds only the launches below 2^20. The long-loop
plan of `long_loop_rule.py --plan-out` (bench/gpu/long-loop-wave.csv) was measured the same way
(bench/results/h200/long-loop-wave, NOTES.md §32) and shipped as `auto` rule 8.
"""

import argparse
import csv
import io
import math
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gridsel_harness.gridsel import Gridsel  # noqa: E402
from gridsel_harness.programs import prog_env, read_profile, run_prog  # noqa: E402
from gridsel_harness.results import POINTS_HEADER  # noqa: E402
from gridsel_harness.stats import fmt_speedup, geomean  # noqa: E402
from patterns_report import short  # noqa: E402

# Rule 6 replaced by 128 threads, one wave, from any trip count: the mid-size rule below 2^23.
RULE = "128,1,0"
PLAN_HEADER = ["program", "n", "kernel", "trip_count", "auto_threads", "auto_blocks", "rule_threads", "rule_blocks"]
SLOWER = 1.03


def pilot_pairs(binary, n, lib, device, timeout_s=300):
    """[(kernel, trip count)] that `binary n 1 0` launches under LLVM's grid, in launch order.
    GRIDSEL_DEVICE names the device, so that a host-offload build's launches reach the profile."""
    with tempfile.TemporaryDirectory() as tmp:
        prof = os.path.join(tmp, "pilot.csv")
        env = prog_env(dict(os.environ, GRIDSEL_DEVICE=device), lib, "llvm", prof)
        rc, _, text = run_prog([binary, str(n), "1", "0"], env, timeout_s, os.path.join(tmp, "out"))
        if rc != 0 or "check=pass" not in text:
            raise SystemExit(f"plan: {os.path.basename(binary)} {n} failed (rc={rc}): {text[-400:]}")
        pairs = []
        for r in read_profile(prof):
            if (r["kernel"], r["trip_count"]) not in pairs:
                pairs.append((r["kernel"], r["trip_count"]))
        return pairs


def evaluate(gridsel, points, bin_dir, rule=None):
    """{(program, short kernel, trip): (threads, blocks)} of `auto`, shipped or with rule 6 as `rule`."""
    args = ["evaluate", "--points", points, "--binaries", bin_dir, "--device", gridsel.device, "--policy", "auto"]
    out = gridsel.research(args + (["--reduction-grid", rule] if rule else []), timeout=300).stdout
    return {(r["program"], short(r["kernel"]), int(r["trip_count"])): (int(r["threads"]), int(r["blocks"]))
            for r in csv.DictReader(io.StringIO(out))}


def plan(a):
    gridsel = Gridsel(a.gridsel, a.device)
    jobs = []
    for spec in a.jobs:
        prog, _, n = spec.partition(":")
        jobs.append((prog, int(n)))
    rows = {}   # (program, short kernel, trip) -> n
    with tempfile.TemporaryDirectory() as tmp:
        points = os.path.join(tmp, "points.csv")
        with open(points, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(POINTS_HEADER)
            for prog, n in jobs:
                for kernel, trip in pilot_pairs(os.path.join(a.host_bin, prog), n, a.lib, a.device):
                    # A case for `evaluate` to decide; the time is a placeholder (nothing is judged).
                    w.writerow([prog, kernel, trip, "llvm", 1, 1, 1, "1", "1", "1"])
                    rows[(prog, short(kernel), trip)] = n
        shipped = evaluate(gridsel, points, a.bin_dir)
        rule = evaluate(gridsel, points, a.bin_dir, RULE)
    out = []
    for key, n in rows.items():
        if key not in shipped or rule.get(key) == shipped[key]:
            continue
        prog, kernel, trip = key
        out.append([prog, n, kernel, trip, *shipped[key], *rule[key]])
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PLAN_HEADER)
        w.writerows(out)
    print(f"plan: {len(out)} cases the rule moves, of {len(rows)} (kernel, trip count) pairs in {len(jobs)} jobs "
          f"-> {a.out}", file=sys.stderr)
    return 0


def read_plan(path):
    with open(path, newline="") as f:
        return [{**r, "n": int(r["n"]), "trip_count": int(r["trip_count"]),
                 "auto": (int(r["auto_threads"]), int(r["auto_blocks"])),
                 "rule": (int(r["rule_threads"]), int(r["rule_blocks"]))} for r in csv.DictReader(f)]


def fixed(grid):
    return f"fixed:{grid[0]},{grid[1]}"


def job_policies(cases):
    """[(program, n, "auto,fixed:T,B,...")] in plan order."""
    out = {}
    for c in cases:
        out.setdefault((c["program"], c["n"]), ["auto"])
        if fixed(c["rule"]) not in out[(c["program"], c["n"])]:
            out[(c["program"], c["n"])].append(fixed(c["rule"]))
    return [(p, n, ",".join(pols)) for (p, n), pols in out.items()]


def jobs_cmd(a):
    for prog, n, pols in job_policies(read_plan(a.plan)):
        print(prog, n, pols)
    return 0


def run_medians(root, prog, n):
    """{(round, policy): {(short kernel, trip): median ms}} of the ok runs of one `gridsel compare`
    folder, ROOT/PROG-N (runs.csv and each run's GRIDSEL_PROFILE), and the runs that failed."""
    folder = os.path.join(root, f"{prog}-{n}")
    out, failed = {}, []
    runs = os.path.join(folder, "runs.csv")
    if not os.path.exists(runs):
        return out, [f"{prog}-{n}: no runs.csv"]
    with open(runs, newline="") as f:
        for r in csv.DictReader(f):
            if r["status"] != "ok":
                failed.append(f"{prog}-{n} round {r['round']} {r['policy']}: {r['status']}")
                continue
            # runs.csv names the profile where compare wrote it (OUT/<program>/<run>.csv, on the
            # GPU machine); the copy here is at the same place under this folder.
            prof = os.path.join(folder, *r["profile"].replace("\\", "/").split("/")[-2:])
            per = defaultdict(list)
            for row in read_profile(prof):
                per[(short(row["kernel"]), row["trip_count"])].append(row["ns"] / 1e6)
            out[(int(r["round"]), r["policy"])] = {k: statistics.median(v) for k, v in per.items()}
    return out, failed


def report(a):
    cases = read_plan(a.plan)
    runs, failed = {}, []
    for prog, n, _ in job_policies(cases):
        runs[(prog, n)], f = run_medians(a.compare, prog, n)
        failed += f
    print("| program | n | kernel | trip | auto (= LLVM) | rule | auto ms | rule ms | speedup | rounds: range | "
          "rule faster | same grid: llvm/auto range |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    per_prog = defaultdict(list)
    slower, faster = [], []
    for c in cases:
        r = runs[(c["program"], c["n"])]
        key = (c["kernel"], c["trip_count"])
        rounds = sorted({rd for rd, _ in r})
        pairs = [(r[(rd, "auto")][key], r[(rd, fixed(c["rule"]))][key]) for rd in rounds
                 if key in r.get((rd, "auto"), {}) and key in r.get((rd, fixed(c["rule"])), {})]
        if not pairs:
            print(f"| {c['program']} | {c['n']} | {c['kernel']} | {c['trip_count']} | - | - | - | - | - | "
                  f"no paired round | - | - |")
            continue
        ratios = [x / y for x, y in pairs]
        same = [r[(rd, "llvm")][key] / r[(rd, "auto")][key] for rd in rounds
                if key in r.get((rd, "llvm"), {}) and key in r.get((rd, "auto"), {})]
        same_range = f"{fmt_speedup(min(same))}-{fmt_speedup(max(same))}" if same else "-"
        sp = geomean(ratios)
        per_prog[c["program"]].append(sp)
        agree = all(q > 1 for q in ratios) or all(q < 1 for q in ratios)
        if sp < 1 / SLOWER and agree:
            slower.append(f"{c['program']}-{c['n']} {c['kernel']}")
        if sp > SLOWER and agree:
            faster.append(f"{c['program']}-{c['n']} {c['kernel']}")
        t, b = c["auto"]
        rt, rb = c["rule"]
        print(f"| {c['program']} | {c['n']} | {c['kernel']} | {c['trip_count']} | {t}x{b} | {rt}x{rb} | "
              f"{statistics.median(x for x, _ in pairs):.4f} | {statistics.median(y for _, y in pairs):.4f} | "
              f"{fmt_speedup(sp)} | {fmt_speedup(min(ratios))}-{fmt_speedup(max(ratios))} | "
              f"{sum(q > 1 for q in ratios)}/{len(ratios)} | {same_range} |")
    every = [s for v in per_prog.values() for s in v]
    print()
    for prog, v in per_prog.items():
        print(f"- {prog}: {fmt_speedup(geomean(v))} over {len(v)} cases")
    print(f"- all: {fmt_speedup(geomean(every)) if every else '-'} over {len(every)} cases; faster by more than 3 % "
          f"in every round: {len(faster)}; slower by more than 3 % in every round: {len(slower)}"
          + (f" ({', '.join(slower)})" if slower else ""))
    if failed:
        print(f"- runs that failed ({len(failed)}): {'; '.join(failed)}")
    return 0


def unadopted(cases, auto):
    """The plan's cases whose rule grid `auto` does not give, with the grid it gives (None: the
    case is not among `auto`'s)."""
    out = []
    for c in cases:
        grid = auto.get((c["program"], c["kernel"], c["trip_count"]))
        if grid != c["rule"]:
            out.append((c, grid))
    return out


def check(a):
    cases = read_plan(a.plan)
    auto = evaluate(Gridsel(a.gridsel, a.device), a.points, a.bin_dir)
    off = unadopted(cases, auto)
    for c, grid in off:
        gives = f"{grid[0]}x{grid[1]}" if grid else "no grid (not in the points)"
        print(f"{c['program']} {c['kernel']} at {c['trip_count']}: the rule's {c['rule'][0]}x{c['rule'][1]}, "
              f"auto gives {gives}")
    print(f"check: auto gives the rule's grid on {len(cases) - len(off)} of {len(cases)} cases of {a.plan}",
          file=sys.stderr)
    return 1 if off else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan", help="the cases and the rule's grids")
    p.add_argument("jobs", nargs="+", metavar="PROGRAM:N")
    p.add_argument("--lib", required=True, help="libgridsel.so for the pilot runs")
    p.add_argument("--gridsel", required=True, help="gridsel, with gridsel-research beside it")
    p.add_argument("--host-bin", required=True, help="folder of the programs the pilots run (any offload target)")
    p.add_argument("--bin-dir", required=True, help="folder of the measured (sm_90) programs, for the kernels' facts")
    p.add_argument("--device", default="h100")
    p.add_argument("--out", required=True)
    p.set_defaults(fn=plan)
    j = sub.add_parser("jobs", help="per program and size: PROGRAM N POLICIES")
    j.add_argument("plan")
    j.set_defaults(fn=jobs_cmd)
    r = sub.add_parser("report", help="markdown table of the paired rounds")
    r.add_argument("plan")
    r.add_argument("compare", help="folder of the `gridsel compare` folders PROGRAM-N")
    r.set_defaults(fn=report)
    c = sub.add_parser("check", help="whether `auto` now gives every case's rule grid (a rule adopted from a plan)")
    c.add_argument("plan")
    c.add_argument("--gridsel", required=True, help="gridsel, with gridsel-research beside it")
    c.add_argument("--bin-dir", required=True, help="folder of the measured (sm_90) programs, for the kernels' facts")
    c.add_argument("--points", default=os.path.join(HERE, "..", "results", "h100", "points.csv"),
                   help="points.csv holding the plan's cases (their full kernel names)")
    c.add_argument("--device", default="h100")
    c.set_defaults(fn=check)
    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
