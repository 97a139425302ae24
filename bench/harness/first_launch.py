#!/usr/bin/env python3
"""What a process's first launch of a kernel costs under each configuration of a
bench/gpu/first-launch.sh folder, against `auto` on the same grid.

The script runs every configuration once per repetition, interleaved, so the
comparison is paired: per kernel and repetition, a configuration's first launch
over auto's (when both launched the same grid), then the median of those ratios
and of the differences in us, and how many repetitions were slower than auto's
with the two-sided sign test's p-value (no distribution assumed: a first launch's
noise is far from normal). A cost gridsel adds around a launch, outside the GPU,
shows as a difference in us that does not scale with the kernel's time.

Usage: first_launch.py FOLDER   (FOLDER holds profiles/PROGRAM.REP.CONFIG.csv)
Standard library only."""
import argparse
import collections
import math
import statistics

import learn_report


def first_launches(launches):
    """{(program, kernel): {config: {rep: (grid, ns)}}}: each process's first launch of each kernel."""
    out = collections.defaultdict(lambda: collections.defaultdict(dict))
    for (prog, rep, config), rows in launches.items():
        seen = set()
        for kernel, _, grid, ns, _ in rows:
            if kernel not in seen:
                seen.add(kernel)
                out[(prog, kernel)][config][rep] = (grid, ns)
    return out


def sign_test(slower, n):
    """The two-sided sign test's p-value for `slower` of `n` paired differences above zero."""
    if n == 0:
        return 1.0
    k = min(slower, n - slower)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2 ** n
    return min(1.0, 2 * tail)


def against_auto(first):
    """[(program, kernel, config, pairs, median ratio, median difference in us, slower,
    p-value, median us)] for every configuration but auto, paired with auto by repetition
    where both launched the same grid; auto's own row has its median and no pairs."""
    rows = []
    for (prog, kernel), by_config in sorted(first.items()):
        auto = by_config.get("auto", {})
        if auto:
            rows.append((prog, kernel, "auto", 0, 1.0, 0.0, 0, 1.0,
                         statistics.median(ns for _, ns in auto.values()) / 1e3))
        for config, by_rep in sorted(by_config.items()):
            if config == "auto":
                continue
            pairs = [(ns, auto[rep][1]) for rep, (grid, ns) in by_rep.items()
                     if rep in auto and auto[rep][0] == grid]
            if not pairs:
                continue
            slower = sum(a > b for a, b in pairs)
            rows.append((prog, kernel, config, len(pairs),
                         statistics.median(a / b for a, b in pairs),
                         statistics.median(a - b for a, b in pairs) / 1e3,
                         slower, sign_test(slower, len(pairs)),
                         statistics.median(a for a, _ in pairs) / 1e3))
    return rows


def report(rows):
    lines = ["| program | kernel | config | pairs | over auto (median ratio) | difference (us) | "
             "slower | sign test p | median (us) |", "|---|---|---|---|---|---|---|---|---|"]
    for prog, kernel, config, n, ratio, diff, slower, p, med in rows:
        lines.append(f"| {prog} | {kernel[-28:]} | {config} | {n} | {ratio:.3f} | {diff:+.1f} | "
                     f"{slower}/{n} | {p:.3f} | {med:.1f} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    args = ap.parse_args(argv)
    print(report(against_auto(first_launches(learn_report.load_launches(args.folder)))))


if __name__ == "__main__":
    main()
