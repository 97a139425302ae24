#!/usr/bin/env python3
"""Judges a long-loop rule for `auto` leave-one-program-out over the whole table (stdlib only).

    python3 bench/harness/long_loop_rule.py [RESULTS] --gridsel target/debug/gridsel \\
        --bin-dir bench/build/sm_90 [--threads 128 --waves 1] [--plan-out PLAN.csv] > tables.md

The rule judged (issue 29): a loop that `auto`'s rules 1-3 decide (SPMD, says it does not nest,
no cross-team reduction, a trip count) of T iterations or more gets b-thread blocks, k waves of
the blocks resident at b, at most one block per distribute chunk, in place of rule 3's
max(waves x resident, 3200) 128-thread blocks. The family: b in 32, 64, 96, 128 x k in 1, 2, 4
x T in 2^17..2^26, a candidate family like `gridsel_bench.py ceiling`'s. Its facts come from
the library: the resident blocks per block size from `gridsel-research features` (a measured
grid's blocks over its waves), the distribute chunk from `gridsel-research chunks`, mode, nesting
and reduction from `gridsel inspect --json` (kernels matched by name without the inode, which a
rebuild changes). The sweep space holds 1, 2 and 4 waves of resident blocks at every block size;
a grid it did not measure is judged by its stand-in, as in auto_patterns.py.

The folds, the judging and the stand-ins are auto_patterns.py's: per held-out program, the member
with the fewest other programs' cases more than 3 % slower than LLVM's grid, then the highest
geomean, then the highest T; the shipped `auto` competes as the member whose T no loop reaches,
so it wins ties. "Outside the noise": more than 3 % slower than LLVM and by more than the LLVM
point's p10-p90 spread. `--plan-out` writes the cases that the member most folds chose (the
shipped `auto` aside) moves, each program at its smallest swept size, with their `auto` and rule
grids, in the plan format of bench/gpu/reduction-wave.sh, to measure them live with
`gridsel compare`.

The member most folds chose, 64 threads x 2 waves from 2^25, was measured live from that plan
(bench/results/h200/long-loop-wave, NOTES.md §32) and is shipped as `auto` rule 8: since then the
shipped `auto` the members compete with (and keep below their T) is rule 8 on the loops it
reaches, and `reduction_wave.py check bench/gpu/long-loop-wave.csv` holds `auto` to the plan.
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys
from collections import Counter

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from auto_patterns import SLOWER, choose_folds, judge, stand_in  # noqa: E402
from gridsel_harness.gridsel import Gridsel  # noqa: E402
from gridsel_harness.results import iter_raw, load_points, load_summary  # noqa: E402
from gridsel_harness.stats import fmt_speedup, geomean  # noqa: E402
from patterns_report import pattern_of, short  # noqa: E402
from reduction_wave import PLAN_HEADER  # noqa: E402

THREADS = (32, 64, 96, 128)
WAVES = (1, 2, 4)
MIN_TRIPS = tuple(1 << k for k in range(17, 27))
SHIPPED = (0, 0, 1 << 62)   # the shipped `auto`: a threshold no loop reaches


def inspect(gridsel_exe, bin_dir, programs):
    """{(program, kernel name without its `__omp_offloading_<device>_<inode>_` prefix): kernel
    JSON} of `gridsel inspect --json` over the programs' binaries in `bin_dir`."""
    out = {}
    for prog in sorted(programs):
        r = subprocess.run([gridsel_exe, "inspect", "--json", os.path.join(bin_dir, prog)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode == 0:
            for image in json.loads(r.stdout):
                for k in image["kernels"]:
                    out[(prog, short(k["name"]))] = k
    return out


def decided_by_long_loop_rules(kernel):
    """Whether `auto`'s rules 1-3 decide this kernel's launches that have a trip count: SPMD,
    says it does not nest, no cross-team reduction."""
    env = kernel.get("environment") or {}
    return (kernel.get("exec_mode") == "spmd" and env.get("may_use_nested_parallelism") is False
            and not env.get("reduction_data_size"))


def resident_blocks(features_csv):
    """{case: {threads: resident blocks}} from `gridsel-research features` (blocks / x.waves)."""
    out = {}
    for r in csv.DictReader(io.StringIO(features_csv)):
        waves = float(r["x.waves"])
        if waves > 0:
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            out.setdefault(pk, {})[int(r["threads"])] = round(int(r["blocks"]) / waves)
    return out


def family_grids(cases, shipped, chunks, resident, measured, stand_ins, threads=THREADS, waves=WAVES):
    """{(b, k, T): {case: (threads, blocks, ms or None)}} for every member, and SHIPPED: a case
    below T, or whose chunk is narrower than b, keeps the shipped grid."""
    family = {SHIPPED: dict(shipped)}
    for b in threads:
        for k in waves:
            for m in MIN_TRIPS:
                grids = {}
                for pk in cases:
                    r = resident.get(pk, {}).get(b)
                    if pk[2] < m or r is None or b > chunks[pk].chunk:
                        grids[pk] = shipped[pk]
                        continue
                    blocks = max(1, min(chunks[pk].chunks, k * r))
                    ms = measured.get(pk, {}).get((b, blocks))
                    grids[pk] = (b, blocks, ms if ms is not None else stand_in(measured, pk, b, blocks, stand_ins))
                family[(b, k, m)] = grids
    return family


def outside_noise(table, pk, ms):
    """More than 3 % slower than LLVM's grid and by more than the LLVM point's spread."""
    llvm, spread = table[pk]["llvm"][2], table[pk]["llvm"][3]
    return ms > llvm * max(SLOWER, 1 + spread / 100)


def scorers(table, llvm):
    """What the fold tables print of a choice of grids (`grids`: case -> (threads, blocks, ms))
    over cases `pks`: the geomean speedup over LLVM (`llvm`: case -> ms), the cases more than
    SLOWER slower than LLVM, and those of them outside the noise (`outside_noise`)."""
    sp = lambda grids, pks: geomean([llvm[pk] / grids[pk][2] for pk in pks])
    slow = lambda grids, pks: sum(grids[pk][2] > SLOWER * llvm[pk] for pk in pks)
    noisy = lambda grids, pks: sum(outside_noise(table, pk, grids[pk][2]) for pk in pks)
    return sp, slow, noisy


def swept_sizes(results, cases):
    """{case: the program size N of the job that measured it}, from the jobs' raw files."""
    out, programs = {}, {pk[0] for pk in cases}
    raw = os.path.join(results, "raw")
    for name in sorted(os.listdir(raw)):
        if name.split("-")[0] in programs:
            for r in iter_raw(os.path.join(raw, name)):
                pk = (r["program"], r["kernel"], int(r["trip_count"]))
                if pk in cases:
                    out.setdefault(pk, int(r["n"]))
    return out


def member(params):
    return "(shipped) | |" if params == SHIPPED else f"{params[0]} | {params[1]} | 2^{params[2].bit_length() - 1}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", default=os.path.join(HERE, "..", "results", "h100"))
    ap.add_argument("--gridsel", default="target/debug/gridsel", help="gridsel-research is taken from beside it")
    ap.add_argument("--bin-dir", required=True, help="the measured binaries")
    ap.add_argument("--device", default="h100")
    ap.add_argument("--threads", default=",".join(map(str, THREADS)), help="the family's block sizes")
    ap.add_argument("--waves", default=",".join(map(str, WAVES)), help="the family's waves")
    ap.add_argument("--plan-out", metavar="CSV", help="the moves of the member most folds chose, as a plan for bench/gpu/reduction-wave.sh")
    a = ap.parse_args()
    table = load_summary(a.results)
    points = os.path.join(a.results, "points.csv")
    gridsel = Gridsel(a.gridsel, a.device)
    sweep = ["--points", points, "--binaries", a.bin_dir, "--device", a.device]
    resident = resident_blocks(gridsel.research(["features"] + sweep, timeout=300).stdout)
    chunks = gridsel.chunks(points, a.bin_dir)
    kernels = inspect(a.gridsel, a.bin_dir, {pk[0] for pk in table})

    everything = [pk for pk, e in table.items() if {"llvm", "best", "auto"} <= e.keys()]
    fact = lambda pk: kernels.get((pk[0], short(pk[1])))
    cases = [pk for pk in everything if pk[2] > 0 and fact(pk) and decided_by_long_loop_rules(fact(pk))
             and pk in chunks and chunks[pk].chunks]
    llvm = {pk: table[pk]["llvm"][2] for pk in everything}
    shipped = {pk: table[pk]["auto"][:3] for pk in everything}
    best = {pk: table[pk]["best"][:3] for pk in everything}
    stand_ins = set()
    family = family_grids(cases, shipped, chunks, resident, load_points(a.results), stand_ins,
                          [int(x) for x in a.threads.split(",")], [int(x) for x in a.waves.split(",")])
    moved = [pk for pk in cases if any(g[pk][:2] != shipped[pk][:2] for g in family.values())]
    after, folds, held_missing = choose_folds(moved, llvm, shipped, family)

    sp, slow, noisy = scorers(table, llvm)
    print("## Leave-one-program-out folds\n")
    print(f"Cases `auto`'s rules 1-3 decide: {len(cases)}; moved by some member: {len(moved)}, in "
          f"{len({pk[0] for pk in moved})} programs. Held-out cases without a time (kept shipped): "
          f"{held_missing}; grids judged by a stand-in: {len(stand_ins)}.\n")
    print("| held-out program | cases | threads | waves | min trip | training > 3 % slower | training geomean | "
          "held out: shipped | rule | best | share of best: shipped / rule | "
          "> 3 % slower (outside the noise): shipped / rule |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for prog in sorted(folds):
        params, (n_slow, neg_gm, _) = folds[prog]
        pks = [pk for pk in moved if pk[0] == prog]
        s, r, b = sp(shipped, pks), sp(after, pks), sp(best, pks)
        print(f"| {prog} | {len(pks)} | {member(params)} | {n_slow} | {-neg_gm:.3f} | {fmt_speedup(s)} | "
              f"{fmt_speedup(r)} | {fmt_speedup(b)} | {100 * s / b:.1f} / {100 * r / b:.1f} % | "
              f"{slow(shipped, pks)} ({noisy(shipped, pks)}) / {slow(after, pks)} ({noisy(after, pks)}) |")

    print("\n## Held out, totals\n")
    print("| cases | n | shipped | rule (held out) | best | share of best: shipped / rule | "
          "> 3 % slower: shipped / rule | outside the noise: shipped / rule |")
    print("|---|---|---|---|---|---|---|---|")
    pattern = pattern_of()
    groups = [("moved", moved), ("decided by rules 1-3", cases), ("whole table", everything)]
    groups += [(f"pattern: {p}", [pk for pk in everything if pattern.get(pk[0], "older suite") == p])
               for p in ("long loop", "time stepping", "older suite")]
    for name, pks in groups:
        s, r, b = sp(shipped, pks), sp(after, pks), sp(best, pks)
        print(f"| {name} | {len(pks)} | {fmt_speedup(s)} | {fmt_speedup(r)} | {fmt_speedup(b)} | "
              f"{100 * s / b:.1f} / {100 * r / b:.1f} % | {slow(shipped, pks)} / {slow(after, pks)} | "
              f"{noisy(shipped, pks)} / {noisy(after, pks)} |")

    print("\n## In sample: members on all moved cases (fewest slower, then geomean; then the highest geomeans)\n")
    print("| threads | waves | min trip | > 3 % slower | outside the noise | geomean (moved) | no time |")
    print("|---|---|---|---|---|---|---|")
    score = {p: judge(moved, llvm, g) for p, g in family.items()}
    ranked = sorted((p for p in family if p != SHIPPED), key=lambda p: (score[p][0], -score[p][1]))
    top = [SHIPPED] + ranked[:8] + sorted(ranked[8:], key=lambda p: -score[p][1])[:5]
    for p in top:
        timed = [pk for pk in moved if family[p][pk][2] is not None]
        print(f"| {member(p)} | {score[p][0]} | {noisy(family[p], timed)} | {score[p][1]:.3f} | {score[p][2]} |")

    print("\n## Held-out cases the rule makes more than 3 % slower than LLVM\n")
    print("| program | kernel | trip | registers | LLVM | rule | x over LLVM | LLVM spread | best |")
    print("|---|---|---|---|---|---|---|---|---|")
    for pk in moved:
        if after[pk][2] > SLOWER * llvm[pk]:
            L = table[pk]["llvm"]
            print(f"| {pk[0]} | {short(pk[1])} | {pk[2]} | {fact(pk)['registers']} | {L[0]}x{L[1]} | "
                  f"{after[pk][0]}x{after[pk][1]} | {fmt_speedup(llvm[pk] / after[pk][2])} | {L[3]:.0f} % | "
                  f"{fmt_speedup(llvm[pk] / best[pk][2])} |")

    if a.plan_out:
        chosen = Counter(params for params, _ in folds.values() if params != SHIPPED)
        if not chosen:
            raise SystemExit("--plan-out: every fold kept the shipped auto; nothing to measure")
        rule = chosen.most_common(1)[0][0]
        changed = [pk for pk in moved if family[rule][pk][:2] != shipped[pk][:2]]
        sizes = swept_sizes(a.results, set(changed))
        # One size per program, its smallest swept: one `gridsel compare` per program.
        smallest = {}
        for pk, n in sizes.items():
            smallest[pk[0]] = min(n, smallest.get(pk[0], n))
        plan = sorted((pk for pk in sizes if sizes[pk] == smallest[pk[0]]), key=lambda pk: (pk[0], pk[1]))
        with open(a.plan_out, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(PLAN_HEADER)
            for pk in plan:
                w.writerow([pk[0], sizes[pk], short(pk[1]), pk[2], *shipped[pk][:2], *family[rule][pk][:2]])
        print(f"plan: {rule[0]} threads x {rule[1]} waves from 2^{rule[2].bit_length() - 1} (chosen by {chosen[rule]} of {len(folds)} folds): {len(plan)} of the "
              f"{len(changed)} cases it moves (each program at its smallest swept size) -> {a.plan_out}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
