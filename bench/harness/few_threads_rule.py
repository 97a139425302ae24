#!/usr/bin/env python3
"""Judges, leave-one-program-out, rules that undo `auto`'s rule 1 for some kernels (stdlib only).

    python3 bench/harness/few_threads_rule.py [RESULTS] --gridsel target/debug/gridsel \\
        --bin-dir bench/build/sm_90 > tables.md

Rule 1 gives chunk-wide (128-thread) blocks where LLVM's trip-count rule gives 32-thread ones;
the tiled transposes of issue 29 run faster with LLVM's. The family asks whether anything the
kernel tells at launch marks such kernels: where rule 1 moved LLVM's block size (SPMD, no nesting,
no cross-team reduction, LLVM's blocks narrower than `auto`'s), a kernel with at least R
registers, at most S bytes of stack and at least T iterations gets either LLVM's grid
(`llvm`) or one 32-thread block per SM (`32xSMs`, the transposes' best). R in 0, 64, 80, 96,
112, 128; S in 0, 1024, unbounded; T in 2^10..2^18. Registers and stack come from
`gridsel inspect --json`. The folds are auto_patterns.py's, with the shipped `auto` as the
reference instead of LLVM: the question is a rule that costs no other case. Per held-out program,
the member with the fewest training cases more than 3 % slower than under the shipped `auto`,
then the highest geomean, then the highest T; the shipped `auto` wins ties, as the member whose
T no loop reaches. The tables give speedups over LLVM's grid.
"""

import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from auto_patterns import SLOWER, choose_folds, judge, stand_in  # noqa: E402
from gridsel_harness.results import load_points, load_summary  # noqa: E402
from gridsel_harness.stats import fmt_speedup  # noqa: E402
from long_loop_rule import decided_by_long_loop_rules, inspect, scorers  # noqa: E402
from patterns_report import short  # noqa: E402

REGISTERS = (0, 64, 80, 96, 112, 128)
STACK = (0, 1024, None)
MIN_TRIPS = tuple(1 << k for k in range(10, 19))
ACTIONS = ("llvm", "32xSMs")
# Members are (action, (R, S), T): choose_folds breaks ties on the third element, the threshold.
SHIPPED = ("shipped", (0, 0), 1 << 62)


def family_grids(cases, table, facts, measured, sms, stand_ins):
    """{(action, (R, S), T): {case: (threads, blocks, ms or None)}} and SHIPPED."""
    shipped = {pk: table[pk]["auto"][:3] for pk in cases}
    family = {SHIPPED: shipped}
    for action in ACTIONS:
        for regs in REGISTERS:
            for stack in STACK:
                for m in MIN_TRIPS:
                    grids = {}
                    for pk in cases:
                        k = facts[pk]
                        hit = (pk[2] >= m and k["registers"] >= regs
                               and (stack is None or (k["local_mem"] or 0) <= stack))
                        if not hit:
                            grids[pk] = shipped[pk]
                        elif action == "llvm":
                            grids[pk] = table[pk]["llvm"][:3]
                        else:
                            ms = measured.get(pk, {}).get((32, sms))
                            grids[pk] = (32, sms, ms if ms is not None else stand_in(measured, pk, 32, sms, stand_ins))
                    family[(action, (regs, stack), m)] = grids
    return family


def name(p):
    if p == SHIPPED:
        return "(shipped)"
    action, (regs, stack), m = p
    return f"{action} from {regs} registers, stack {'any' if stack is None else f'<= {stack} B'}, from 2^{m.bit_length() - 1}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("results", nargs="?", default=os.path.join(HERE, "..", "results", "h100"))
    ap.add_argument("--gridsel", default="target/debug/gridsel")
    ap.add_argument("--bin-dir", required=True, help="the measured binaries")
    ap.add_argument("--sms", type=int, default=132)
    a = ap.parse_args()
    table = load_summary(a.results)
    kernels = inspect(a.gridsel, a.bin_dir, {pk[0] for pk in table})
    facts = {pk: kernels.get((pk[0], short(pk[1]))) for pk in table}
    everything = [pk for pk, e in table.items() if {"llvm", "best", "auto"} <= e.keys()]
    cases = [pk for pk in everything if pk[2] > 0 and facts[pk] and decided_by_long_loop_rules(facts[pk])
             and table[pk]["llvm"][0] < table[pk]["auto"][0]]
    llvm = {pk: table[pk]["llvm"][2] for pk in everything}
    stand_ins = set()
    family = family_grids(cases, table, facts, load_points(a.results), a.sms, stand_ins)
    shipped = family[SHIPPED]
    moved = [pk for pk in cases if any(g[pk][:2] != shipped[pk][:2] for g in family.values())]
    after, folds, held_missing = choose_folds(moved, {pk: shipped[pk][2] for pk in moved}, shipped, family)
    after = {**{pk: table[pk]["auto"][:3] for pk in everything}, **after}
    costs = lambda grids, pks: sum(grids[pk][2] > SLOWER * shipped[pk][2] for pk in pks)

    sp, slow, noisy = scorers(table, llvm)
    print("## Leave-one-program-out folds\n")
    print(f"Cases where rule 1 widened LLVM's blocks: {len(cases)}; moved by some member: {len(moved)}, in "
          f"{len({pk[0] for pk in moved})} programs. Held-out cases without a time: {held_missing}; "
          f"grids judged by a stand-in: {len(stand_ins)}.\n")
    print("| held-out program | cases | chosen on the others | held out: shipped / rule | "
          "> 3 % slower than LLVM (outside the noise): shipped / rule | > 3 % slower than shipped |")
    print("|---|---|---|---|---|---|")
    for prog in sorted(folds):
        pks = [pk for pk in moved if pk[0] == prog]
        print(f"| {prog} | {len(pks)} | {name(folds[prog][0])} | {fmt_speedup(sp(shipped, pks))} / "
              f"{fmt_speedup(sp(after, pks))} | {slow(shipped, pks)} ({noisy(shipped, pks)}) / "
              f"{slow(after, pks)} ({noisy(after, pks)}) | {costs(after, pks)} |")
    print("\n## Held out, totals\n")
    print("| cases | n | shipped | rule (held out) | > 3 % slower: shipped / rule | outside the noise: shipped / rule |")
    print("|---|---|---|---|---|---|")
    every = {pk: table[pk]["auto"][:3] for pk in everything}
    for label, pks, before in (("moved", moved, shipped), ("whole table", everything, every)):
        print(f"| {label} | {len(pks)} | {fmt_speedup(sp(before, pks))} | {fmt_speedup(sp(after, pks))} | "
              f"{slow(before, pks)} / {slow(after, pks)} | {noisy(before, pks)} / {noisy(after, pks)} |")
    print("\n## In sample: the members with fewest cases more than 3 % slower than shipped, then the highest geomean\n")
    print("| member | cases it moves | > 3 % slower than shipped | > 3 % slower than LLVM (outside the noise) | "
          "geomean over LLVM (moved cases) |")
    print("|---|---|---|---|---|")
    score = {p: (costs(g, moved), judge(moved, llvm, g)[1]) for p, g in family.items()}
    for p in sorted(family, key=lambda p: (score[p][0], -score[p][1]))[:10]:
        g = family[p]
        n = sum(g[pk][:2] != shipped[pk][:2] for pk in moved)
        timed = [pk for pk in moved if g[pk][2] is not None]
        print(f"| {name(p)} | {n} | {score[p][0]} | {slow(g, timed)} ({noisy(g, timed)}) | {score[p][1]:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
