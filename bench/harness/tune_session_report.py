#!/usr/bin/env python3
"""tune-session.md from a bench/gpu/tune-session.sh folder: what a `gridsel tune` session
learns, what production runs gain from it, and issue 27's targets, met or not, with the numbers.

The folder holds, per program (PROGRAM at size N, REPS launches of each repeated kernel):
  pilot/PROGRAM.csv            one run under llvm: the kernels and trip counts (for `plan`)
  panel.csv, panel/*.csv       runs under fixed grids (GRIDSEL_POLICY=fixed:T,B): the grids a
                               sweep found best, and grids that spread few iterations
  sessions.csv, sessions/      `gridsel tune` from an empty store: exit status, wall time and
                               the runs it spent (its runs.csv: a row per run, of kind before,
                               tuning, confirm-auto, confirm-learned or confirm-alternating, and
                               its wall_s)
  runs.csv, profiles/          paired production rounds: PROGRAM.ROUND.VARIANT.csv with VARIANT
                               auto (GRIDSEL_CACHE=off), auto2 (the same again: the A/A pair
                               that measures the noise), learned (auto reading the session's
                               store), llvm, tune (online, its own store across rounds), best
                               (auto reading best-set.json: the best set; older folders have none),
                               learned-alt and best-alt (those stores alternated with auto's
                               grids in one process: GRIDSEL_LEARNED_ALTERNATE)
  sides/PROGRAM.ROUND.VARIANT.csv  the alternating runs, and auto's split by the same parity (the
                               A/A within one process), split per search by `gridsel-research
                               sides` (gridsel's own split, median-sum and scaled sums: read, not
                               recomputed); VARIANT panel-T_B: the within panel's runs
  panel-alt.csv, panel-alt/    the within panel (--panel-alt): per grid a store pinning it for
                               every kernel, alternated with auto's grids
  sessions/PROGRAM-N/kernels.csv  what the session's confirmation kept (decided in gridsel)
  best-set.csv, best-set.json  the best set (`best-set`): every case's best grid of the panel,
                               and the store pinning them

A case is (program, kernel, trip count). Its launches per run are auto's; a case launched once
per run is judged by first launches (every process's only one), the others by the launches after
each process's first. Every grid's time is its median over every such launch of that grid, from
any run (panel or production), so a policy is judged by the grid it chose, not the noise of its
own launches; "best" is the fastest grid with at least two samples. Runs that failed (exit
status, the program's check) count nowhere. The best set is the exception to pooling: the
per-kernel best takes each kernel's grid from another run, and a kernel's time depends on what
its neighbours leave in L2, so the best set's launches, every kernel on its best grid at once,
are kept apart and set against the per-kernel best: the ceiling learned grids can reach, measured
instead of argued. A production run's GPU time
is measured two ways: "plain", the sum of its launches' times (GRIDSEL_PROFILE: exploring and
cold first launches included, as the user pays them), and "median-sum", per (kernel, trip count)
the median launch time times the launches, summed (one outlier launch does not move it, nor
does one exploring launch, so the plain sum is what the targets are judged on).

Noise: identical configurations differ by tens of per cent in one pair of processes on the
H100, so one pair cannot resolve 1 %. Per program the report gives, for production with the
store against auto, online tune against auto and auto2 against auto (A/A: the noise), the
median over rounds of the paired ratio and a bootstrap 90 % interval of that median (rounds
resampled, BOOTSTRAP draws, fixed seed). A bound is met when the interval lies at or below it,
not met when the interval lies above it, and otherwise not told apart at this number of rounds:
the report says how many rounds would shrink the interval (as 1/sqrt(rounds)) to the distance
between the median and the bound.

Within one process: the alternating runs' learned side over auto's side per program (plain
and median-sum, median over rounds with the same interval, beside the within A/A), per search
the learned side's median launch over auto's side's, and each search's within best (the
lowest such ratio of the within panel's grids, auto's own counted): the targets again, judged
within one process, where two halves of a run differ by 1-4 % where two processes differ by
10-40 %. A program whose store changes a search launched once or twice a run cannot alternate
(that search's learned grid is never compared there); its across-process rows stand.

Online tune's exploring, within its own run: `tune` profiles its exploring launches
`tune-trial`; each costs its time over the median of the same search's other warm launches in
that run (the leader's, mostly), and a run's exploring cost is their sum over the run's GPU
time. A trial of auto's own grid (a search's first candidate) is not exploring another grid
and is left out. The cold first launch is left out on both sides, as in the alternating split, so a
search launched once or twice a run (no warm launch besides the trial) is not measured here:
the report counts its trials apart. This is a measurement of what gridsel's allowance
(GRIDSEL_TUNE_OVERHEAD, 2.5 % by default) bounds by prediction, taken from outside it.

Usage:
  tune_session_report.py plan FOLDER PROGRAM [--sweep DIR] [--summary CSV] [--spread] [--sms N]
      prints "ROUNDS T,B T,B ...": the panel's grids and how often to run each
  tune_session_report.py best-set FOLDER --store STORE --gridsel EXE --out BEST_STORE
      the best set of the panel's runs: FOLDER/best-set.csv, and the store pinning its grids
      that `gridsel-research cache-entries` writes from it (the device named as in STORE)
  tune_session_report.py panel-store FOLDER PROGRAM T,B --store STORE --gridsel EXE --out STORE
      the within panel's store: grid T,B pinned for every kernel and trip count of the pilot run
  tune_session_report.py report FOLDER [--sweep DIR]   writes FOLDER/tune-session.md
Standard library and the harness's gridsel_harness only."""
import argparse
import collections
import csv
import glob
import gzip
import json
import math
import os
import random
import re
import statistics
import sys

from gridsel_harness.gridsel import CACHE_COLUMNS, Gridsel

REPEATED = 5      # launches per run from which a kernel counts as launched many times
SHARE = 0.98      # learned grids' geomean share of the best grid's
KERNEL_SLACK = 1.03  # no kernel slower than auto's grid by more
STORE_SLACK = 1.01   # production with the store against auto, GPU time
ONLINE_SLACK = 1.03  # online tune against auto, GPU time
TRIAL_LABEL = "tune-trial"  # the profile's label of tune's exploring launches (tune::TRIAL_LABEL)
SESSION_RUNS = {"repeated": 3, "once": 10}
BOOTSTRAP = 2000  # resamples of the rounds for a median's interval
LEVEL = 0.90      # the interval's coverage
# The fewest rounds a per-program verdict is given from: a bootstrap percentile interval of a
# median over few rounds covers far less than LEVEL (normal noise, simulated: 51 % at 2 rounds,
# 76 % at 3, 83 % at 4, 88 % at 6).
MIN_ROUNDS = 5
SEED = 27
MEASURES = ("plain", "median-sum")
# The variants reading a store: their launches that took its grid are profiled `learned`.
STORE_VARIANTS = ("learned", "best")
FEW = 65536       # trip counts up to this get the spreading grids; above, long-loop grids
# The variants alternating a store's grids with auto's within one process, and the store each
# reads: judged on their runs' two sides (`gridsel-research sides`), not pooled with the others.
ALTERNATING = {"learned-alt": "learned", "best-alt": "best"}
# Within one process, the plain `auto` runs split by the same parity: the A/A, two sides of
# identical grids; and the within panel's runs, one store pinning grid T,B: "panel-T_B".
WITHIN_AA = "auto"
PANEL_ALT = "panel-"


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def short(kernel):
    """The kernel's name without the build's file id (`__omp_offloading_fe00_510451_`), so
    one source's kernel is matched across builds."""
    return re.sub(r"^__omp_offloading_[0-9a-f]+_[0-9a-f]+_", "", kernel)


def read_rows(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", newline="") as f:
        return [r for r in csv.DictReader(f) if r.get("kernel") != "kernel"]


def launches(path):
    """[(kernel, trip_count, (threads, blocks), ns, label)] of a GRIDSEL_PROFILE file."""
    return [(r["kernel"], int(r["trip_count"]), (int(r["threads"]), int(r["blocks"])), int(r["ns"]),
             r["policy"]) for r in read_rows(path)]


# ----------------------------------------------------------------------------- plan

def sweep_best(path):
    """{(short kernel, trip): (threads, blocks)} of a sweep's raw CSV (gridsel_bench.py run):
    the grid with the lowest median over its timed launches, among grids with >= 3."""
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in read_rows(path):
        if r["warmup"] == "0":
            by[(short(r["kernel"]), int(r["trip_count"]))][(int(r["threads"]), int(r["blocks"]))].append(
                int(r["ns"]))
    out = {}
    for case, grids in by.items():
        med = {g: statistics.median(v) for g, v in grids.items() if len(v) >= 3}
        if med:
            out[case] = min(med, key=med.get)
    return out


def summary_best(path, program):
    """{(short kernel, trip): (threads, blocks)} of the `best` rows of a summary.csv."""
    out = {}
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            if r["program"] == program and r["policy"] == "best":
                out[(short(r["kernel"]), int(r["trip_count"]))] = (int(r["threads"]), int(r["blocks"]))
    return out


def spread_grids(trip, sms):
    """Grids worth timing for a kernel of `trip` iterations beside a sweep's best: for few
    iterations, one per thread at 32-128 threads and blocks that reach every SM once to four
    times (the heavy-iteration winners: 2 x 132 blocks of 128 threads for 512 iterations on
    the H100, one or two iterations per block), up to 128 threads per iteration; for long
    loops, a ladder of block counts from two per SM to one iteration per thread."""
    if trip <= 0:
        return set()
    if trip <= FEW:
        grids = {(t, -(-trip // t)) for t in (32, 64, 128)}
        grids |= {(t, k * sms) for t in (32, 64, 128, 256) for k in (1, 2, 4) if t * k * sms <= 128 * trip}
    else:
        grids = {(128, 2 * sms), (128, 4 * sms), (128, 8 * sms), (256, 8 * sms), (64, 16 * sms),
                 (128, 32 * sms), (64, 8192), (256, -(-trip // 256)), (128, -(-trip // 128))}
    return {(t, min(b, 2**31 - 1)) for t, b in grids}


def plan(folder, program, sweep=None, summary=None, spread=False, sms=132):
    """(rounds, [grids]) of the panel of `program`: the grids found best for its kernels at the
    pilot's trip counts (by the sweep in `sweep`, by `summary`), with spread_grids when asked;
    rounds 2 when a kernel runs once per run (one sample per process), else 1."""
    pilot = launches(os.path.join(folder, "pilot", f"{program}.csv"))
    count = collections.Counter((short(k), t) for k, t, *_ in pilot)
    best = {}
    if summary and os.path.exists(summary):
        best.update(summary_best(summary, program))
    for path in glob.glob(os.path.join(sweep or "", "raw", f"{program}-*.csv.gz")) if sweep else []:
        best.update(sweep_best(path))
    grids = {best[c] for c in count if c in best}
    if spread:
        for _, trip in count:
            grids |= spread_grids(trip, sms)
    return (2 if 1 in count.values() else 1), sorted(grids)


# ----------------------------------------------------------------------------- report

def failed_runs(folder):
    """The processes (load_processes' keys) whose run failed or did not check (exit status not
    0, or the program's own check not `pass`), as panel.csv and runs.csv record them."""
    bad = lambda r: r["rc"] != "0" or r["check"] != "pass"
    panel = {(r["program"], "panel", f"{r['grid'].replace(',', '_')}.{r['round']}")
             for r in read_csv(os.path.join(folder, "panel.csv")) if bad(r)}
    return panel | {(r["program"], r["variant"], int(r["round"]))
                    for r in read_csv(os.path.join(folder, "runs.csv")) if bad(r)}


def load_processes(folder):
    """{(program, source, round): [launches]}: source is a production variant (profiles/
    PROGRAM.ROUND.VARIANT.csv) or "panel" (panel/PROGRAM.T_B.ROUND.csv; round "T_B.ROUND").
    A failed run's launches are left out (failed_runs): its times may be of a broken run."""
    out = {}
    for path in glob.glob(os.path.join(folder, "profiles", "*.csv")):
        prog, rnd, variant = os.path.basename(path)[:-4].rsplit(".", 2)
        if variant not in ALTERNATING:  # judged within their process only (read_sides)
            out[(prog, variant, int(rnd))] = launches(path)
    for path in glob.glob(os.path.join(folder, "panel", "*.csv")):
        prog, grid, rnd = os.path.basename(path)[:-4].rsplit(".", 2)
        out[(prog, "panel", f"{grid}.{rnd}")] = launches(path)
    for key in failed_runs(folder):
        out.pop(key, None)
    return out


def cases(procs):
    """Per case (program, kernel, trip): launches per run (auto's, else any variant's), every
    grid's samples (first launches for a case launched once per run, the later launches for the
    others), and the grid each production variant used (its most frequent; the launches of
    learned and best labelled `learned` count apart, so a run that found nothing in the store is
    seen). The best set's samples are kept apart ("best_set"), not pooled into its grids': they
    time those grids launched together, against each grid's time in its own runs; only its
    launches labelled `learned` count (a launch that found no pinned grid ran auto's); "best"
    is the fastest grid with at least two samples (of equal times, the fewest threads, then
    blocks)."""
    counts = collections.defaultdict(lambda: collections.defaultdict(list))
    for (prog, src, _), rows in procs.items():
        for c, n in collections.Counter((prog, k, t) for k, t, *_ in rows).items():
            counts[c][src].append(n)
    out = {}
    for c, by_src in counts.items():
        ns = by_src.get("auto") or [n for v in by_src.values() for n in v]
        out[c] = dict(launches=statistics.median_low(ns), samples=collections.defaultdict(list),
                      best_set=[], grids=collections.defaultdict(collections.Counter),
                      labels=collections.defaultdict(collections.Counter))
    for (prog, src, _), rows in procs.items():
        seen = collections.Counter()
        for k, t, g, ns, label in rows:
            c = (prog, k, t)
            first = seen[c] == 0
            seen[c] += 1
            once = out[c]["launches"] == 1
            if first == once:
                if src != "best":
                    out[c]["samples"][g].append(ns)
                elif label == "learned":  # the pinned grid took effect, not auto's fallback
                    out[c]["best_set"].append(ns)
            if src != "panel":
                out[c]["grids"][src][g] += 1
                if src in STORE_VARIANTS:
                    out[c]["labels"][src][label] += 1
    for c, v in list(out.items()):
        if not v["samples"]:  # launched by the best set only: no grid of it was timed alone
            del out[c]
            continue
        v["median"] = {g: statistics.median(x) for g, x in v["samples"].items()}
        steady = {g: m for g, m in v["median"].items() if len(v["samples"][g]) >= 2}
        timed = steady or v["median"]
        v["best"] = min(timed, key=lambda g: (timed[g], g))
        v["grid"] = {src: cnt.most_common(1)[0][0] for src, cnt in v["grids"].items()}
    return out


def best_set(procs, device, sm_arch):
    """The best set: per case, the grid `cases` finds fastest for it in the panel runs (the script
    writes it before the production rounds; the report's per-kernel best pools their launches too,
    so it may name another grid),
    as rows of `gridsel-research cache-entries` (CACHE_COLUMNS), which writes them as a store
    pinning each kernel's grid at its trip count's class on `device` (named as gridsel's driver
    names it), for every build."""
    return [dict(kernel=k, device=device, sm_arch=sm_arch, trip_count=t, threads=v["best"][0],
                 blocks=v["best"][1], ns=round(v["median"][v["best"]]), launches=v["launches"])
            for (_, k, t), v in sorted(cases(procs).items())]


def store_device(*paths):
    """(device, sm_arch) of the records of gridsel stores (each file and its journal beside it),
    as gridsel named the device it ran on; ValueError unless exactly one over them all (a store
    whose searches were all refused holds none: the sessions' own stores still name it)."""
    found = set()
    for path in paths:
        try:
            if os.path.exists(path):
                with open(path) as f:
                    found |= {(r["device"], r["sm_arch"]) for r in json.load(f)["records"]}
            if os.path.exists(path + ".journal"):
                with open(path + ".journal") as f:
                    lines = [json.loads(line) for line in f.read().splitlines()[1:] if line.strip()]
                found |= {(r["device"], r["sm_arch"]) for r in lines}
        except (KeyError, TypeError) as e:
            raise ValueError(f"{path}: not a gridsel store (no {e} in a record)") from None
    if len(found) != 1:
        raise ValueError(f"{', '.join(paths)}: records of {len(found)} devices "
                         f"({', '.join(sorted(d for d, _ in found))}), not one to name the best set's")
    return found.pop()


def write_best_set(folder, stores, gridsel, out):
    """The best set of the folder's runs on the device of the `stores`' records: its rows in
    FOLDER/best-set.csv, and the store `out` that `gridsel-research` (beside the `gridsel` at
    `gridsel`) writes from them. Returns the rows; ValueError or RuntimeError (the CLI's
    message) when either cannot be written."""
    device, sm_arch = store_device(*stores)
    rows = best_set(load_processes(folder), device, sm_arch)
    if not rows:
        raise ValueError(f"{folder}: no kernel timed in a panel run that passed its check")
    with open(os.path.join(folder, "best-set.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=CACHE_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    Gridsel(gridsel).cache_entries(rows, out)
    return rows


def write_panel_store(folder, program, grid, stores, gridsel, out):
    """The within panel's store for `grid` (threads, blocks): the grid pinned for every kernel of
    `program` at each trip count of its pilot run, on the device of the `stores`' records, for
    every build, written by `gridsel-research cache-entries` as the best set's is. Returns the
    rows; ValueError or RuntimeError when it cannot be written."""
    device, sm_arch = store_device(*stores)
    pilot = launches(os.path.join(folder, "pilot", f"{program}.csv"))
    count = collections.Counter((k, t) for k, t, *_ in pilot)
    ns = collections.defaultdict(list)
    for k, t, _, x, _ in pilot:
        ns[(k, t)].append(x)
    rows = [dict(kernel=k, device=device, sm_arch=sm_arch, trip_count=t, threads=grid[0], blocks=grid[1],
                 ns=round(statistics.median(ns[(k, t)])), launches=n) for (k, t), n in sorted(count.items())]
    if not rows:
        raise ValueError(f"{folder}: the pilot run of {program} launched no kernel")
    Gridsel(gridsel).cache_entries(rows, out)
    return rows


def gpu_time(rows, measure="plain"):
    """A run's GPU time (ns): "plain", the sum of its launches' times, or "median-sum", per
    (kernel, trip count) the median launch time times the launches, summed."""
    if measure == "plain":
        return sum(r[3] for r in rows)
    by = collections.defaultdict(list)
    for k, t, _, ns, _ in rows:
        by[(k, t)].append(ns)
    return sum(statistics.median(x) * len(x) for x in by.values())


def exploring_cost(procs, cs):
    """{(program, round): (cost_ns, gpu_ns, unmeasured)} of each online tune run that has an
    exploring launch (profiled TRIAL_LABEL) of another grid than auto's (`cases`' cs: a trial
    of auto's own grid costs nothing over auto, and its time against the others is the run's
    noise): per (kernel, trip count), each warm such trial's time over the median of the same
    search's other warm launches in the run, summed (a search as the profile gives it, kernel and
    trip count: the suite's kernels keep one trip count a run); the run's GPU
    time; and the trials not in the cost: a process's first launch of a search, cold, and the
    warm trials of a search with no other warm launch in the run. cost_ns is None where no
    trial of the run could be measured."""
    out = {}
    for (prog, src, rnd), rows in procs.items():
        auto = lambda k, t: cs.get((prog, k, t), {}).get("grid", {}).get("auto")
        exploring = lambda k, t, g, label: label == TRIAL_LABEL and g != auto(k, t)
        if src != "tune" or not any(exploring(k, t, g, label) for k, t, g, _, label in rows):
            continue
        by = collections.defaultdict(list)
        for k, t, g, ns, label in rows:
            by[(k, t)].append((ns, exploring(k, t, g, label)))
        cost, measured, unmeasured = 0.0, 0, 0
        for (_, cold), *warm in by.values():
            trials = [ns for ns, trial in warm if trial]
            others = [ns for ns, trial in warm if not trial]
            unmeasured += cold + (len(trials) if not others else 0)
            if trials and others:
                lead = statistics.median(others)
                cost += sum(ns - lead for ns in trials)
                measured += len(trials)
        out[(prog, rnd)] = (cost if measured else None, gpu_time(rows), unmeasured)
    return out


def run_totals(procs, measure="plain"):
    """{(program, round): {variant: GPU time of the run (gpu_time's `measure`)}}."""
    out = collections.defaultdict(dict)
    for (prog, src, rnd), rows in procs.items():
        if src != "panel":
            out[(prog, rnd)][src] = gpu_time(rows, measure)
    return out


def paired_ratios(totals, variant, base="auto"):
    """{program: [variant's GPU time over base's, per round where both ran]}."""
    out = collections.defaultdict(list)
    for (prog, _), v in sorted(totals.items()):
        if v.get(variant) and v.get(base):
            out[prog].append(v[variant] / v[base])
    return dict(out)


def median_interval(xs, draws=BOOTSTRAP, level=LEVEL, seed=SEED):
    """(median, low, high) of `xs`: the median and a bootstrap `level` interval of it (the
    rounds resampled with replacement `draws` times, percentile interval, fixed seed)."""
    rng = random.Random(seed)
    meds = sorted(statistics.median(rng.choices(xs, k=len(xs))) for _ in range(draws))
    tail = (1 - level) / 2
    low = meds[int(tail * (draws - 1))]
    high = meds[int(math.ceil((1 - tail) * (draws - 1)))]
    return statistics.median(xs), low, high


def bound_verdict(stat, bound, rounds):
    """Whether the paired ratio's median `stat` = (median, low, high) over `rounds` rounds keeps
    to `bound`: ("met" | "not met" | "not told apart", rounds that would tell, or None). Rounds
    that would tell: the interval's half-width towards the bound scaled by sqrt(rounds) until it
    is the median's distance from the bound."""
    med, low, high = stat
    if rounds < MIN_ROUNDS:
        return "too few rounds", None
    if high <= bound:
        return "met", None
    if low > bound:
        return "not met", None
    half = (high - med) if med <= bound else (med - low)
    gap = abs(bound - med)
    # Rounded first so that a whole number is not pushed up by float error.
    need = math.ceil(round(rounds * (half / gap) ** 2, 6)) if gap > 0 else None
    return "not told apart", need


def noise_table(totals, variants=("learned", "tune")):
    """Per program, per variant and auto2 (A/A): the paired ratios' (median, low, high) and
    their number; {program: {variant: (stat, n)}}."""
    out = collections.defaultdict(dict)
    for variant in (*variants, "auto2"):
        for prog, xs in paired_ratios(totals, variant).items():
            out[prog][variant] = (median_interval(xs), len(xs))
    return dict(out)


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def session_runs(folder, program, n):
    """What `gridsel tune` recorded in its runs.csv (a row per run): {"all": (runs, wall s),
    "tuning": ..., "confirm": ...} (confirm: the confirmation pairs' runs, with and without the
    learned store, or the alternating runs that replace them), and "kept": (searches written, searches the pairs decided) as its kernels.csv
    says (the decision is gridsel's; this only counts it); or None when it wrote no runs.csv."""
    session = os.path.join(folder, "sessions", f"{program}-{n}")
    rows = read_csv(os.path.join(session, "runs.csv"))
    if not rows:
        return None
    decided = read_csv(os.path.join(session, "kernels.csv"))
    spent = lambda kinds: (sum(r["kind"] in kinds for r in rows),
                           sum(float(r["wall_s"]) for r in rows if r["kind"] in kinds))
    kinds = {r["kind"] for r in rows}
    return {"all": spent(kinds), "tuning": spent({"tuning"}),
            "confirm": spent({"confirm-auto", "confirm-learned", "confirm-alternating"}),
            "kept": (sum(r["kept"] == "yes" for r in decided), len(decided))}


def judge(cs, totals, sessions):
    """The issue's targets from the cases, the paired runs and the sessions (module doc). Only
    programs whose session succeeded count for the learned grids (elsewhere `learned` is auto);
    a repeated kernel counts where its program's session asked <= 3 runs (a program with
    once-per-run kernels is tuned for 10), a once-per-run kernel where it asked <= 10."""
    tuned = {s["program"]: int(s["runs_asked"]) for s in sessions if s["rc"] == "0"}
    groups = {"repeated": [], "once": []}
    for c, v in cs.items():
        if c[0] not in tuned or "learned" not in v["grid"] or "auto" not in v["grid"]:
            continue
        group = "repeated" if v["launches"] >= REPEATED else "once" if v["launches"] == 1 else None
        if group and tuned[c[0]] <= SESSION_RUNS[group]:
            groups[group].append(c)
    t = {}
    for group, members in groups.items():
        share = geomean([cs[c]["median"][cs[c]["best"]] / cs[c]["median"][cs[c]["grid"]["learned"]]
                         for c in members])
        t[group] = dict(cases=len(members), share=share, met=bool(members) and share >= SHARE,
                        runs=max((tuned[c[0]] for c in members), default=0))
    judged = [c for c, v in cs.items() if c[0] in tuned and "learned" in v["grid"] and "auto" in v["grid"]]
    slower = [(c, cs[c]["median"][cs[c]["grid"]["learned"]] / cs[c]["median"][cs[c]["grid"]["auto"]])
              for c in judged]
    slower = sorted(((c, x) for c, x in slower if x > KERNEL_SLACK), key=lambda cx: -cx[1])
    t["kernel"] = dict(slower=slower, met=bool(judged) and not slower, cases=len(judged))
    for key, variant, slack in (("store", "learned", STORE_SLACK), ("online", "tune", ONLINE_SLACK)):
        pairs = sorted((p, r, v[variant] / v["auto"]) for (p, r), v in totals.items()
                       if variant in v and v.get("auto") and (variant == "tune" or p in tuned))
        worst = max((x for *_, x in pairs), default=float("nan"))
        t[key] = dict(pairs=pairs, worst=worst, met=bool(pairs) and worst <= slack,
                      median=statistics.median([x for *_, x in pairs]) if pairs else float("nan"),
                      over=[(p, r, x) for p, r, x in pairs if x > slack])
    # How far auto's own GPU time moves from round to round: the noise those pairs carry.
    autos = collections.defaultdict(list)
    for (p, _), v in totals.items():
        if v.get("auto"):
            autos[p].append(v["auto"])
    t["noise"] = {p: (max(x) - min(x)) / statistics.median(x) for p, x in autos.items() if len(x) >= 2}
    t["best set"] = best_set_shares(cs)
    return t


def best_set_shares(cs):
    """How near the best set, launched together, comes to the per-kernel best: per group
    ("repeated", "once", as judge's), the geomean over the cases the `best` variant launched of
    the best grid's time over the best set's own median launch; {group: (share, cases)}."""
    groups = {"repeated": [], "once": []}
    for v in cs.values():
        group = "repeated" if v["launches"] >= REPEATED else "once" if v["launches"] == 1 else None
        if group and v["best_set"]:
            groups[group].append(v["median"][v["best"]] / statistics.median(v["best_set"]))
    return {group: (geomean(xs), len(xs)) for group, xs in groups.items()}


def program_best(procs, measure="median-sum"):
    """Per program, its GPU time (gpu_time's `measure`) under each production variant (median over
    the rounds) and under the best fixed grid of the panel (per grid the median of its panel
    runs, then the lowest): {program: {"variants": {variant: ns}, "best": (grid, ns)}}.

    This is the whole program against one grid for all its kernels, what a user can choose
    without gridsel; the per-kernel best of the Kernels table picks each kernel's grid from
    another run, which in a time-stepping code, whose kernels' times depend on their
    neighbours' grids, no single run reaches. The best grid is the lowest of one or two runs
    per grid, so it carries the noise's luck: the shares against it are the low side."""
    variants = collections.defaultdict(lambda: collections.defaultdict(list))
    grids = collections.defaultdict(lambda: collections.defaultdict(list))
    for (prog, src, rnd), rows in procs.items():
        if src == "panel":
            grids[prog][rnd.rsplit(".", 1)[0]].append(gpu_time(rows, measure))
        else:
            variants[prog][src].append(gpu_time(rows, measure))
    out = {}
    for prog, by_grid in grids.items():
        grid, ns = min(((g, statistics.median(x)) for g, x in by_grid.items()), key=lambda gx: gx[1])
        out[prog] = {"variants": {v: statistics.median(x) for v, x in variants[prog].items()},
                     "best": (grid.replace("_", "x"), ns)}
    return out


# ----------------------------------------------------------------------------- within one process

def read_sides(folder):
    """{(program, variant, round): {(kernel, class): row}} of the alternating runs' splits in
    FOLDER/sides/PROGRAM.ROUND.VARIANT.csv, as `gridsel-research sides` wrote them from each run's
    profile (the split, its parity and its median-sums are gridsel's, the very code that splits
    a `gridsel tune` session's alternating runs; nothing of it is redone here). VARIANT is an
    ALTERNATING variant, WITHIN_AA (a plain auto run split by the round's parity: the A/A) or
    PANEL_ALT + "T_B" (the within panel: ROUND is the panel round). Failed runs are left out."""
    bad = lambda r: r["rc"] != "0" or r["check"] != "pass"
    failed = {(r["program"], r["variant"], r["round"]) for r in read_csv(os.path.join(folder, "runs.csv"))
              if bad(r)}
    failed |= {(r["program"], PANEL_ALT + r["grid"].replace(",", "_"), r["round"])
               for r in read_csv(os.path.join(folder, "panel-alt.csv")) if bad(r)}
    out = {}
    for path in glob.glob(os.path.join(folder, "sides", "*.csv")):
        prog, rnd, variant = os.path.basename(path)[:-4].rsplit(".", 2)
        if (prog, variant, rnd) not in failed:
            out[(prog, variant, int(rnd))] = {(r["kernel"], int(r["class"])): r for r in read_csv(path)}
    return out


def split(row):
    """Whether a search of a `sides` row had launches on both sides (a search launched once or
    twice a run has none on one: the session leaves it out of both, and so does the report)."""
    return bool(row["auto_launches"] and row["learned_launches"])


def side_ratio(rows, measure):
    """The learned side's GPU time over auto's in one alternating run: `measure` "median-sum"
    (the sum of the searches' median-sum columns) or "plain" (of their scaled sums), over the
    searches split on both sides; None when none was."""
    column = {"median-sum": "median_sum_ns", "plain": "sum_ns"}[measure]
    both = [r for r in rows.values() if split(r)]
    auto = sum(float(r["auto_" + column]) for r in both)
    return sum(float(r["learned_" + column]) for r in both) / auto if auto > 0 else None


def within_ratios(sides, variant, measure):
    """{program: [side_ratio per round]} of `variant`'s runs."""
    out = collections.defaultdict(list)
    for (prog, v, _), rows in sorted(sides.items()):
        x = side_ratio(rows, measure) if v == variant else None
        if x is not None:
            out[prog].append(x)
    return dict(out)


def search_ratios(sides, variant):
    """{(program, kernel, class): [the learned side's median launch over auto's, per run]} of
    `variant`'s runs, and {(program, kernel, class): (run's launches, learned side's grids)}."""
    ratios, what = collections.defaultdict(list), {}
    for (prog, v, _), rows in sorted(sides.items()):
        if v != variant:
            continue
        for (k, c), r in rows.items():
            if split(r) and float(r["auto_median_ns"]) > 0:
                ratios[(prog, k, c)].append(float(r["learned_median_ns"]) / float(r["auto_median_ns"]))
                what[(prog, k, c)] = (int(r["launches"]), r["learned_grids"])
    return dict(ratios), what


def panel_programs(sides):
    """{program: {grid: median over its panel rounds of the run's side_ratio (plain)}} of the
    within panel: each grid launched for every kernel at once against auto's grids in the same
    run, the whole program's GPU time. Grids as blocks x threads."""
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for (prog, v, _), rows in sides.items():
        x = side_ratio(rows, "plain") if v.startswith(PANEL_ALT) else None
        if x is not None:
            threads, blocks = v[len(PANEL_ALT):].split("_")
            by[prog][f"{blocks}x{threads}"].append(x)
    return {p: {g: statistics.median(x) for g, x in grids.items()} for p, grids in by.items()}


def within_best(sides):
    """Per search the within panel's best: {(program, kernel, class): (grid, r)} with r the
    lowest over its panel grids g of the median over g's runs of the search's median launch on
    g over its median on auto's grid in the same run; auto's own grid (r = 1) is a candidate.
    Grids as the side launched them (`sides`, blocks x threads): a grid a kernel cannot run is cut
    to its safe range by gridsel, as under fixed:T,B. The lowest of several noisy medians, so a
    low-side estimate, as the per-kernel best across processes is."""
    by = collections.defaultdict(lambda: collections.defaultdict(list))
    for (prog, v, _), rows in sides.items():
        if not v.startswith(PANEL_ALT):
            continue
        for (k, c), r in rows.items():
            if split(r) and float(r["auto_median_ns"]) > 0:
                # The grid the side launched: the panel's, cut to the kernel's safe range.
                by[(prog, k, c)][r["learned_grids"]].append(
                    float(r["learned_median_ns"]) / float(r["auto_median_ns"]))
    out = {}
    for search, grids in by.items():
        out[search] = min([("auto", 1.0)] + [(g, statistics.median(x)) for g, x in grids.items()],
                          key=lambda gx: gx[1])
    return out


def changed_searches(sides, variant):
    """{(program, kernel, class)} of the searches whose `variant` runs launched, in some run,
    other grids on the learned side than on auto's."""
    return {(prog, k, c) for (prog, v, _), rows in sides.items() if v == variant
            for (k, c), r in rows.items() if split(r) and r["learned_grids"] != r["auto_grids"]}


def cannot_alternate(cs, sides, variant):
    """Programs whose store (`variant`'s, ALTERNATING) changes a search its alternating runs do
    not split: a case whose grid under the store's across-process variant is not auto's and
    whose search had no launch on a side (launched once or twice a run). Its learned grid is
    never launched there, so those runs do not measure the store; {program: [short kernel]}."""
    store = ALTERNATING[variant]
    out = collections.defaultdict(set)
    for (prog, v, _), rows in sides.items():
        if v != variant:
            continue
        for (k, _), r in rows.items():
            if split(r):
                continue
            for trip in map(int, r["trip_counts"].split()):
                g = cs.get((prog, k, trip), {}).get("grid", {})
                if store in g and g[store] != g.get("auto"):
                    out[prog].add(short(k))
    return {p: sorted(ks) for p, ks in out.items()}


def within(cs, sides, sessions):
    """Everything the report says within one process: per measure the program tables ({program:
    {variant: (stat, n)}} for WITHIN_AA and the ALTERNATING variants), the per-search ratios
    with their intervals, the within panel's best, the programs that cannot alternate, and the
    targets judged within process."""
    tuned = {s["program"] for s in sessions if s["rc"] == "0"}
    tables = {}
    for measure in MEASURES:
        table = collections.defaultdict(dict)
        for variant in (WITHIN_AA, *ALTERNATING):
            for prog, xs in within_ratios(sides, variant, measure).items():
                table[prog][variant] = (median_interval(xs), len(xs))
        tables[measure] = dict(table)
    searches = {v: search_ratios(sides, v) for v in ALTERNATING}
    stats = {v: {c: (median_interval(xs), len(xs)) for c, xs in searches[v][0].items()} for v in ALTERNATING}
    best = within_best(sides)
    fixed = {v: cannot_alternate(cs, sides, v) for v in ALTERNATING}
    changed = changed_searches(sides, "learned-alt")
    t, verdicts = {}, {}
    for prog, by in sorted(tables["plain"].items()):
        if "learned-alt" in by and prog in tuned and prog not in fixed["learned-alt"]:
            stat, n = by["learned-alt"]
            # A store that launches auto's grids everywhere runs auto's grids: the sides differ
            # by the noise alone, and production by nothing.
            same = not any(c[0] == prog for c in changed)
            verdicts[prog] = ("met", None) if same else bound_verdict(stat, STORE_SLACK, n)
    t["store"] = verdicts
    t["unchanged"] = sorted(p for p in verdicts if not any(c[0] == p for c in changed))
    # A search whose learned side ran auto's grid is on auto's grid: what its time does there
    # is its neighbours' doing, which the program's row judges.
    t["kernel"] = {c: bound_verdict(stat, KERNEL_SLACK, n) for c, (stat, n) in stats["learned-alt"].items()
                   if c[0] in tuned and c[0] not in fixed["learned-alt"] and c in changed}
    shares = [best[c][1] / stat[0] for c, (stat, _) in stats["learned-alt"].items()
              if c in best and c[0] in tuned and c[0] not in fixed["learned-alt"]
              and searches["learned-alt"][1][c][0] >= REPEATED]
    share = geomean(shares)
    t["share"] = dict(share=share, cases=len(shares), met=bool(shares) and share >= SHARE)
    return dict(tables=tables, stats=stats, what={v: searches[v][1] for v in ALTERNATING}, best=best,
                fixed=fixed, targets=t, panel=panel_programs(sides))


def within_lines(w):
    """The report's section "Within one process" (w: `within`'s)."""
    lines = ["", "## Within one process", "",
             "Alternating runs (`learned-alt`: auto reading the session's store, `best-alt`: reading the "
             "best set, each with GRIDSEL_LEARNED_ALTERNATE odd in odd rounds and even in even ones, as "
             "`gridsel tune` confirms) split into their two sides by `gridsel-research sides`, the "
             "session's own split: per search its launches after the first, the store's grid against "
             "auto's, each side weighed as the run's launches. The A/A is a plain `auto` run split by the "
             "same parity: two sides of identical grids. Per program the learned side's GPU time over "
             f"auto's side, median over rounds [{100 * LEVEL:.0f} % bootstrap interval]; plain: the sides' "
             "launch times summed; median-sum: per search its median launch x the run's launches. "
             "A search launched once or twice a run has no launch on one side and is left out of both."]
    fixed = sorted(set(w["fixed"]["learned-alt"]) | set(w["fixed"]["best-alt"]))
    if fixed:
        lines += ["", "Cannot alternate (the store changes a search launched once or twice a run, whose "
                  "learned grid an alternating run never compares with auto's; their across-process rows stand): "
                  + "; ".join(f"{p} ({', '.join(w['fixed']['learned-alt'].get(p, []) or w['fixed']['best-alt'][p])})"
                              for p in fixed) + "."]
    lines += ["", f"| program | GPU time | rounds | A/A (auto, odd vs even) | learned-alt | store <= "
              f"{change(STORE_SLACK)} | best-alt |", "|---|---|---|---|---|---|---|"]
    for prog in sorted({p for table in w["tables"].values() for p in table}):
        for measure in MEASURES:
            by = w["tables"][measure].get(prog, {})
            n = by.get("learned-alt", (None, 0))[1]
            verdict = w["targets"]["store"].get(prog) if measure == "plain" else None
            if prog in w["fixed"]["learned-alt"]:
                cell = "cannot alternate"
            else:
                cell = verdict_cell(verdict, n) if verdict else "-"
            lines.append(f"| {prog} | {measure} | {n} | {interval_cell(by.get(WITHIN_AA))} | "
                         f"{interval_cell(by.get('learned-alt'))} | {cell} | {interval_cell(by.get('best-alt'))} |")
    lines += ["", "Per search (kernel, trip-count class): its median launch on the store's side over auto's side "
              "in the same run, median over rounds [interval]; within best: the within panel's lowest such "
              "ratio over the panel grids, each pinned for every kernel in a store and alternated with auto's "
              "(auto's own grid counts, at 0 %); share: within best over learned's ratio. Grids as blocks x "
              "threads.", "",
              "| program | kernel | class | launches/run | learned grid | learned/auto | best set grid | "
              "best set/auto | within best grid | within best | learned's share |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    searches = sorted(set(w["stats"]["learned-alt"]) | set(w["stats"]["best-alt"]))
    for c in searches:
        cells = []
        for v in ALTERNATING:
            entry = w["stats"][v].get(c)
            cells += [w["what"][v][c][1] if entry else "-", interval_cell(entry)]
        n = (w["what"]["learned-alt"].get(c) or w["what"]["best-alt"].get(c))[0]
        best = w["best"].get(c)
        learned = w["stats"]["learned-alt"].get(c)
        share = pct(best[1] / learned[0][0]) if best and learned else "-"
        lines.append(f"| {c[0]} | {short(c[1])} | {c[2]} | {n} | " + " | ".join(cells) +
                     f" | {best[0] if best else '-'} | {change(best[1]) if best else '-'} | {share} |")
    if w["panel"]:
        lines += ["", "The within panel's whole programs: each panel grid launched for every kernel at once, "
                  "against auto's grids in the same run, the program's GPU time (plain), median over the panel "
                  "rounds. Beside the per-search within best above: a kernel's best there was measured with "
                  "every other kernel on the same grid, which no assignment of one grid per kernel keeps for "
                  "all of them at once.", "",
                  "| program | grids | fastest | median over grids | slowest |", "|---|---|---|---|---|"]
        for prog, grids in sorted(w["panel"].items()):
            ranked = sorted(grids.items(), key=lambda gx: gx[1])
            lines.append(f"| {prog} | {len(ranked)} | {ranked[0][0]} {change(ranked[0][1])} | "
                         f"{change(statistics.median(grids.values()))} | {ranked[-1][0]} {change(ranked[-1][1])} |")
    return lines


def within_target_lines(w):
    """The targets table's rows judged within one process."""
    t = w["targets"]
    counts = collections.Counter(v for v, _ in t["store"].values())
    fixed = ", ".join(sorted(w["fixed"]["learned-alt"]))
    store_numbers = (f"met in {counts['met']}, not met in {counts['not met']}, not told apart in "
                     f"{counts['not told apart']}, too few rounds in {counts['too few rounds']} of "
                     f"{len(t['store'])} programs"
                     + (f" ({', '.join(t['unchanged'])}: the store launches auto's grids)" if t["unchanged"] else "")
                     + (f"; cannot alternate: {fixed} (across-process rows above)" if fixed else ""))
    kcounts = collections.Counter(v for v, _ in t["kernel"].values())
    over = [(c, stat) for c, (stat, _) in w["stats"]["learned-alt"].items()
            if t["kernel"].get(c, ("met",))[0] in ("not met", "not told apart")]
    over_txt = ", ".join(f"{c[0]} {short(c[1])} {change(stat[0])} [{change(stat[1])[:-2]}, {change(stat[2])[:-2]}]"
                         for c, stat in sorted(over, key=lambda cs: -cs[1][0])[:5])
    share = t["share"]
    return [
        f"| within one process: production with the store vs auto, GPU time (plain) per program: the "
        f"median over rounds of the learned side over auto's side, its {100 * LEVEL:.0f} % interval <= "
        f"{change(STORE_SLACK)} | {summary_mark(counts, len(t['store']))} | {store_numbers} |",
        f"| within one process: no kernel > {100 * (KERNEL_SLACK - 1):.0f} % slower than auto's grid (per search "
        f"the store gives another grid, the median over rounds of its learned side's median launch over auto's "
        f"side's, its interval) | "
        f"{summary_mark(kcounts, len(t['kernel']))} | met in {kcounts['met']}, not met in {kcounts['not met']}, not "
        f"told apart in {kcounts['not told apart']}, too few rounds in {kcounts['too few rounds']} of "
        f"{len(t['kernel'])} searches{'; not met or not told apart: ' + over_txt if over_txt else ''} |",
        f"| within one process: learned >= {100 * SHARE:.0f} % of the per-kernel best (the within panel; "
        f"repeated kernels) | {mark(share['met']) if share['cases'] else 'no within panel (--panel-alt)'} | "
        f"{pct(share['share']) if share['cases'] else '-'} over {share['cases']} searches |",
    ]


def paired_targets(tables, sessions):
    """Per bound ("store": learned within STORE_SLACK, "online": tune within ONLINE_SLACK) and
    measure: {"verdicts": {program: (verdict, rounds that would tell)}} from noise_table's per
    measure `tables`; the store's only for programs whose session succeeded."""
    tuned = {s["program"] for s in sessions if s["rc"] == "0"}
    out = {}
    for key, variant, slack in (("store", "learned", STORE_SLACK), ("online", "tune", ONLINE_SLACK)):
        for measure, table in tables.items():
            verdicts = {}
            for prog, by in sorted(table.items()):
                if variant in by and (variant == "tune" or prog in tuned):
                    stat, n = by[variant]
                    verdicts[prog] = bound_verdict(stat, slack, n)
            out[(key, measure)] = verdicts
    return out


def interval_cell(entry):
    """(stat, n) -> "+0.3 % [-2.1, +4.0]"."""
    if not entry:
        return "-"
    (med, low, high), _ = entry
    return f"{change(med)} [{change(low)[:-2]}, {change(high)[:-2]}]"


def verdict_cell(verdict, rounds):
    """bound_verdict's (verdict, rounds that would tell) at `rounds` rounds, as a table cell."""
    if not verdict:
        return "-"
    what, need = verdict
    if what == "too few rounds":
        return f"no verdict from {rounds} rounds (fewer than {MIN_ROUNDS})"
    if what != "not told apart":
        return mark(what == "met")
    told = f"{rounds_to_tell(need)} would tell" if need else "on the bound"
    return f"not told apart from the noise at {rounds} rounds ({told})"


def rounds_to_tell(need):
    """The rounds that would tell, as the report writes them ("over 1000" where a measurement of
    that size is out of reach anyway); "-" when the median sits on the bound."""
    if not need:
        return "-"
    return "over 1000" if need > 1000 else f"~{need}"


def summary_mark(counts, programs):
    """The per-program bound over all programs: met where every program's is, not met where
    one's is not, else not told apart (some programs' intervals straddle the bound); "-" with
    nothing to judge."""
    if not programs:
        return "-"
    if counts["met"] == programs:
        return mark(True)
    if counts["not met"]:
        return mark(False)
    if counts["too few rounds"] == programs:
        return f"no verdict (fewer than {MIN_ROUNDS} rounds)"
    return "not told apart"


def mark(ok):
    return "**met**" if ok else "**not met**"


def pct(x):
    return "-" if x != x else f"{100 * x:.1f} %"


def change(ratio):
    """A ratio as a signed change: 1.023 -> "+2.3 %"."""
    return "-" if ratio != ratio else f"{100 * (ratio - 1):+.1f} %"


def sweep_reference(sweep):
    """{(program, short kernel, trip): the sweep's best median (ns)}, from raw CSVs."""
    out = {}
    for path in glob.glob(os.path.join(sweep, "raw", "*.csv.gz")):
        by = collections.defaultdict(lambda: collections.defaultdict(list))
        for r in read_rows(path):
            if r["warmup"] == "0":
                by[(r["program"], short(r["kernel"]), int(r["trip_count"]))][(r["threads"], r["blocks"])].append(
                    int(r["ns"]))
        for c, grids in by.items():
            meds = [statistics.median(v) for v in grids.values() if len(v) >= 3]
            if meds:
                out[c] = min(meds)
    return out


def report(folder, sweep=None):
    procs = load_processes(folder)
    cs = cases(procs)
    totals = run_totals(procs)
    has_best = any(src == "best" for _, src, _ in procs)
    extra = ("best",) if has_best else ()
    tables = {m: noise_table(run_totals(procs, m), ("learned", "tune", *extra)) for m in MEASURES}
    sessions = read_csv(os.path.join(folder, "sessions.csv"))
    runs = read_csv(os.path.join(folder, "runs.csv"))
    panel = read_csv(os.path.join(folder, "panel.csv"))
    t = judge(cs, totals, sessions)
    t["paired"] = paired_targets(tables, sessions)
    sides = read_sides(folder)
    w = within(cs, sides, sessions) if sides else None
    ref = sweep_reference(sweep) if sweep else {}
    rounds = sorted({int(r["round"]) for r in runs})
    panel_alt = read_csv(os.path.join(folder, "panel-alt.csv"))
    failed = [r for r in runs + panel + panel_alt if r["rc"] != "0" or r["check"] != "pass"]
    lines = ["# gridsel tune: sessions, learned grids in production, online tune", "",
             "Generated by `bench/harness/tune_session_report.py` from a `bench/gpu/tune-session.sh` "
             "folder; the method is in that script's and this report's module documentation.", "",
             f"- Programs: {len(sessions)}; kernels (program, kernel, trip count): {len(cs)}; production "
             f"rounds: {len(rounds)} (auto without store, auto again (A/A), auto with the learned store, "
             f"llvm, online tune{', the best set' if has_best else ''}"
             f"{', the learned store and the best set alternating with auto in one process' if w else ''}, "
             "order rotated each round); "
             f"fixed-grid panel runs: {len(panel)}"
             + (f"; within panel runs (each grid alternating with auto's): {len(panel_alt)}" if panel_alt else "")
             + ".",
             f"- Runs failed or unchecked (exit status, the program's own check): {len(failed)}"
             + (": " + ", ".join(f"{r['program']} {r.get('variant', r.get('grid', ''))}" for r in failed[:8])
                if failed else "") + ".",
             f"- Sessions that failed (their programs' learned grids not judged): "
             f"{', '.join(s['program'] + ' exit ' + s['rc'] for s in sessions if s['rc'] != '0') or 'none'}.", ""]
    lines += ["## Targets", "", "| target | result | numbers |", "|---|---|---|"]
    for group, what in (("repeated", f"kernels launched >= {REPEATED} times per run: learned grids >= "
                         f"{100 * SHARE:.0f} % of the best grid's geomean after <= {SESSION_RUNS['repeated']} "
                         f"session runs"),
                        ("once", f"once-per-run kernels: the same after <= {SESSION_RUNS['once']} runs")):
        g = t[group]
        lines.append(f"| {what} | {mark(g['met']) if g['cases'] else '-'} | {pct(g['share'])} of best over "
                     f"{g['cases']} kernels; "
                     f"session runs asked: {g['runs'] if g['cases'] else '-'} |")
    k = t["kernel"]
    worst = ", ".join(f"{c[0]} {short(c[1])} +{100 * (x - 1):.1f} %" for c, x in k["slower"][:5])
    lines.append(f"| no kernel > {100 * (KERNEL_SLACK - 1):.0f} % slower than auto's grid | {mark(k['met'])} | "
                 f"{len(k['slower'])} of {k['cases']} kernels{': ' + worst if worst else ''} |")
    noise = t["noise"]
    noise_txt = (f"; auto's own GPU time moves by {pct(statistics.median(noise.values()))} between rounds "
                 f"(median over programs, max-min)") if noise else ""
    for key, what, slack in (("store", "production with the store vs auto, GPU time, every paired run",
                              STORE_SLACK), ("online", "online tune vs auto, GPU time, every run", ONLINE_SLACK)):
        s = t[key]
        over = ", ".join(f"{p} round {r} {change(x)}" for p, r, x in s["over"][:5])
        lines.append(f"| {what}: <= {change(slack)} | {mark(s['met'])} | worst "
                     f"{change(s['worst'])}, median {change(s['median'])} over "
                     f"{len(s['pairs'])} pairs{'; over: ' + over if over else ''}"
                     f"{noise_txt if key == 'store' else ''} |")
    for key, what, slack in (("store", "production with the store vs auto", STORE_SLACK),
                             ("online", "online tune vs auto", ONLINE_SLACK)):
        verdicts = t["paired"][(key, "plain")]
        counts = collections.Counter(v for v, _ in verdicts.values())
        undecided = ", ".join(f"{p} {rounds_to_tell(n)}" for p, (v, n) in verdicts.items()
                              if v == "not told apart")
        lines.append(f"| {what}, GPU time per program: the median paired ratio's {100 * LEVEL:.0f} % "
                     f"interval <= {change(slack)} (next section) | "
                     f"{summary_mark(counts, len(verdicts))} | met in {counts['met']}, "
                     f"not met in {counts['not met']}, not told apart from the noise in "
                     f"{counts['not told apart']}, too few rounds in {counts['too few rounds']} of "
                     f"{len(verdicts)} programs"
                     f"{' (rounds that would tell: ' + undecided + ')' if undecided else ''} |")
    t["within"] = w
    if w:
        lines += within_target_lines(w)
    explored = exploring_cost(procs, cs)
    if explored:
        shares = {key: cost / gpu for key, (cost, gpu, _) in explored.items() if cost is not None and gpu > 0}
        over = sorted((kv for kv in shares.items() if kv[1] > ONLINE_SLACK - 1), key=lambda kv: -kv[1])
        unmeasured = sum(u for _, _, u in explored.values())
        # A run with an exploring launch not measured is not known to keep the bound.
        result = mark(False) if over else "met where measured" if unmeasured else mark(True)
        worst = max(shares.items(), key=lambda kv: kv[1]) if shares else None
        lines.append(f"| online tune's exploring within its own run (`{TRIAL_LABEL}` launches over their "
                     f"search's other launches in the run): <= {100 * (ONLINE_SLACK - 1):.0f} % of the run's "
                     f"GPU time, every run | {result} | "
                     + (f"worst {worst[0][0]} round {worst[0][1]} {100 * worst[1]:+.1f} %, median "
                        f"{100 * statistics.median(shares.values()):+.1f} % over " if worst else "")
                     + f"{len(shares)} of {len(explored)} runs that explored another grid than auto's measured"
                     + (("; over: " + ", ".join(f"{p} round {r} {100 * x:+.1f} %" for (p, r), x in over[:5]))
                        if over else "")
                     + (f"; {unmeasured} exploring launches cold or without another warm launch of "
                        "their search in the run, not measured" if unmeasured else "") + " |")
    whole = program_best(procs)
    tuned = {s["program"] for s in sessions if s["rc"] == "0"}
    if has_best:
        shares = t["best set"]
        lines.append("| the best set launched together (each kernel's fastest grid in the panel, pinned), share of "
                     "the per-kernel best | - | " + ", ".join(
                         f"{pct(share)} ({what}, {n} kernels)" for what, (share, n) in
                         (("repeated kernels", shares["repeated"]), ("once-per-run", shares["once"]))) + " |")
        vs = {p: median_interval(xs) for p, xs in sorted(paired_ratios(
            run_totals(procs, "median-sum"), "learned", base="best").items()) if p in tuned}
        lines.append("| learned vs the best set, program GPU time (median-sum): per program the median "
                     f"paired ratio over rounds [{100 * LEVEL:.0f} % interval], geomean of the medians | - | "
                     f"{change(geomean([m for m, _, _ in vs.values()]))}"
                     + (": " + ", ".join(f"{p} {interval_cell((stat, len(vs)))}"
                                         for p, stat in vs.items()) if vs else "") + " |")
        lines += ["", "The best set is every kernel's fastest grid of the panel runs (best-set.csv), "
                  "pinned in one store and launched together in production runs (auto reading it; its "
                  "launches profiled `learned` took a pinned grid). The per-kernel best takes each kernel's "
                  "grid from another run; in a time-stepping code a kernel's time depends on what its "
                  "neighbours leave in L2, so no assignment of grids may reach it. The best set is the "
                  "assignment that comes nearest by construction and is measured as it runs: the reachable "
                  "ceiling for learned grids. Its launches are timed apart (not pooled into the grids' times); "
                  "the per-kernel best is the lowest of the grids' medians, so it carries the noise's luck "
                  "(the low side), which the best set's own launches do not."]
    if w:
        lines += within_lines(w)
    lines += ["", "## Paired GPU time and its noise", "",
              f"Per program: the median over rounds of a run's GPU time over auto's in the same round, "
              f"and a bootstrap {100 * LEVEL:.0f} % interval of that median ({BOOTSTRAP} resamples of "
              f"the rounds, seed {SEED}); A/A is auto2 over auto, identical configurations: the noise. "
              "plain: the sum of every launch; median-sum: per kernel and trip count the median launch "
              "time times the launches (outlier and exploring launches weigh as a typical one). A bound "
              "is met when the interval is at or below it, not met when above it; otherwise the rounds "
              "that would tell are estimated from the interval shrinking as 1/sqrt(rounds).", "",
              "| program | GPU time | rounds | A/A (auto2) | with the store | store <= "
              f"{change(STORE_SLACK)} | online tune | online <= {change(ONLINE_SLACK)} |"
              + (" best set |" if has_best else ""),
              "|---|---|---|---|---|---|---|---|" + ("---|" if has_best else "")]
    for prog in sorted({p for table in tables.values() for p in table}):
        for measure in MEASURES:
            by = tables[measure].get(prog, {})
            n = max((entry[1] for entry in by.values()), default=0)
            lines.append(f"| {prog} | {measure} | {n} | {interval_cell(by.get('auto2'))} | "
                         f"{interval_cell(by.get('learned'))} | "
                         f"{verdict_cell(t['paired'][('store', measure)].get(prog), n)} | "
                         f"{interval_cell(by.get('tune'))} | "
                         f"{verdict_cell(t['paired'][('online', measure)].get(prog), n)} |"
                         + (f" {interval_cell(by.get('best'))} |" if has_best else ""))
    lines += ["", "## Kernels", "",
              "Time of each kernel's launch under a grid: the grid's median (ms) over every launch of it "
              "in this folder; share = best / that." + (" best set: best / the best set's own median "
                                                        "launch (its grids launched together)." if has_best else ""),
              "",
              "| program | kernel | trip count | launches/run | best grid | best ms | auto grid | auto | "
              "learned grid | learned | llvm | online tune's most used grid | online |"
              + (" best set |" if has_best else "") + (" sweep best ms |" if ref else ""),
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if has_best else "")
              + ("---|" if ref else "")]
    for c in sorted(cs):
        v = cs[c]
        best = v["median"][v["best"]]
        cell = []
        for src in ("auto", "learned", "llvm", "tune"):
            g = v["grid"].get(src)
            share = f"{100 * best / v['median'][g]:.1f} %" if g in v["median"] else "-"
            cell += [f"{g[0]}x{g[1]}" if g else "-", share]
        row = [c[0], short(c[1]), str(c[2]), str(v["launches"]), f"{v['best'][0]}x{v['best'][1]}",
               f"{best / 1e6:.4f}", *cell[:4], cell[5], cell[6], cell[7]]
        if has_best:
            row.append(pct(best / statistics.median(v["best_set"])) if v["best_set"] else "-")
        if ref:
            x = ref.get((c[0], short(c[1]), c[2]))
            row.append(f"{x / 1e6:.4f}" if x else "-")
        lines.append("| " + " | ".join(row) + " |")
    lines.append("")
    took = {"learned": "the store's grid", "best": "the best set's pinned grid"}
    for variant in ("learned", *extra):
        from_store, launched = collections.Counter(), collections.Counter()
        for c, v in cs.items():
            launched[c[0]] += sum(v["labels"][variant].values())
            from_store[c[0]] += v["labels"][variant].get("learned", 0)
        lines += [f"Launches of the `{variant}` variant that took {took[variant]} (profiled `learned`), per "
                  "program: " + ", ".join(f"{p} {from_store[p]}/{launched[p]}" for p in sorted(launched))
                  + ".", ""]
    lines += ["## Whole programs", "",
              "Wall time (ms) of each variant's runs, median over the rounds; GPU time = the sum of a run's "
              "launches, median over rounds.", "",
              "| program | N | auto | learned | llvm | online tune |" + (" best set |" if has_best else "")
              + " learned GPU vs auto | tune GPU vs auto |",
              "|---|---|---|---|---|---|---|---|" + ("---|" if has_best else "")]
    wall = collections.defaultdict(list)
    for r in runs:
        wall[(r["program"], r["n"], r["variant"])].append(float(r["ms"]))
    for prog, n in sorted({(r["program"], r["n"]) for r in runs}):
        cells = [f"{statistics.median(wall[(prog, n, v)]):.0f}" if wall[(prog, n, v)] else "-"
                 for v in ("auto", "learned", "llvm", "tune", *extra)]
        ratio = {}
        for v in ("learned", "tune"):
            xs = [tot[v] / tot["auto"] for (p, _), tot in totals.items() if p == prog and v in tot and tot.get("auto")]
            ratio[v] = change(statistics.median(xs)) if xs else "-"
        lines.append(f"| {prog} | {n} | " + " | ".join(cells) + f" | {ratio['learned']} | {ratio['tune']} |")
    lines += ["", "## Whole programs against the best fixed grid", "",
              "GPU time as the sum over kernels of median launch time x launches, median over the rounds, "
              "against the panel's best single grid for the whole program (threads x blocks; per grid the "
              "median of its runs, then the lowest: the low side, see `program_best`); share = best / "
              "variant's.", "",
              "| program | best grid | best ms | auto | learned | online tune | llvm |"
              + (" best set |" if has_best else ""),
              "|---|---|---|---|---|---|---|" + ("---|" if has_best else "")]
    shares = collections.defaultdict(list)
    for prog in sorted(whole):
        b = whole[prog]
        cells = []
        for v in ("auto", "learned", "tune", "llvm", *extra):
            ns = b["variants"].get(v)
            cells.append(pct(b["best"][1] / ns) if ns else "-")
            if ns and (v != "learned" or prog in tuned):
                shares[v].append(b["best"][1] / ns)
        lines.append(f"| {prog} | {b['best'][0]} | {b['best'][1] / 1e6:.2f} | " + " | ".join(cells) + " |")
    lines.append("| geomean | | | " + " | ".join(pct(geomean(shares[v])) if shares[v] else "-"
                                                  for v in ("auto", "learned", "tune", "llvm", *extra)) + " |")
    lines += ["", "## The sessions' cost", "",
              "The runs' wall times from the session's runs.csv: tuning runs, and the confirmation pairs' "
              "runs (auto with and without the learned store; more pairs while they disagree) apart; wall "
              "s: the whole session; kept: the searches the pairs decided that were written (kernels.csv).",
              "", "| program | N | runs asked | runs | tuning runs | tuning s | confirmation runs | "
              "confirmation s | kept | wall s | exit |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    total_s, total_runs, total = 0.0, 0, collections.Counter()
    for s in sessions:
        done = session_runs(folder, s["program"], s["n"])
        total_s += float(s["wall_ms"]) / 1e3
        if done:
            total_runs += done["all"][0]
            for kind in ("tuning", "confirm"):
                total[kind] += done[kind][0]
                total[kind + "_s"] += done[kind][1]
            cells = [str(done["all"][0])] + [f"{done[k][0]} | {done[k][1]:.1f}" for k in ("tuning", "confirm")]
            cells.append("%d of %d" % done["kept"])
        else:
            cells = ["no runs.csv", "- | -", "- | -", "-"]
        lines.append(f"| {s['program']} | {s['n']} | {s['runs_asked']} | {' | '.join(cells)} | "
                     f"{float(s['wall_ms']) / 1e3:.1f} | {s['rc']} |")
    lines += ["", f"In all: {total_runs} program runs, {total_s:.1f} s of wall time; tuning: {total['tuning']} "
              f"runs, {total['tuning_s']:.1f} s; confirming: {total['confirm']} runs, {total['confirm_s']:.1f} s."]
    text = "\n".join(lines) + "\n"
    with open(os.path.join(folder, "tune-session.md"), "w") as f:
        f.write(text)
    return text, t


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("plan")
    p.add_argument("folder")
    p.add_argument("program")
    p.add_argument("--sweep")
    p.add_argument("--summary")
    p.add_argument("--spread", action="store_true")
    p.add_argument("--sms", type=int, default=132)
    r = sub.add_parser("report")
    r.add_argument("folder")
    r.add_argument("--sweep")
    bs = sub.add_parser("best-set")
    bs.add_argument("folder")
    bs.add_argument("--store", required=True, action="append",
                    help="a store gridsel wrote on the device (its name); more than one may be given")
    bs.add_argument("--gridsel", required=True, help="the gridsel CLI (gridsel-research beside it)")
    bs.add_argument("--out", required=True, help="the best set's store")
    ps = sub.add_parser("panel-store")
    ps.add_argument("folder")
    ps.add_argument("program")
    ps.add_argument("grid", help="THREADS,BLOCKS")
    ps.add_argument("--store", required=True, action="append",
                    help="a store gridsel wrote on the device (its name); more than one may be given")
    ps.add_argument("--gridsel", required=True, help="the gridsel CLI (gridsel-research beside it)")
    ps.add_argument("--out", required=True, help="the store pinning the grid")
    a = ap.parse_args(argv)
    if a.cmd == "plan":
        rounds, grids = plan(a.folder, a.program, a.sweep, a.summary, a.spread, a.sms)
        print(rounds, *(f"{t},{b}" for t, b in grids))
    elif a.cmd == "best-set":
        try:
            rows = write_best_set(a.folder, a.store, a.gridsel, a.out)
        except (OSError, ValueError, RuntimeError) as e:
            print(f"tune_session_report.py best-set: {e}", file=sys.stderr)
            return 1
        print(f"{a.out}: {len(rows)} grids pinned on {rows[0]['device']}")
    elif a.cmd == "panel-store":
        try:
            threads, blocks = (int(x) for x in a.grid.split(","))
            rows = write_panel_store(a.folder, a.program, (threads, blocks), a.store, a.gridsel, a.out)
        except (OSError, ValueError, RuntimeError) as e:
            print(f"tune_session_report.py panel-store: {e}", file=sys.stderr)
            return 1
        print(f"{a.out}: {a.grid} pinned for {len(rows)} kernels and trip counts")
    else:
        print(report(a.folder, a.sweep)[0], end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
