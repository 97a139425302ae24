#!/usr/bin/env python3
"""Judges `auto`'s rule 6 (cross-team reductions) leave-one-program-out, per pattern (stdlib only).

    python3 bench/harness/auto_patterns.py [RESULTS] --gridsel target/debug/gridsel \\
        --bin-dir bench/build/sm_90 > /tmp/auto-patterns-tables.md

RESULTS (default bench/results/h100) holds the sweep's summary.csv and points.csv. Every grid
comes from `gridsel-research evaluate --policy auto --reduction-grid T,W,MIN_TRIP` (`off`: auto without
rule 6), so the rule is computed in one place, the library. The family judged: T threads per
block (32, 64, 128) x W waves of blocks resident at T (1, 2, 4; at most one block per distribute
chunk), for trip counts >= MIN_TRIP (0 or 2^20..2^26). The sweep space holds 1, 2 and 4 waves
of resident blocks and one block per chunk at every thread count, so these grids were measured
on every case swept with today's space. The older programs were swept when the occupancy model
counted 25 resident blocks per SM where it now counts 24 (NOTES.md §2, the warp granularity),
so for their 78-register kernels 32 x 3168 was not measured but 32 x 3300 was: a grid the sweep
did not measure is judged by the measured grid of the same threads whose block count is nearest
within 10 % (a stand-in, counted in the output); a family member with a grid that has no
stand-in on a training case is left out of that fold, and such a held-out case keeps
auto-before's time (counted too).

Per held-out program, the constants are chosen on all other programs' cases: fewest cases more
than 3 % slower than LLVM's grid, then the highest geomean speedup over LLVM, then the highest
MIN_TRIP (the rule fires on fewest launches). `occupancy`, `forest` and `best` are summary.csv's
rows (forest: the older programs only, leave-one-kernel-out).

With `--band-below N` (N: the shipped rule 6's MIN_TRIP), rule 6 stays as shipped and the family
is judged in the band of trip counts below N only: a member's grid at N iterations or more is the
shipped `auto`'s, MIN_TRIP runs over the thresholds below N, and the empty band (shown as
threads 0, the shipped `auto` itself) competes in every fold, winning ties.
"""

import argparse
import csv
import io
import math
import os
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from gridsel_harness.gridsel import Gridsel  # noqa: E402
from gridsel_harness.results import load_points, load_summary  # noqa: E402
from gridsel_harness.stats import fmt_speedup, geomean  # noqa: E402
from patterns_report import pattern_of, short  # noqa: E402

THREADS = (32, 64, 128)
WAVES = (1, 2, 4)
MIN_TRIPS = (0,) + tuple(1 << k for k in range(17, 27))
SLOWER = 1.03
ORDER = ["cross-team reduction", "Generic-SPMD", "nested parallelism", "nested parallelism (probe)",
         "small tiled kernel", "few heavy iterations",
         "time stepping", "long loop", "older suite"]


STAND_IN = 1.10


def evaluate(gridsel, points, bin_dir, spec, measured, stand_ins):
    """{case: (threads, blocks, ms or None)} of auto with rule 6 as `spec` (None: as shipped);
    unmeasured grids take their stand-in's time (`measured`: load_points), and are added to
    `stand_ins`."""
    out = gridsel.research(["evaluate", "--points", points, "--binaries", bin_dir, "--device", gridsel.device,
                            "--policy", "auto"] + (["--reduction-grid", spec] if spec else []), timeout=300)
    return parse_evaluate(out.stdout, measured, stand_ins)


def parse_evaluate(text, measured, stand_ins):
    """`gridsel-research evaluate`'s CSV as {case: (threads, blocks, ms or None)}: a grid without a
    median takes its stand-in's (`stand_in`), else None."""
    grids = {}
    for r in csv.DictReader(io.StringIO(text)):
        pk = (r["program"], r["kernel"], int(r["trip_count"]))
        t, b = int(r["threads"]), int(r["blocks"])
        ms = float(r["median_ms"]) if r["median_ms"] else stand_in(measured, pk, t, b, stand_ins)
        grids[pk] = (t, b, ms)
    return grids


def stand_in(measured, pk, t, b, stand_ins):
    """For a grid t x b the sweep did not measure on case pk: the median of the measured grid of
    the same threads whose block count is nearest within STAND_IN (the grid is added to
    `stand_ins`), else None."""
    near = [(abs(math.log(b2 / b)), ms) for (t2, b2), ms in measured.get(pk, {}).items()
            if t2 == t and max(b2 / b, b / b2) <= STAND_IN]
    if not near:
        return None
    stand_ins.add((pk, t, b))
    return min(near)[1]


def band_family(shipped, family, below):
    """The family judged in the band below `below`: each member's grids of trip counts below it,
    the shipped grids from it on, and the empty band (0, 0, below) = `shipped`. Members whose
    MIN_TRIP is not below `below` are dropped."""
    out = {(0, 0, below): dict(shipped)}
    for params, grids in family.items():
        if params[2] < below:
            out[params] = {pk: (g if pk[2] < below else shipped[pk]) for pk, g in grids.items()}
    return out


def judge(cases, llvm, grids):
    """(cases > 3 % slower than LLVM, geomean speedup, unmeasured) of `grids` on `cases`."""
    slow, logs, missing = 0, 0.0, 0
    for pk in cases:
        ms = grids[pk][2]
        if ms is None:
            missing += 1
            continue
        slow += ms > SLOWER * llvm[pk]
        logs += math.log(llvm[pk] / ms)
    return slow, math.exp(logs / max(len(cases), 1)), missing


def choose_folds(moved, llvm, before, family):
    """Leave one program out over the `moved` cases. For each program, the family member
    with the fewest of the other programs' cases more than 3 % slower than LLVM, then the
    highest geomean, then the highest MIN_TRIP (members with an unmeasured grid on a
    training case are left out) judges the program's cases; a held-out case whose grid has
    no time keeps `before`'s. Returns (after, {program: (params, score)}, held-out cases
    without a time)."""
    after, folds, held_missing = dict(before), {}, 0
    for prog in sorted({pk[0] for pk in moved}):
        train = [pk for pk in moved if pk[0] != prog]
        scored = []
        for params, grids in family.items():
            slow, gm, missing = judge(train, llvm, grids)
            if not missing:
                scored.append(((slow, -gm, -params[2]), params))
        params = min(scored)[1]
        folds[prog] = (params, min(scored)[0])
        for pk in moved:
            if pk[0] == prog:
                got = family[params][pk]
                held_missing += got[2] is None
                after[pk] = got if got[2] is not None else before[pk]
    return after, folds, held_missing


def pattern_rows(cases, pattern, llvm, before, after, table):
    """Per pattern (ORDER, then "all"): cases, geomean speedups over LLVM of auto before and
    after, best, occupancy and forest (over the cases that have a forest row), after's share
    of best's geomean, and the cases more than 3 % slower than LLVM."""
    by = defaultdict(list)
    for pk in cases:
        by[pattern[pk]].append(pk)
    rows = []
    for name in ORDER + ["all"]:
        pks = cases if name == "all" else by.get(name, [])
        if not pks:
            continue
        sp = lambda times: geomean([llvm[pk] / times[pk] for pk in pks])
        slow = lambda times: sum(times[pk] > SLOWER * llvm[pk] for pk in pks)
        b = {pk: before[pk][2] for pk in pks}
        a = {pk: after[pk][2] for pk in pks}
        occ = {pk: table[pk]["occupancy"][2] for pk in pks}
        fpks = [pk for pk in pks if "forest" in table[pk]]
        best = sp({pk: table[pk]["best"][2] for pk in pks})
        rows.append(dict(pattern=name, cases=len(pks), before=sp(b), after=sp(a), best=best,
                         share=sp(a) / best, slow_before=slow(b), slow_after=slow(a),
                         occupancy=sp(occ), occupancy_slow=slow(occ),
                         forest=geomean([llvm[pk] / table[pk]["forest"][2] for pk in fpks]) if fpks else None,
                         forest_cases=len(fpks)))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", default=os.path.join(HERE, "..", "results", "h100"))
    ap.add_argument("--gridsel", default="target/debug/gridsel", help="gridsel-research is taken from beside it")
    ap.add_argument("--bin-dir", required=True, help="the measured binaries (kernel names carry their inode)")
    ap.add_argument("--device", default="h100")
    ap.add_argument("--band-below", type=int, metavar="N",
                    help="keep the shipped rule 6 (from N iterations) and judge the family below N only")
    a = ap.parse_args()
    table = load_summary(a.results)
    points = os.path.join(a.results, "points.csv")
    gridsel = Gridsel(a.gridsel, a.device)
    measured, stand_ins = load_points(a.results), set()
    # The baseline: auto without rule 6, or the shipped auto when a band below it is judged.
    before = evaluate(gridsel, points, a.bin_dir, None if a.band_below else "off", measured, stand_ins)
    cases = [pk for pk in table if pk in before and before[pk][2] is not None]
    llvm = {pk: table[pk]["llvm"][2] for pk in cases}
    pat = pattern_of()
    pattern = {pk: pat.get(pk[0], "older suite") for pk in cases}
    family = {(t, w, m): evaluate(gridsel, points, a.bin_dir, f"{t},{w},{m}", measured, stand_ins)
              for t in THREADS for w in WAVES for m in MIN_TRIPS if not a.band_below or m < a.band_below}
    if a.band_below:
        family = band_family(before, family, a.band_below)
    # The cases some family member changes: the only ones a fold's choice can move.
    moved = [pk for pk in cases if any(g[pk][:2] != before[pk][:2] for g in family.values())]
    programs = sorted({pk[0] for pk in moved})
    after, folds, held_missing = choose_folds(moved, llvm, before, family)

    print("## Leave-one-program-out folds\n")
    print("| held-out program | its cases moved | threads | waves | min trip | training cases > 3 % slower | "
          "training geomean (moved cases) |")
    print("|---|---|---|---|---|---|---|")
    for prog in programs:
        (t, w, m), (slow, gm, _) = folds[prog]
        print(f"| {prog} | {sum(pk[0] == prog for pk in moved)} | {t} | {w} | {m} | {slow} | {-gm:.3f} |")
    print(f"\nHeld-out cases whose grid has no measured stand-in (kept auto-before's time): {held_missing}. "
          f"Grids judged by a stand-in: "
          + (", ".join(f"{pk[0]} {short(pk[1])} at {pk[2]}: {t}x{b}" for pk, t, b in sorted(stand_ins)) or "none")
          + "\n")

    print("## In sample: every family member on all moved cases\n")
    print("| threads | waves | min trip | cases > 3 % slower | geomean (moved cases) | no measured stand-in |")
    print("|---|---|---|---|---|---|")
    ranked = sorted(family, key=lambda p: (judge(moved, llvm, family[p])[0], -judge(moved, llvm, family[p])[1]))
    base = judge(moved, llvm, before)
    print(f"| (off) | | | {base[0]} | {base[1]:.3f} | {base[2]} |")
    for p in ranked[:12]:
        slow, gm, missing = judge(moved, llvm, family[p])
        print(f"| {p[0]} | {p[1]} | {p[2]} | {slow} | {gm:.3f} | {missing} |")

    print("\n## Per pattern (speedup over LLVM's grid, geomean)\n")
    print("| pattern | cases | auto-before | auto-after (LOO) | best | share of best (after) | "
          "> 3 % slower: before / after | occupancy | occupancy > 3 % slower | forest (cases) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for row in pattern_rows(cases, pattern, llvm, before, after, table):
        print(f"| {row['pattern']} | {row['cases']} | {fmt_speedup(row['before'])} | {fmt_speedup(row['after'])} | "
              f"{fmt_speedup(row['best'])} | {row['share'] * 100:.1f} % | {row['slow_before']} / "
              f"{row['slow_after']} | {fmt_speedup(row['occupancy'])} | {row['occupancy_slow']} | "
              f"{fmt_speedup(row['forest']) if row['forest'] else '-'} ({row['forest_cases']}) |")

    print("\n## Every moved case\n")
    print("| pattern | program | kernel | trip | LLVM | LLVM ms | auto-before | after (LOO) | after ms | after x | "
          "best | best x |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for pk in sorted(moved, key=lambda pk: (ORDER.index(pattern[pk]), pk)):
        e = table[pk]
        L = e["llvm"]
        print(f"| {pattern[pk]} | {pk[0]} | {short(pk[1])} | {pk[2]} | {L[0]}x{L[1]} | {L[2]:.4f} | "
              f"{before[pk][0]}x{before[pk][1]} | {after[pk][0]}x{after[pk][1]} | {after[pk][2]:.4f} | "
              f"{fmt_speedup(L[2] / after[pk][2])} | {e['best'][0]}x{e['best'][1]} | "
              f"{fmt_speedup(L[2] / e['best'][2])} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
