#!/usr/bin/env python3
"""What a cold sample measures: from learn.sh folders' profiles (their `profiles/`
folder or `profiles.tgz` / `profiles.tar.xz`), under fixed grids (the llvm and auto
runs), two numbers behind bench/results/h100/learn/learn.md's eighth measurement:

- the first launch's excess over the same process's later launches of the kernel at
  the same trip count and grid (the grid-independent first-launch cost a once-per-run
  search ranks through), from runs with at least 10 launches of it;
- how far a process's noise is shared by its kernels: per (program, policy, kernel),
  each run's first-launch time against its median over the rounds (log ratio), and the
  correlation of a kernel's ratio with the median of the other kernels' ratios in the
  same process. Near 1, normalising by the process would remove the noise; near 0, not.

With --ratios FILE it also writes the run-to-run noise of a cold sample as `gridsel
tune-sim --cold-noise` draws it: every process's first launch of a kernel over the
median of the first launches of the same (program, kernel, trip count, grid) in the
other runs of the folder, every policy's runs included, where at least four runs
launched that grid first; and the median deviation of those ratios from 1 by the grid's
median duration (short kernels are noisier: what a cold plan's spread floor is set by).

Usage: cold_noise.py [--ratios FILE] FOLDER...     Standard library only."""
import argparse
import collections
import glob
import io
import math
import os
import statistics
import tarfile

import learn_report


def processes(folder, policies=("llvm", "auto")):
    """{(program, round, policy): [(kernel, trip, grid, ns), ...]} of the runs of
    `policies` (by default the fixed grids: llvm and auto)."""
    texts = {}
    for path in glob.glob(os.path.join(folder, "profiles", "*.csv")):
        with open(path) as f:
            texts[os.path.basename(path)] = f.read()
    for archive in glob.glob(os.path.join(folder, "profiles.t*")):
        with tarfile.open(archive) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith(".csv"):
                    texts[os.path.basename(m.name)] = t.extractfile(m).read().decode()
    out = {}
    for name, text in texts.items():
        prog, rnd, pol = name[:-4].rsplit(".", 2)
        if pol in policies:
            out[(prog, int(rnd), pol)] = learn_report.profile_launches(io.StringIO(text))
    return out


def first_launch_excess(procs):
    """Per (process, kernel, trip, grid) launched 10 times or more: (first / median of the
    rest, first - median of the rest in us)."""
    out = []
    for rows in procs.values():
        runs = collections.defaultdict(list)
        for k, t, g, ns, _ in rows:
            runs[(k, t, g)].append(ns)
        for v in runs.values():
            if len(v) >= 10:
                rest = statistics.median(v[1:])
                out.append((v[0] / rest, (v[0] - rest) / 1000))
    return out


def shared_noise(procs):
    """(correlation, cases) of a kernel's first-launch log ratio to its median over the
    rounds with the median ratio of the process's other kernels."""
    first = {}
    for (prog, rnd, pol), rows in procs.items():
        for k, _, _, ns, _ in rows:
            first.setdefault((prog, pol, k, rnd), ns)
    by_kernel = collections.defaultdict(dict)
    for (prog, pol, k, rnd), ns in first.items():
        by_kernel[(prog, pol, k)][rnd] = ns
    ratio = collections.defaultdict(dict)  # (prog, pol, rnd) -> {kernel: log ratio}
    for (prog, pol, k), runs in by_kernel.items():
        if len(runs) >= 3:
            m = statistics.median(runs.values())
            for rnd, ns in runs.items():
                ratio[(prog, pol, rnd)][k] = math.log(ns / m)
    xs, ys = [], []
    for kernels in ratio.values():
        for k, r in kernels.items():
            others = [v for o, v in kernels.items() if o != k]
            if others:
                xs.append(r)
                ys.append(statistics.median(others))
    if len(xs) < 3 or len(set(xs)) < 2 or len(set(ys)) < 2:
        return math.nan, len(xs)
    return statistics.correlation(xs, ys), len(xs)


def cold_ratios(procs, least=4):
    """Each process's first launch of a kernel over the median first launch of the same
    (program, kernel, trip, grid) over every process, for groups of at least `least`:
    [(ratio, median ns)]."""
    groups = collections.defaultdict(list)
    for (prog, _, _), rows in procs.items():
        seen = set()
        for k, t, g, ns, _ in rows:
            if k not in seen:
                seen.add(k)
                groups[(prog, k, t, g)].append(ns)
    medians = [(v, statistics.median(v)) for v in groups.values() if len(v) >= least]
    return [(ns / m, m) for v, m in medians for ns in v]


#: Upper bounds (us) of the kernel durations the cold noise is broken down by.
DURATIONS_US = (50, 200, 1000, math.inf)


def noise_by_duration(ratios):
    """[(upper bound us, samples, median |ratio - 1|)] by the grid's median duration."""
    out, lower = [], 0
    for upper in DURATIONS_US:
        dev = [abs(r - 1) for r, m in ratios if lower <= m / 1e3 < upper]
        if dev:
            out.append((upper, len(dev), statistics.median(dev)))
        lower = upper
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--ratios", help="write the cold samples' run-to-run ratios here (CSV)")
    p.add_argument("folders", nargs="+")
    a = p.parse_args(argv)
    if a.ratios:
        ratios = []
        for folder in a.folders:
            ratios += cold_ratios(processes(folder, ("llvm", "auto", "tune")))
        only = sorted(r for r, _ in ratios)
        with open(a.ratios, "w") as f:
            f.write("ratio\n" + "".join(f"{r:.4f}\n" for r in only))
        q = lambda f: only[int(f * (len(only) - 1))]
        print(f"cold samples over their grid's median ({len(only)}): p10 {q(.1):.3f} "
              f"p50 {q(.5):.3f} p90 {q(.9):.3f} p99 {q(.99):.3f}")
        print("median deviation from the grid's median, by its median duration: " + ", ".join(
            (f"< {u:.0f} us" if u < math.inf else "longer") + f" {100 * d:.1f} % ({n})" for u, n, d in noise_by_duration(ratios)))
    procs = {}
    for i, folder in enumerate(a.folders):
        procs.update({(f"{i}:{prog}", rnd, pol): rows for (prog, rnd, pol), rows in processes(folder).items()})
    excess = first_launch_excess(procs)
    if excess:
        q = lambda xs, f: sorted(xs)[int(f * (len(xs) - 1))]
        ratios, us = [r for r, _ in excess], [u for _, u in excess]
        print(f"first launch against the same process's later launches ({len(excess)} kernel-runs): "
              f"ratio p10 {q(ratios, .1):.2f} p50 {q(ratios, .5):.2f} p90 {q(ratios, .9):.2f}; "
              f"excess p10 {q(us, .1):.0f} us, p50 {q(us, .5):.0f} us, p90 {q(us, .9):.0f} us")
    corr, n = shared_noise(procs)
    print(f"a first launch's deviation against its process's other kernels' ({n} kernel-runs): "
          f"correlation {corr:.2f}")


if __name__ == "__main__":
    main()
