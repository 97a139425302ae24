"""Whole programs against the replay: `best-cache` writes the sweep's best
grids as a GRIDSEL_CACHE for bench/gpu/live.sh's `best`, and `live` compares
the profiles live.sh wrote (one process per policy, alternating) with the
replayed speedups of summary.csv.
"""

import csv
import glob
import math
import os
import re
import statistics
from collections import defaultdict

from .gridsel import Gridsel
from .log import log
from .results import CLASS_ORDER, load_summary, short_kernel
from .stats import describe, fmt_speedup, geomean, quantile


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
    Gridsel(a.gridsel).cache_entries(entries, a.out)
    log(f"wrote {a.out}: {len(entries)} best grids for device {a.device!r}")
    return 0


def add_commands(sub):
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
    bc.add_argument("--gridsel", default="target/release/gridsel", help="writes the file (tune's format)")
    bc.set_defaults(fn=cmd_best_cache)
