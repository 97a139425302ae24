#!/usr/bin/env python3
"""The upstream mini-apps' runs (bench/gpu/realapps.sh run) as a harness results folder.

    python3 bench/harness/realapps.py convert RUNS_DIR RESULTS --bin-dir bench/build/realapps/bin
    python3 bench/harness/gridsel_bench.py summarize RESULTS --min-samples 2
    python3 bench/harness/realapps.py retime RETIME_RUNS_DIR RESULTS
    python3 bench/harness/realapps.py production TUNE_RUNS_DIR RESULTS
    python3 bench/harness/realapps.py assignment RESULTS [--production DIR]
    python3 bench/harness/realapps.py online RUNS_DIR OUT_CSV

RUNS_DIR is what realapps.sh wrote ($OUT/realapps: runs.csv, env.txt, ENTRY/*.csv profiles).
A run made under ncu (TIMER=ncu) is timed by ncu's device time of each launch instead of the
profile's wall time. RESULTS gets, as `gridsel_bench.py run` writes them, raw/ENTRY-0.csv.gz and jobs.jsonl (one
job per entry, `group: upstream`), so that `gridsel_bench.py summarize` and `report` read them
like the suite's sweeps. Per run, each kernel's first launch is its warm-up (left out) unless
the kernel is launched once a run, whose single launch is then the sample. Runs that failed
their program's check are left out whole. A panel run's launches are labelled with the policy
that chose them (`llvm`, `auto`, ...); a fixed grid's are `grid` points, as the sweep's are.
Entries whose two names share a binary (prk-stencil-grid, prk-transpose-flat) get a link
under RESULTS/bin so that `gridsel select` finds each entry's image.
"""

import argparse
import csv
import gzip
import json
import math
import os
import statistics
import sys
from collections import Counter, defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gridsel_harness.crosscheck import ncu_rows  # noqa: E402
from gridsel_harness.programs import LLVM_VERSION, read_profile  # noqa: E402
from gridsel_harness.results import RAW_HEADER, SUMMARY_HEADER  # noqa: E402

# Entry -> the binary it runs, where the two differ (shared/realapps/progs.sh).
BINARY = {"prk-stencil-grid": "prk-stencil", "prk-transpose-flat": "prk-transpose"}


METHOD = [
    "Programs: the upstream mini-apps of shared/realapps (their own sources, licences and checks), "
    "built with clang 19 for sm_90 (`bench/gpu/realapps.sh stage`), at the benchmark size of their table; "
    "every run passed its program's own check.",
    "Sweep entries (kernels launched every step): one run under `GRIDSEL_POLICY=sweep` with the steps "
    "raised, every point of `gridsel-research space` (the policies' grids first) interleaved in one process, "
    "timed by Nsight Compute (`gpu__time_duration.sum`, `--clock-control none`): device time only, "
    "also for `nowait` regions; each kernel's first launch left out.",
    "Panel entries (XSBench, RSBench, miniBUDE: kernels launched once or a few times a run): one run per "
    "policy and per fixed grid of the panel (13 grids of 64-1024 threads), in rotating order, 3 rounds "
    "(miniBUDE 1), timed by the profile's wall time of the launch (kernels of 25 ms to 0.9 s, so the "
    "launch's ~20 us is below 0.1 %).",
    "Best: the sweep's fastest point, then re-timed (sweep entries) against auto's grid within one process: "
    "auto reading a store that pins it, alternating launch by launch with auto's grid, once with best on odd "
    "launches and once on even ones; the row says auto's median over that speedup (retime.csv). Panel "
    "entries keep the panel's fastest.",
]


def run_env(lines):
    """realapps.sh's env.txt (nvidia-smi's "name, driver", the date, the commit) as the
    harness's `environment()` record."""
    gpu, _, driver = (lines[0] if lines else "none, none").rpartition(",")
    return {"gpu": gpu.strip() or "none", "driver": driver.strip(), "date": lines[1] if len(lines) > 1 else "",
            "commit": lines[2] if len(lines) > 2 else "unknown", "llvm": LLVM_VERSION}


def label(config, row_policy):
    """The point's label: a policy's own name, `grid` for the sweep's and fixed panel points."""
    if config == "sweep":
        return row_policy
    return "grid" if config.startswith("fixed:") else config


def first_dim(size):
    """ncu's "(128, 1, 1)" as 128."""
    return int(size.strip("()").split(",")[0])


def device_timed(prof, ncu_text):
    """The profile's rows with `ns` replaced by ncu's device time of the same launch.

    Launches are matched per (kernel, threads, blocks) in order, so that launches ncu saw in
    another order than gridsel forwarded them (`nowait` regions on helper threads) still meet
    their own row; a profile row ncu did not time is dropped."""
    timed = defaultdict(list)
    for name, block, grid, ns in ncu_rows(ncu_text):
        timed[(name, first_dim(block), first_dim(grid))].append(int(ns))
    out = []
    for p in prof:
        q = timed.get((p["kernel"], p["threads"], p["blocks"]))
        if q:
            out.append(dict(p, ns=q.pop(0)))
    return out


def launches(stem):
    """A run's launches (its profile STEM.csv), each timed by ncu's device time where the run was
    under ncu (STEM.ncu.csv), else by the profile's time of the forwarded call."""
    prof = list(read_profile(stem + ".csv"))
    if os.path.exists(stem + ".ncu.csv"):
        with open(stem + ".ncu.csv", errors="replace") as f:
            prof = device_timed(prof, f.read())
    return prof


def convert(runs_dir, results, bin_dir):
    with open(os.path.join(runs_dir, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    env_path = os.path.join(runs_dir, "env.txt")
    env = []
    if os.path.exists(env_path):
        with open(env_path) as f:
            env = f.read().split("\n")
    links = os.path.join(results, "bin")
    os.makedirs(os.path.join(results, "raw"), exist_ok=True)
    os.makedirs(links, exist_ok=True)
    by_entry = defaultdict(list)
    for r in runs:
        by_entry[r["entry"]].append(r)
    jobs = []
    for entry, entry_runs in by_entry.items():
        link = os.path.join(links, entry)
        target = os.path.abspath(os.path.join(bin_dir, BINARY.get(entry, entry)))
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.relpath(target, links), link)  # the results folder moves with the repository
        rows, pairs, failed = [], {}, []
        for r in entry_runs:
            if r["check"] != "pass":
                failed.append(f"{r['config']} round {r['round']}")
                continue
            tag = r["config"].replace(":", "_").replace(",", "_") + f"-r{r['round']}"
            prof = launches(os.path.join(runs_dir, entry, tag))
            per_run = Counter(p["kernel"] for p in prof)
            seen = Counter()
            for p in prof:
                seen[p["kernel"]] += 1
                warm = seen[p["kernel"]] == 1 and per_run[p["kernel"]] > 1
                rows.append([p["kernel"], p["trip_count"], label(r["config"], p["policy"]),
                             p["blocks"], p["threads"], p["ns"], entry, 0, int(warm)])
                pairs.setdefault((p["kernel"], p["trip_count"]), per_run[p["kernel"]])
        with gzip.open(os.path.join(results, "raw", f"{entry}-0.csv.gz"), "wt", newline="") as f:
            w = csv.writer(f)
            w.writerow(RAW_HEADER)
            w.writerows(rows)
        mode = entry_runs[0]["mode"]
        jobs.append({
            "program": entry, "n": 0, "status": "ok" if rows else "failed", "group": "upstream",
            "mode": mode, "runs": len(entry_runs), "failed_runs": failed,
            "wall_s": round(sum(int(r["wall_ms"]) for r in entry_runs) / 1000, 1),
            "bin_dir": os.path.relpath(links),
            "pairs": [{"kernel": k, "trip_count": int(t), "launches_per_run": n}
                      for (k, t), n in sorted(pairs.items())],
            "env": run_env(env), "method": METHOD,
        })
    with open(os.path.join(results, "jobs.jsonl"), "w") as f:
        for j in jobs:
            f.write(json.dumps(j) + "\n")
    return jobs


RETIME_HEADER = ["program", "kernel", "trip_count", "store_threads", "store_blocks", "auto_threads",
                 "auto_blocks", "launches_per_side", "speedup_odd", "speedup_even", "speedup"]


def alternating(runs_dir, prefix):
    """Per (entry, kernel, trip count), from realapps.sh's two alternating runs PREFIX-odd and
    PREFIX-even (auto reading a store, its launches alternating with auto's grid; timed by ncu
    where the run was, else by the profile's time of each launch):
    the store's grid, auto's, the launches per side, and the speedup of the store's grid over
    auto's in each run (median device times, each kernel's first two launches left out as
    cold) and their geometric mean. One process per run: no noise between processes enters."""
    out = {}
    for entry in sorted(os.listdir(runs_dir)):
        per = defaultdict(lambda: defaultdict(list))
        grids = defaultdict(dict)
        for side in ("odd", "even"):
            stem = os.path.join(runs_dir, entry, f"{prefix}-{side}-r1")
            if not os.path.exists(stem + ".csv"):
                continue
            prof = launches(stem)
            seen = Counter()
            for p in prof:
                seen[p["kernel"]] += 1
                if seen[p["kernel"]] <= 2:
                    continue
                key = (p["kernel"], p["trip_count"])
                per[key][(side, p["policy"])].append(p["ns"])
                grids[key][p["policy"]] = (p["threads"], p["blocks"])
        for key, v in sorted(per.items()):
            sides = [statistics.median(v[(s, "auto")]) / statistics.median(v[(s, "learned")])
                     if v.get((s, "auto")) and v.get((s, "learned")) else None for s in ("odd", "even")]
            got = [x for x in sides if x]
            if not got:
                continue
            b, a = grids[key].get("learned", ("", "")), grids[key].get("auto", ("", ""))
            out[(entry, key[0], key[1])] = dict(
                store=b, auto=a, n=min(len(x) for x in v.values()), sides=sides,
                speedup=math.exp(sum(map(math.log, got)) / len(got)))
    return out


def alternating_rows(found):
    return [[e, k, t, r["store"][0], r["store"][1], r["auto"][0], r["auto"][1], r["n"]]
            + [f"{x:.4f}" if x else "" for x in r["sides"]] + [f"{r['speedup']:.4f}"]
            for (e, k, t), r in sorted(found.items())]


def retime(runs_dir, results):
    """The re-timing runs (realapps.sh with RETIME_STORE: best-odd, best-even) against
    summary.csv's best rows: each `best` row then says auto's median over best's speedup over
    auto within one process ([`alternating`]), retime.csv keeps the numbers; a case not
    re-timed keeps the sweep's best."""
    found = alternating(runs_dir, "best")
    with open(os.path.join(results, "retime.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(RETIME_HEADER)
        w.writerows(alternating_rows(found))
    path = os.path.join(results, "summary.csv")
    with open(path) as f:
        rows = list(csv.DictReader(f))
    auto = {(r["program"], r["kernel"], int(r["trip_count"])): float(r["median_ms"])
            for r in rows if r["policy"] == "auto"}
    for r in rows:
        key = (r["program"], r["kernel"], int(r["trip_count"]))
        if r["policy"] == "best" and key in found and key in auto:
            r["median_ms"] = f"{auto[key] / found[key]['speedup']:.6f}"
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_HEADER)
        w.writeheader()
        w.writerows(rows)
    return found


PRODUCTION_HEADER = ["program", "kernel", "trip_count", "judged", "auto_speedup", "production_over_auto",
                     "production_speedup", "best_speedup", "production_share", "auto_share"]


def production(runs_dir, results):
    """A `gridsel tune` session per entry (realapps.sh with TUNE=1), then production (auto reading
    the session's store) against auto: within one process (learned-odd, learned-even) where the
    kernels launch every step, else by the median launch over ROUNDS runs each of auto without
    and with the store. With summary.csv's speedups over LLVM (auto's in the sweep, best's
    re-timed), each kernel's production speedup and its share of best's; production.csv, and
    the sessions' cost (runs.csv's `session` rows) in sessions.csv."""
    within = alternating(runs_dir, "learned")
    with open(os.path.join(runs_dir, "runs.csv")) as f:
        runs = list(csv.DictReader(f))
    pairs = defaultdict(lambda: defaultdict(list))
    grids = defaultdict(lambda: defaultdict(set))
    for r in runs:
        if r["mode"] != "panel" or r["check"] != "pass":
            continue
        tag = r["config"] + f"-r{r['round']}"
        for p in read_profile(os.path.join(runs_dir, r["entry"], f"{tag}.csv")):
            key = (r["entry"], p["kernel"], p["trip_count"])
            pairs[key][r["config"]].append(p["ns"])
            grids[key][r["config"]].add((p["threads"], p["blocks"]))
    # A kernel production launches at auto's grid is auto's by construction: no run judges it.
    speedup, judged = {}, {}
    for k, v in within.items():
        speedup[k], judged[k] = v["speedup"], "one process"
    for k, v in pairs.items():
        if grids[k]["learned"] and grids[k]["learned"] != grids[k]["auto"]:
            speedup[k] = statistics.median(v["auto"]) / statistics.median(v["learned"])
            judged[k] = "pairs of runs"
    table = defaultdict(dict)
    with open(os.path.join(results, "summary.csv")) as f:
        for r in csv.DictReader(f):
            table[(r["program"], r["kernel"], int(r["trip_count"]))][r["policy"]] = float(r["median_ms"])
    entries = {r["entry"] for r in runs if r["mode"] == "session"}
    for k in table:
        if k[0] in entries and k not in speedup:
            speedup[k], judged[k] = 1.0, "auto's grid"
    out = []
    for k in sorted(set(speedup) & set(table)):
        t = table[k]
        a, b = t["llvm"] / t["auto"], t["llvm"] / t["best"]
        prod = a * speedup[k]
        out.append([*k, judged[k], f"{a:.4f}", f"{speedup[k]:.4f}", f"{prod:.4f}", f"{b:.4f}",
                    f"{math.log(prod) / math.log(b) if b > 1.0001 else 1:.4f}",
                    f"{math.log(a) / math.log(b) if b > 1.0001 else 1:.4f}"])
    with open(os.path.join(results, "production.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PRODUCTION_HEADER)
        w.writerows(out)
    with open(os.path.join(results, "sessions.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["program", "rc", "check", "wall_s"])
        w.writerows([r["entry"], r["rc"], r["check"], f"{int(r['wall_ms']) / 1000:.1f}"]
                    for r in runs if r["mode"] == "session")
    return out


ASSIGNMENT_HEADER = ["program", "kernels", "auto_ms_per_run", "best_each_over_auto", "one_grid",
                     "one_grid_over_auto", "best_assignment_over_auto", "auto_share", "occupancy_share",
                     "production_share"]


def assignment(results, production_dir=None, within=None):
    """Per program, its kernels' GPU time per run (each kernel's median launch times its launches
    per run, jobs.jsonl) under auto, occupancy, production (production.csv's speedup over auto
    within one process) and the best assignment: the faster of each kernel's best grid together
    (summary.csv's re-timed best, measured with every kernel's best pinned at once) and one grid
    for all (points.csv: the grid every kernel was swept at whose summed time is least). Each
    policy's share is the best assignment's time over its own. production.csv is read from
    PRODUCTION_DIR (a later session's folder) where given, and assignment.csv written there.
    WITHIN, a folder of realapps.sh's re-timing runs of both stores (`best-*` and `learned-*`,
    RETIME_LABEL), takes both speedups over auto from those runs instead, so that best and
    production are judged under the same conditions (one call, one ncu cache control); one grid
    for all is then not judged (the sweep's conditions differ)."""
    production_dir = production_dir or results
    launches = {}
    with open(os.path.join(results, "jobs.jsonl")) as f:
        for line in f:
            j = json.loads(line)
            for p in j["pairs"]:
                launches[(j["program"], p["kernel"], p["trip_count"])] = p["launches_per_run"]
    table = defaultdict(dict)
    with open(os.path.join(results, "summary.csv")) as f:
        for r in csv.DictReader(f):
            table[(r["program"], r["kernel"], int(r["trip_count"]))][r["policy"]] = float(r["median_ms"])
    over_auto = {}
    if not within:
        with open(os.path.join(production_dir, "production.csv")) as f:
            for r in csv.DictReader(f):
                over_auto[(r["program"], r["kernel"], int(r["trip_count"]))] = float(r["production_over_auto"])
    grids = defaultdict(dict)
    with open(os.path.join(results, "points.csv")) as f:
        for r in csv.DictReader(f):
            grids[(r["program"], r["kernel"], int(r["trip_count"]))][(int(r["threads"]), int(r["blocks"]))] = \
                float(r["median_ms"])
    if within:
        best_within = alternating(within, "best")
        over_auto = {k: v["speedup"] for k, v in alternating(within, "learned").items()}
        # A kernel the learned store leaves at auto's grid (nothing kept) is auto's by construction.
        over_auto.update({k: 1.0 for k in best_within if k not in over_auto})
        for k, v in best_within.items():
            if k in table:
                table[k]["best"] = table[k]["auto"] / v["speedup"]
        table = {k: t for k, t in table.items() if k in best_within}
        grids = {}
    kernels = defaultdict(list)
    for k, t in table.items():
        if k in launches and k in over_auto and {"auto", "occupancy", "best"} <= t.keys():
            kernels[k[0]].append(k)
    out = []
    for program, ks in sorted(kernels.items()):
        def total(ms):
            return sum(launches[k] * ms(k) for k in ks)
        auto = total(lambda k: table[k]["auto"])
        each = total(lambda k: table[k]["best"])
        # One grid for all: the sweep's points are medians from the same process as auto's.
        common = set.intersection(*(set(grids.get(k, ())) for k in ks))
        one = min(common, key=lambda g: total(lambda k: grids[k][g]), default=None)
        one_ms = total(lambda k: grids[k][one]) if one else math.inf
        best = min(each, one_ms)
        prod = total(lambda k: table[k]["auto"] / over_auto[k])
        occ = total(lambda k: table[k]["occupancy"])
        out.append([program, len(ks), f"{auto:.3f}", f"{auto / each:.4f}",
                    f"{one[0]}x{one[1]}" if one else "", f"{auto / one_ms:.4f}" if one else "",
                    f"{auto / best:.4f}", f"{best / auto:.4f}", f"{best / occ:.4f}", f"{best / prod:.4f}"])
    with open(os.path.join(production_dir, "assignment.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(ASSIGNMENT_HEADER)
        w.writerows(out)
    return out


ONLINE_HEADER = ["program", "round", "auto_ms", "tune_ms", "tune_over_auto", "median_based_ratio",
                 "wall_ratio", "tune_trials", "exploring_share"]


def exploring_share(prof):
    """What a run's trials cost within its own process, over its launches' time: each trial's time
    over the median of its kernel's other launches of the run (its first, cold, left out; all of
    them where every one was a trial), summed. Runs of the same grids differ by process
    (BabelStream's by 1-4 %, NOTES.md §46), so the ratio to `auto`'s run of the round holds that
    too; this does not."""
    by_kernel = defaultdict(list)
    for p in prof:
        by_kernel[p["kernel"]].append(p)
    excess = 0
    for ps in by_kernel.values():
        warm = ps[1:]
        others = [p["ns"] for p in warm if p["policy"] != "tune-trial"] or [p["ns"] for p in warm]
        if others:
            base = statistics.median(others)
            excess += sum(p["ns"] - base for p in warm if p["policy"] == "tune-trial")
    return excess / max(sum(p["ns"] for p in prof), 1)


def median_based(prof):
    """A run's launches' time with each kernel's median launch standing for all of its launches
    (the median times the count, summed over kernels): one slow launch, or a process's slow
    first steps, do not move it as they move the sum."""
    by_kernel = defaultdict(list)
    for p in prof:
        by_kernel[p["kernel"]].append(p["ns"])
    return sum(statistics.median(ns) * len(ns) for ns in by_kernel.values())


def online_runs(runs_dir):
    """realapps.sh's ONLINE runs that passed their check, each with its launches."""
    with open(os.path.join(runs_dir, "runs.csv")) as f:
        runs = [r for r in csv.DictReader(f) if r["mode"] == "online" and r["check"] == "pass"]
    for r in runs:
        yield r, launches(os.path.join(runs_dir, r["entry"], f"{r['config']}-r{r['round']}"))


def write_rows(out_csv, header, rows):
    with open(out_csv, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)
    return rows


def online(runs_dir, out_csv):
    """realapps.sh's ONLINE rounds: per entry and round, the GPU time of every launch of the run
    under auto and of the one under online `tune` (ncu's device time where the run was under
    ncu, else the profile's), their ratio, the same with each kernel's median launch
    (`median_based`), the whole runs' wall times' ratio, how many of tune's launches were trials
    (its profile label `tune-trial`: a grid other than its leader, launched to measure it) and
    what they cost within tune's process (`exploring_share`)."""
    total, medians, wall, trials, share = {}, {}, {}, {}, {}
    for r, prof in online_runs(runs_dir):
        key = (r["entry"], int(r["round"]), r["config"])
        total[key] = sum(p["ns"] for p in prof) / 1e6
        medians[key] = median_based(prof)
        wall[key] = float(r["wall_ms"])
        trials[key] = sum(1 for p in prof if p["policy"] == "tune-trial")
        share[key] = exploring_share(prof)
    out = []
    for (entry, rnd, config) in sorted(total):
        if config != "tune" or (entry, rnd, "auto") not in total:
            continue
        a, t = (entry, rnd, "auto"), (entry, rnd, "tune")
        out.append([entry, rnd, f"{total[a]:.3f}", f"{total[t]:.3f}", f"{total[t] / total[a]:.4f}",
                    f"{medians[t] / medians[a]:.4f}", f"{wall[t] / wall[a]:.4f}", trials[t],
                    f"{share[t]:.4f}"])
    return write_rows(out_csv, ONLINE_HEADER, out)


ONLINE_KERNELS_HEADER = ["program", "kernel", "rounds", "auto_us", "tune_us", "tune_over_auto"]


def online_kernels(runs_dir, out_csv):
    """realapps.sh's ONLINE rounds kernel by kernel: each run's median launch of the kernel (its
    first, cold, left out), and the median of those over the rounds, under auto and under online
    `tune`. Where `tune` runs `auto`'s very grids, the ratio is what its launch path costs the
    kernel's launches, which a whole run's sum hides in the process's noise."""
    per_run = defaultdict(list)
    for r, prof in online_runs(runs_dir):
        by_kernel = defaultdict(list)
        for p in prof:
            by_kernel[p["kernel"]].append(p["ns"])
        for kernel, ns in by_kernel.items():
            per_run[(r["entry"], kernel, r["config"])].append(statistics.median(ns[1:] or ns))
    out = []
    for (entry, kernel, config), medians in sorted(per_run.items()):
        auto = per_run.get((entry, kernel, "auto"))
        if config != "tune" or not auto:
            continue
        a, t = statistics.median(auto), statistics.median(medians)
        out.append([entry, kernel, min(len(auto), len(medians)), f"{a / 1e3:.2f}", f"{t / 1e3:.2f}",
                    f"{t / a:.4f}"])
    return write_rows(out_csv, ONLINE_KERNELS_HEADER, out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("convert", help="realapps.sh's runs as a results folder")
    c.add_argument("runs_dir")
    c.add_argument("results")
    c.add_argument("--bin-dir", default="bench/build/realapps/bin")
    r = sub.add_parser("retime", help="best re-timed against auto in one process, into summary.csv")
    r.add_argument("runs_dir")
    r.add_argument("results")
    pr = sub.add_parser("production", help="tune sessions, then production against auto and best")
    pr.add_argument("runs_dir")
    pr.add_argument("results")
    asg = sub.add_parser("assignment", help="per program: each policy's share of the best assignment")
    asg.add_argument("results")
    asg.add_argument("--production", help="the folder of a later session's production.csv")
    asg.add_argument("--within", help="re-timing runs of both stores (best-*, learned-*)")
    on = sub.add_parser("online", help="online tune's runs against auto's, run by run")
    on.add_argument("runs_dir")
    on.add_argument("out_csv")
    on.add_argument("--kernels", help="also each kernel's median launch under both, into this CSV")
    a = ap.parse_args(argv)
    if a.cmd == "online":
        if a.kernels:
            online_kernels(a.runs_dir, a.kernels)
        rows = online(a.runs_dir, a.out_csv)
        by = defaultdict(list)
        for r in rows:
            by[r[0]].append((float(r[4]), float(r[5]), float(r[6])))
        for entry, ratios in sorted(by.items()):
            for i, what in enumerate(("sum", "median-based", "wall")):
                xs = [x[i] for x in ratios]
                print(f"{entry}: tune's run over auto's ({what}), by round: {' '.join(f'{x:.3f}' for x in xs)}; "
                      f"geomean {statistics.geometric_mean(xs):.3f}, worst {max(xs):.3f}")
        return 0
    if a.cmd == "assignment":
        for r in assignment(a.results, a.production, a.within):
            print(f"{r[0]}: best assignment {r[6]}x auto ({'one grid ' + r[4] if r[6] == r[5] else 'each kernel best'}); "
                  f"share auto {float(r[7]):.1%}, occupancy {float(r[8]):.1%}, production {float(r[9]):.1%}")
        return 0
    if a.cmd == "production":
        rows = production(a.runs_dir, a.results)
        lg = defaultdict(list)
        for r in rows:
            for name, i in (("llvm", None), ("auto", 4), ("production", 6), ("best", 7)):
                lg[name].append(0.0 if i is None else math.log(float(r[i])))
        g = {n: math.exp(sum(v) / len(v)) for n, v in lg.items()}
        print(f"{len(rows)} kernels: geomean speedup over LLVM auto {g['auto']:.3f}, production "
              f"{g['production']:.3f}, best {g['best']:.3f}; production slower than auto by > 1 %: "
              f"{sum(1 for r in rows if float(r[5]) < 1 / 1.01)}")
        return 0
    if a.cmd == "retime":
        rows = retime(a.runs_dir, a.results)
        print(f"re-timed {len(rows)} cases into {a.results}/summary.csv (retime.csv)")
        return 0
    jobs = convert(a.runs_dir, a.results, a.bin_dir)
    for j in jobs:
        print(f"{j['program']}: {j['mode']}, {j['runs']} runs, {len(j['failed_runs'])} failed, "
              f"{len(j['pairs'])} kernels, {j['wall_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
