#!/usr/bin/env python3
"""learn.md and learn.png from a bench/gpu/learn.sh folder: how `tune`'s
learning across runs converges, run after run, against `llvm` and `auto`
measured in the same rounds.

For every case (program, kernel) and run, the run's time is the sum of the
kernel's launches' times over all its trip counts (GRIDSEL_PROFILE wall time
of the forwarded launch: exploration and the cold first launch included, as
the user pays them), so a solver kernel with hundreds of trip counts is one
case, weighted like any other kernel. llvm's and auto's times are the medians of their per-run means over
the rounds. "best" is the fastest of llvm, auto and every tune run of the
case: the best grid this benchmark saw, a lower bound on the true best.

A run's own time mixes what tune chose with the noise of one launch (a cold
first launch varies by 17 % from run to run on the H100), and "best seen" is
the luckiest of many such launches. So the report also judges each run's
**choice**, the way Table I judges a policy: per case (program, kernel, trip
count) every grid's time is its median over all the benchmark's launches of
that grid (any policy, any round), and a run's tune is scored by the median
of the grid it chose. Cases launched once per process are judged by first
launches (the choice: the run's first launch), the others by the launches
after the first (the choice: the run's last launch, where the search
stands). "best" there is the fastest grid with at least two samples.

That "best" is the luckiest of many noisy medians, so the report also chooses it on
half of the rounds and times it on the other half (held_out_best): what is left is
the gain over auto's grid that is not noise.

Usage: learn_report.py FOLDER [--title TEXT] [--rounds N]   (FOLDER holds runs.csv, profiles/)
--rounds N judges the first N rounds only (a longer benchmark's runs 1-N, to set beside a
shorter one's) and prints the report without writing files.
Standard library only; the plot uses matplotlib when it is importable."""
import argparse
import collections
import csv
import glob
import math
import os
import statistics


def geomean(xs):
    xs = [x for x in xs if x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def load(folder):
    """{(program, round, policy): {(kernel,): [ns...]}}: every launch of the kernel."""
    runs = {}
    for path in glob.glob(os.path.join(folder, "profiles", "*.csv")):
        prog, rnd, policy = os.path.basename(path)[:-4].rsplit(".", 2)
        cases = collections.defaultdict(list)
        with open(path) as f:
            for row in csv.DictReader(f):
                cases[(row["kernel"],)].append(int(row["ns"]))
        runs[(prog, int(rnd), policy)] = cases
    return runs


# The profile's label of a launch by which tune re-checks its runner-up after settling (the
# runtime's tune::RECHECK_LABEL): planned, so not a relapse of the search.
RECHECK_LABEL = "tune-recheck"


def profile_launches(lines):
    """[(kernel, trip_count, (threads, blocks), ns, label), ...] of a GRIDSEL_PROFILE file's lines, in
    launch order (label: the profile's policy column, what chose the grid)."""
    return [(row["kernel"], int(row["trip_count"]), (int(row["threads"]), int(row["blocks"])), int(row["ns"]),
             row["policy"]) for row in csv.DictReader(lines)]


def load_launches(folder):
    """{(program, round, policy): [(kernel, trip_count, (threads, blocks), ns, label), ...]} in launch order."""
    out = {}
    for path in glob.glob(os.path.join(folder, "profiles", "*.csv")):
        prog, rnd, policy = os.path.basename(path)[:-4].rsplit(".", 2)
        with open(path) as f:
            out[(prog, int(rnd), policy)] = profile_launches(f)
    return out


def held_out_best(by_round, cases, auto, last):
    """How much of "best" is the luck of the draw: per case and half of the rounds (odd,
    even), the best grid is chosen on that half's launches (medians of grids with at least
    two) and timed, with auto's grid and tune's last choice, on the other half's. Returns
    dict(halves, auto_in, auto_out, tune_out, auto_far_in, auto_far_out, tune_far_out,
    kernels, auto_out_by_kernel, tune_out_by_kernel): geomean shares of the best (in: on
    the half that chose it, out: held out), counts below 95 %, and the held-out shares
    with every kernel weighted alike (a solver's hundreds of trip counts count as one).
    Case-halves count where the best, auto's grid and tune's choice have two launches in
    the other half."""
    def medians(grids, half, keep):
        out = {}
        for g, v in grids.items():
            xs = [ns for r, ns in v if (r % 2 == half) == keep]
            if len(xs) >= 2:
                out[g] = statistics.median(xs)
        return out
    rows = []
    for c in cases:
        for half in (0, 1):
            chosen_on, timed_on = medians(by_round[c], half, True), medians(by_round[c], half, False)
            if auto[c] not in chosen_on:
                continue
            best = min(chosen_on, key=chosen_on.get)
            if not all(g in timed_on for g in (best, auto[c], last[c])):
                continue
            rows.append((c, chosen_on[best] / chosen_on[auto[c]], timed_on[best] / timed_on[auto[c]],
                         timed_on[best] / timed_on[last[c]]))
    by_kernel = collections.defaultdict(list)
    for c, _, a, t in rows:
        by_kernel[c[:2]].append((a, t))
    return dict(halves=len(rows), kernels=len(by_kernel),
                auto_in=geomean([r[1] for r in rows]), auto_out=geomean([r[2] for r in rows]),
                tune_out=geomean([r[3] for r in rows]),
                auto_far_in=sum(r[1] < 0.95 for r in rows), auto_far_out=sum(r[2] < 0.95 for r in rows),
                tune_far_out=sum(r[3] < 0.95 for r in rows),
                auto_out_by_kernel=geomean([geomean([a for a, _ in v]) for v in by_kernel.values()]),
                tune_out_by_kernel=geomean([geomean([t for _, t in v]) for v in by_kernel.values()]))


def judge_choices(launches):
    """Each tune run's choice scored by its grid's median (module documentation). Returns
    dict(cases, g_auto, g_best, auto_share, per_run=[(round, tune's geomean over llvm,
    share of best, cases within 5 % of best, cases > 3 % slower than llvm's grid, cases
    > 3 % slower than auto's grid, cases on auto's grid, cases)], settled_from={case: the
    first run from which every later choice is within 95 % of the best grid, inf if the last
    one is not; runs where a once-per-run case's launch re-checked the runner-up are left out
    of its sequence: planned, not a relapse}, rechecks: how many such launches, auto_slow and
    auto_far: cases where auto's grid is > 3 % slower than llvm's, and < 95 % of the best).
    Cases need llvm's and auto's grid and a tune run."""
    per_process = {}
    for key, rows in launches.items():
        seen = collections.Counter((k, t) for k, t, *_ in rows)
        per_process[key] = (rows, seen)
    once = collections.defaultdict(lambda: True)
    for (prog, _, _), (_, seen) in per_process.items():
        for (k, t), n in seen.items():
            once[(prog, k, t)] &= n == 1
    samples = collections.defaultdict(lambda: collections.defaultdict(list))
    by_round = collections.defaultdict(lambda: collections.defaultdict(list))
    choice = collections.defaultdict(dict)
    grid_of = collections.defaultdict(dict)
    rechecks = collections.defaultdict(set)
    for (prog, rnd, pol), (rows, _) in per_process.items():
        n = collections.Counter()
        for k, t, g, ns, label in rows:
            case = (prog, k, t)
            first = n[(k, t)] == 0
            n[(k, t)] += 1
            if first != once[case]:
                continue
            samples[case][g].append(ns)
            by_round[case][g].append((rnd, ns))
            if pol == "tune":
                # A once-per-run case's re-check is the run's launch (what the run spends); a
                # case launched many times is where its search stands at its last other launch.
                if once[case] and label == RECHECK_LABEL:
                    rechecks[case].add(rnd)
                if (once[case] and first) or (not once[case] and label != RECHECK_LABEL):
                    choice[case][rnd] = g
            else:
                grid_of[case].setdefault(pol, g)
    cases = [c for c in choice if "llvm" in grid_of[c] and "auto" in grid_of[c]]
    med = {c: {g: statistics.median(v) for g, v in samples[c].items()} for c in cases}
    best = {}
    for c in cases:
        steady = [m for g, m in med[c].items() if len(samples[c][g]) >= 2]
        best[c] = min(steady or med[c].values())
    llvm = {c: med[c][grid_of[c]["llvm"]] for c in cases}
    auto = {c: med[c][grid_of[c]["auto"]] for c in cases}
    per_run = []
    for r in sorted({r for c in cases for r in choice[c]}):
        cs = [c for c in cases if r in choice[c]]
        t = {c: med[c][choice[c][r]] for c in cs}
        per_run.append((r, geomean([llvm[c] / t[c] for c in cs]), geomean([best[c] / t[c] for c in cs]),
                        sum(best[c] / t[c] >= 0.95 for c in cs), sum(t[c] > 1.03 * llvm[c] for c in cs),
                        sum(t[c] > 1.03 * auto[c] for c in cs),
                        sum(choice[c][r] == grid_of[c]["auto"] for c in cs), len(cs)))
    # Per case, the run from which every later choice stays within 95 % of the best grid
    # (the convergence target); inf when the last run's choice is not.
    rounds = sorted({r for c in cases for r in choice[c]})
    settled_from = {}
    for c in cases:
        own = [r for r in rounds if r not in rechecks[c]]
        good = [best[c] / med[c][choice[c][r]] >= 0.95 if r in choice[c] else False for r in own]
        bad = [r for r, ok in zip(own, good) if not ok]
        settled_from[c] = own[0] if not bad else next((r for r in own if r > bad[-1]), math.inf)
    last = {c: choice[c][max(choice[c])] for c in cases}
    return dict(cases=len(cases), per_run=per_run, settled_from=settled_from,
                rechecks=sum(len(rechecks[c]) for c in cases),
                held_out=held_out_best(by_round, cases, {c: grid_of[c]["auto"] for c in cases}, last),
                g_auto=geomean([llvm[c] / auto[c] for c in cases]),
                g_best=geomean([llvm[c] / best[c] for c in cases]),
                auto_share=geomean([best[c] / auto[c] for c in cases]),
                auto_slow=sum(auto[c] > 1.03 * llvm[c] for c in cases),
                auto_far=sum(best[c] / auto[c] < 0.95 for c in cases))


def case_table(runs):
    """{(program, kernel): {policy: {round: ns}}} for llvm, auto and tune: a run's time of a
    case is the sum of its launches' times (all trip counts). Cases without an llvm or a
    tune run are left out."""
    rounds = sorted({r for _, r, _ in runs})
    table = {}
    for prog in sorted({p for p, _, _ in runs}):
        keys = set()
        for (p, r, pol), cases in runs.items():
            if p == prog:
                keys |= set(cases)
        for key in keys:
            per = {pol: {r: sum(runs[(prog, r, pol)][key]) for r in rounds
                         if key in runs.get((prog, r, pol), {})} for pol in ("llvm", "auto", "tune")}
            if not per["llvm"] or not per["tune"]:
                continue
            table[(prog,) + key] = per
    return table


def summarize(table, rounds):
    """The numbers of learn.md. base: per case llvm's and auto's median run; best: the
    fastest of those and of every tune run; g_auto, g_best: geomean speedups over llvm;
    noise: per case with >= 3 llvm runs, (max - min) / median of its llvm runs; per_run: per
    round with tune runs, (round, tune's geomean over llvm, cases within 5 % of best,
    cases > 3 % slower than llvm, cases, tune's summed time / auto's - 1); auto_noise: per
    round with auto runs, (auto's run's geomean over llvm, its summed time / its median runs'
    - 1): the noise of those columns with nothing learned; late: per case
    with a tune run from round 5 on > 3 % slower than llvm's median, those rounds."""
    base = {c: {pol: statistics.median(v[pol].values()) for pol in ("llvm", "auto") if v[pol]}
            for c, v in table.items()}
    best = {c: min([*base[c].values(), *table[c]["tune"].values()]) for c in table}
    noise = [(max(v["llvm"].values()) - min(v["llvm"].values())) / statistics.median(v["llvm"].values())
             for v in table.values() if len(v["llvm"]) >= 3]
    per_run = []
    for r in rounds:
        cs = [c for c in table if r in table[c]["tune"]]
        if not cs:
            continue
        g = geomean([base[c]["llvm"] / table[c]["tune"][r] for c in cs])
        near = sum(best[c] / table[c]["tune"][r] >= 0.95 for c in cs)
        slow = sum(table[c]["tune"][r] > 1.03 * base[c]["llvm"] for c in cs)
        # GPU time of the run against auto's median run
        tune_t = sum(table[c]["tune"][r] for c in cs)
        auto_t = sum(base[c].get("auto", 0) for c in cs)
        per_run.append((r, g, near, slow, len(cs), tune_t / auto_t - 1))
    # The same sum for auto's own runs against auto's median: how far a run's GPU time moves
    # with no learning at all (a process's noise), in the rounds that ran auto.
    auto_noise = {}
    for r in rounds:
        cs = [c for c in table if r in table[c]["auto"]]
        if cs:
            auto_noise[r] = (geomean([base[c]["llvm"] / table[c]["auto"][r] for c in cs]),
                             sum(table[c]["auto"][r] for c in cs) / sum(base[c]["auto"] for c in cs) - 1)
    late = {c: [r for r in rounds[4:] if table[c]["tune"].get(r, 0) > 1.03 * base[c]["llvm"]] for c in table}
    return dict(base=base, best=best, noise=noise, per_run=per_run, auto_noise=auto_noise,
                late={c: rs for c, rs in late.items() if rs},
                g_best=geomean([base[c]["llvm"] / best[c] for c in table]),
                g_auto=geomean([base[c]["llvm"] / base[c]["auto"] for c in table if "auto" in base[c]]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--title", default="tune learning across runs")
    ap.add_argument("--rounds", type=int, help="judge rounds 1..N only; print, write nothing")
    a = ap.parse_args(argv)
    kept = lambda r: a.rounds is None or int(r) <= a.rounds
    runs = {k: v for k, v in load(a.folder).items() if kept(k[1])}
    with open(os.path.join(a.folder, "runs.csv")) as f:
        checks = [c for c in csv.DictReader(f) if kept(c["round"])]
    rounds = sorted({r for _, r, _ in runs})
    programs = sorted({p for p, _, _ in runs})
    table = case_table(runs)
    s = summarize(table, rounds)
    base, best, g_auto, g_best = s["base"], s["best"], s["g_auto"], s["g_best"]
    lines = [f"# {a.title}", "", "Generated by `bench/harness/learn_report.py` from `runs.csv` and "
             "`profiles/` (bench/gpu/learn.sh); see that script for the method.", ""]
    fails = [c for c in checks if c["rc"] != "0" or c["check"] != "pass"]
    lines += [f"- Runs: {len(checks)} ({len(programs)} programs x {len(rounds)} rounds x llvm, auto, "
              f"tune); failed or unchecked: {len(fails)}.",
              f"- Cases (program, kernel): {len(table)}."]
    noise = s["noise"]
    if noise:
        lines.append(f"- Noise: llvm's per-run time of a case varies by {100 * statistics.median(noise):.1f} % "
                     f"(max-min over the rounds, median over cases; p90 "
                     f"{100 * sorted(noise)[int(0.9 * (len(noise) - 1))]:.1f} %).")
    lines += ["", f"llvm = 1.000; auto {g_auto:.3f}x; best seen {g_best:.3f}x "
              f"(auto = {100 * g_auto / g_best:.1f} % of best).", "",
              "| run | tune over llvm (geomean) | share of best | within 5 % of best | > 3 % slower than llvm | "
              "run GPU time vs auto | auto's own run: over llvm, GPU time vs auto (noise) |",
              "|---|---|---|---|---|---|---|"]
    curve = []
    for r, g, near, slow, n, gpu in s["per_run"]:
        curve.append((r, g, g / g_best))
        own = s["auto_noise"].get(r)
        own = "-" if own is None else f"{own[0]:.3f}x, {100 * own[1]:+.1f} %"
        lines.append(f"| {r} | {g:.3f}x | {100 * g / g_best:.1f} % | {near}/{n} | {slow} | "
                     f"{100 * gpu:+.1f} % | {own} |")
    j = judge_choices({k: v for k, v in load_launches(a.folder).items() if kept(k[1])})
    lines += ["", f"Each run's choice, judged by its grid's median over the benchmark ({j['cases']} cases "
              f"(program, kernel, trip count); auto's grid {j['g_auto']:.3f}x over llvm's, "
              f"{100 * j['auto_share']:.1f} % of best, {j['auto_slow']} cases > 3 % slower than llvm's; "
              f"best {j['g_best']:.3f}x):", "",
              "| run | tune's grid over llvm's | share of best | within 5 % of best | "
              "> 3 % slower than llvm's | > 3 % slower than auto's | auto's grid |",
              "|---|---|---|---|---|---|---|"]
    for r, g, share, near, slow, worse, on_auto, n in j["per_run"]:
        lines.append(f"| {r} | {g:.3f}x | {100 * share:.1f} % | {near}/{n} | {slow} | {worse} | {on_auto}/{n} |")
    ends = sorted(j["settled_from"].values())
    if ends:
        never = sum(e == math.inf for e in ends)
        shown = lambda r: "never" if r == math.inf else f"{r}"
        lines += ["", f"Runs until a case's choice stays within 95 % of its best grid: median "
                  f"{shown(statistics.median_high(ends))}, p90 {shown(ends[int(0.9 * (len(ends) - 1))])}; "
                  f"{never} of {len(ends)} cases not within 95 % at the last run (auto's grid: "
                  f"{j['auto_far']} not within 95 %); runs that re-checked a case's runner-up, as "
                  f"planned, left out of its sequence: {j['rechecks']}."]
    h = j["held_out"]
    if h["halves"]:
        lines += ["", f"How much of \"best\" is luck (best grid chosen on odd rounds' launches and timed on "
                  f"even rounds', and the other way; {h['halves']} case-halves of {h['kernels']} kernels): "
                  f"auto's grid is {100 * h['auto_in']:.1f} % of best where best was chosen, "
                  f"{100 * h['auto_out']:.1f} % held out ({h['auto_far_in']} and {h['auto_far_out']} "
                  f"case-halves below 95 %); tune's last choice (which saw both halves) {100 * h['tune_out']:.1f} % "
                  f"({h['tune_far_out']} below 95 %). Every kernel weighted alike, held out: auto's grid "
                  f"{100 * h['auto_out_by_kernel']:.1f} %, tune's last choice "
                  f"{100 * h['tune_out_by_kernel']:.1f} %."]
    late = s["late"]
    if late:
        lines += ["", "Cases where a tune run from run 5 on was > 3 % slower than llvm's median (noise included):", "",
                  "| program | kernel | llvm ms | runs slower |", "|---|---|---|---|"]
        for c in sorted(late):
            lines.append(f"| {c[0]} | {c[1].split('_', 5)[-1]} | {base[c]['llvm'] / 1e6:.3f} | {late[c]} |")
    if a.rounds is not None:
        print("\n".join(lines))
        return 0
    with open(os.path.join(a.folder, "learn.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(os.path.join(a.folder, "learn-cases.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["program", "kernel", "llvm_ns", "auto_ns", "best_ns"] +
                   [f"tune_run{r}_ns" for r in rounds])
        for c in sorted(table):
            w.writerow([*c, round(base[c]["llvm"]), round(base[c].get("auto", 0)), round(best[c])] +
                       [round(table[c]["tune"].get(r, 0)) for r in rounds])
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([r for r, _, _ in curve], [g for _, g, _ in curve], "o-", label="tune (run's own time)")
        ax.plot([r[0] for r in j["per_run"]], [r[1] for r in j["per_run"]], "s--",
                label="tune's choice (its grid's median)")
        ax.axhline(g_auto, color="tab:blue", ls="--", label=f"auto's runs {g_auto:.3f}x")
        ax.axhline(j["g_auto"], color="tab:orange", ls="--", label=f"auto's grid (median) {j['g_auto']:.3f}x")
        ax.axhline(g_best, color="tab:green", ls=":", label=f"best seen {g_best:.3f}x")
        ax.axhline(1.0, color="gray", lw=0.8, label="llvm")
        ax.set_xlabel("run (from an empty store)")
        ax.set_ylabel("geomean speedup over llvm")
        ax.set_title(a.title, fontsize=9)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(a.folder, "learn.png"), dpi=120)
    except ImportError:
        lines.append("(matplotlib missing: no plot)")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
