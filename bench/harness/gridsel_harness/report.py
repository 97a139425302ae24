"""`report`: Table I and the geomeans of every policy over LLVM
(RESULTS/report.md) and Fig. 8, each case's speedups as bars
(RESULTS/fig8.svg and .png, when matplotlib is importable).
"""

import json
import os
import statistics
from collections import defaultdict

from .log import log
from .programs import LLVM_VERSION, environment
from .results import CLASS_ORDER, jobs_in, load_summary, read_jsonl, record_key, short_kernel
from .runner import SWEEP_WARMUP
from .stats import fmt_speedup, geomean
from .summary import summarize_dir


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
              + (f" ({', '.join(record_key(j) + ' ' + j['status'] for j in failed)})" if failed else ""))
    change = [record_key(j) for j in ok if j.get("teams_regions") == "change"]
    if change:
        md.append(f"- jobs under `GRIDSEL_TEAMS_REGIONS=change` (launches without a trip count swept, not kept "
                  f"at LLVM's grid): {len(change)} ({', '.join(change)})")
    md.append(f"- (kernel, trip count) pairs: {sst.get('kept', len(table))} kept, {sst.get('dropped', '?')} dropped "
              f"(a point with fewer than {a.min_samples} samples), {sst.get('not_swept', '?')} not swept "
              f"(explicit num_teams/thread_limit)")
    md.append("")
    md.append("## Method\n")
    # A folder converted from other runs (bench/harness/realapps.py) says how it was measured.
    method = next((j["method"] for j in jobs if j.get("method")), None)
    if method:
        md.extend(f"- {line}" for line in method)
    else:
        md.append("- Timing: the wall time of the forwarded `__tgt_target_kernel` call as gridsel's "
                  "`GRIDSEL_PROFILE` records it (launch and wait); it includes a launch overhead of about 20 us, "
                  "so kernels shorter than ~0.1 ms show little geometry effect.")
        md.append("- Interleaving: under `GRIDSEL_POLICY=sweep` the i-th launch of each (kernel, trip count) runs "
                  "point i mod L of `gridsel-research space` (the policies' grids first, then the grid space), so every "
                  "point of a kernel is measured in the same process, interleaved with all others.")
        md.append(f"- Repetitions: the program runs REPS = ceil(samples x L / launches per repetition) timed "
                  f"repetitions after {SWEEP_WARMUP} warmup repetition (not counted); target "
                  f"{ok[0]['reps'] if ok else '?'} samples per point; cycle lengths L from {min(L) if L else '-'} to "
                  f"{max(L) if L else '-'}. REPS was reduced to fit the per-job time limit for {len(reduced)} jobs"
                  + (f" ({', '.join(record_key(j) for j in reduced)})" if reduced else "") + ".")
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
        with open(prov_path) as f:
            prov = json.load(f)
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
            bars = ax.bar([x - 0.4 + width * (si + 0.5) for x in xs], [y - 1 for y in ys], width, bottom=1,
                          label=p, color="black" if p == "best" else colors[si % len(colors)],
                          alpha=0.45 if p == "best" else 0.9)
            # Each bar named in the SVG: <g id="bar-POLICY-KERNEL-TRIP">.
            for bar, r in zip(bars, part):
                bar.set_gid(f"bar-{p}-{short_kernel(r['pk'][0], r['pk'][1])}-{r['pk'][2]}")
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
    # The same figure gives the same bytes: no date, and SVG ids from a fixed salt.
    fig.savefig(os.path.join(results, "fig8.png"), dpi=100)
    with matplotlib.rc_context({"svg.hashsalt": "gridsel fig8"}):
        fig.savefig(os.path.join(results, "fig8.svg"), dpi=100, metadata={"Date": None})
    plt.close(fig)
    log(f"wrote {os.path.join(results, 'fig8.svg')} and fig8.png")


def add_commands(sub):
    p = sub.add_parser("report", help="RESULTS/report.md and fig8.svg/png")
    p.add_argument("results")
    p.add_argument("--policies", help="comma-separated, e.g. llvm,lloyd (default: all seen)")
    p.add_argument("--gridsel", default="target/release/gridsel")
    p.add_argument("--min-samples", type=int, default=3)
    p.add_argument("--max-trips-per-kernel", type=int, default=6)
    p.add_argument("--min-trip", type=int, default=0)
    p.set_defaults(fn=cmd_report)
