"""Policies judged offline on the measured points: `add-policy` puts a
policy's grid per case (evaluated by `gridsel-research evaluate`, `calibrate`,
`tune-sim` or train.py) into summary.csv, and `ceiling` bounds what any static
long-loop rule of a family could reach.
"""

import csv
import json
import math
import os

from .gridsel import Gridsel
from .log import log
from .results import SUMMARY_HEADER, load_points, load_summary, recorded_bin_dir
from .stats import geomean


def cmd_add_policy(a):
    """Puts a policy evaluated offline (leave-one-out) into summary.csv.

    FILE has columns program,kernel,trip_count and the policy's threads,
    blocks and time (named by --columns): the grid the policy chose for each
    case and that grid's MEASURED median (from points.csv). Rows of the same policy name already in the summary are
    replaced; cases without a row (or without a time) are left out of it.
    --where COL=VALUE keeps only FILE's rows whose COL is VALUE (tune-sim has
    one row per case and launches per run).
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
    where = a.where.split("=", 1) if a.where else None
    with open(a.file, newline="") as f:
        for r in csv.DictReader(f):
            if where and r.get(where[0]) != where[1]:
                continue
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
    prov = {}
    if os.path.exists(prov_path):
        with open(prov_path) as f:
            prov = json.load(f)
    prov[a.name] = {"file": os.path.basename(a.file), "rows": added}
    with open(prov_path, "w") as f:
        json.dump(prov, f, indent=1, sort_keys=True)
    log(f"add-policy: {added} rows of {a.name} in {path}")
    return 0


# --------------------------------------------------------------------------- ceiling

def static_long_rules(sms):
    """The family of static long-loop rules the ceiling searches: T threads,
    blocks = min(one per distribute chunk, B), B a multiple of the SM count
    or a power of two (the sweep measured these for every thread count)."""
    caps = sorted({sms * m for m in range(1, 9)} | {1 << k for k in range(8, 17)})
    return [(t, b) for t in (32, 64, 96, 128) for b in caps]


def rule_blocks(chunks, cap):
    """A static long-loop rule's blocks for one case: one per distribute chunk, at most
    `cap` and at most what the sweep tried (`chunks`: the case's `Gridsel.chunks`)."""
    most = cap if chunks.max_blocks is None else chunks.max_blocks  # None: the space has no grid point
    return min(chunks.chunks, cap, most)


def ceiling(table, points, chunks, sms, target=0.95):
    """How far any static rule of `static_long_rules` can take long loops, in-sample
    (each rule judged on the very cases that choose it, so an upper bound), and what
    the issue's geomean target would need from them. `chunks` holds every long-loop case's
    `Gridsel.chunks`. Returns a dict of numbers and rows."""
    cases = [pk for pk, e in table.items() if "llvm" in e and "best" in e]
    longs = [pk for pk in cases if table[pk]["class"] == "long"]
    rows = []
    for t, cap in static_long_rules(sms):
        sp, regressions, within5, missing = [], 0, 0, 0
        for pk in longs:
            llvm, best = table[pk]["llvm"][2], table[pk]["best"][2]
            ms = points.get(pk, {}).get((t, rule_blocks(chunks[pk], cap)))
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
        got = [points.get(pk, {}).get((t, rule_blocks(chunks[pk], cap)))
               for t, cap in static_long_rules(sms)]
        got = [g for g in got if g]
        if got:
            oracle.append(table[pk]["llvm"][2] / min(got))
    return dict(cases=len(cases), longs=len(longs), best_all=best_all, rows=rows,
                with_rule=with_rule, need_long=need_long, oracle=geomean(oracle),
                best_long=geomean([table[pk]["llvm"][2] / table[pk]["best"][2] for pk in longs]))


def cmd_ceiling(a):
    table = load_summary(a.results)
    bin_dir = a.bin_dir or recorded_bin_dir(a.results)
    if not bin_dir:
        raise SystemExit("ceiling: the jobs name no single binaries folder; give --bin-dir")
    chunks = Gridsel(a.gridsel, a.device).chunks(os.path.join(a.results, "points.csv"), bin_dir)
    longs = [pk for pk, e in table.items() if e["class"] == "long"]
    unknown = [pk for pk in longs if pk not in chunks or chunks[pk].chunks is None]
    if unknown:
        raise SystemExit(f"ceiling: no distribute chunk for {len(unknown)} long-loop cases (first: {unknown[0]}); "
                         f"--bin-dir must hold the binaries that were measured (kernel names carry the "
                         f"source file's inode)")
    c = ceiling(table, load_points(a.results), chunks, a.sms)
    sizes = "/".join(str(n) for n in sorted({chunks[pk].chunk for pk in longs})) or "-"
    lines = [
        "# What a static long-loop rule can reach (in-sample upper bound)",
        "",
        f"Written by `gridsel_bench.py ceiling {a.results} --sms {a.sms}` from summary.csv and points.csv.",
        f"Family: T threads x min(one block per distribute chunk, B) blocks (each kernel's chunk, "
        f"`gridsel-research chunks`: {sizes} iterations here; never more blocks than the sweep tried), "
        f"T in 32/64/96/128, "
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


def add_commands(sub):
    ap_ = sub.add_parser("add-policy", help="put an offline (leave-one-out) policy into summary.csv")
    ap_.add_argument("results")
    ap_.add_argument("--name", required=True)
    ap_.add_argument("--file", required=True, help="CSV: program,kernel,trip_count and the columns below")
    ap_.add_argument("--columns", default="threads,blocks,median_ms",
                     help="names of FILE's threads, blocks and time columns (default: %(default)s)")
    ap_.add_argument("--where", metavar="COL=VALUE", help="only FILE's rows whose column COL is VALUE")
    ap_.set_defaults(fn=cmd_add_policy)

    ce = sub.add_parser("ceiling", help="RESULTS/static-ceiling.md: the best static long-loop rule, in-sample")
    ce.add_argument("results")
    ce.add_argument("--sms", type=int, default=132, help="the GPU's SM count (default: %(default)s, H100)")
    ce.add_argument("--gridsel", default="target/release/gridsel")
    ce.add_argument("--bin-dir", help="the measured binaries, for their distribute chunks (default: as recorded)")
    ce.add_argument("--device", default="h100", help="device preset for `gridsel-research chunks`")
    ce.set_defaults(fn=cmd_ceiling)
