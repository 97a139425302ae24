#!/usr/bin/env python3
"""Tables of patterns.md from summary.csv, points.csv, jobs.jsonl and raw/ (stdlib only).

    python3 bench/harness/patterns_report.py [RESULTS] > /tmp/patterns-tables.md   (RESULTS: bench/results/h100)

Cases: the (program, kernel, trip count) rows of summary.csv whose program is in one of the
pattern lists, bench/kernels/suite-patterns*.tsv, plus probe_nested_simd; each is grouped by
the pattern its description names. A policy's time is the
measured median of the grid it picks (summary.csv, as `add-policy` put it there);
speedups are over LLVM's grid, `1/x` for slowdowns. Launches that gridsel keeps as
given (trip count 0) are listed from raw/ with LLVM's grid alone.
"""

import csv
import glob
import gzip
import json
import math
import os
import re
import sys
from collections import defaultdict

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
KERNELS = os.path.join(REPO, "bench", "kernels")
sys.path.insert(0, HERE)

from gridsel_harness.results import record_key  # noqa: E402

GROUPS = [
    ("Generic-SPMD", "Generic-SPMD"),
    ("cross-team reduction", "cross-team reduction"),
    ("nested parallelism", "nested parallelism"),
    ("time stepping", "time stepping"),
    ("long loop", "long loop"),
    ("small tiled kernel", "small tiled kernel"),
    ("few heavy iterations", "few heavy iterations"),
]


def pattern_of(kernels=KERNELS):
    """{program: pattern} over every pattern list in `kernels` (suite-patterns*.tsv): the
    group whose words the description starts with ("pattern long loop: ..."), else "other"."""
    out = {}
    for path in sorted(glob.glob(os.path.join(kernels, "suite-patterns*.tsv"))):
        with open(path, newline="") as f:
            for row in csv.DictReader(f, delimiter="\t"):
                d = row["description"]
                for key, name in GROUPS:
                    if d.startswith("pattern " + key):
                        out[row["program"]] = name
                        break
                else:
                    out[row["program"]] = "other"
    out["probe_nested_simd"] = "nested parallelism (probe)"
    return out


def short(kernel):
    return re.sub(r"^__omp_offloading_[0-9a-f]+_[0-9a-f]+_", "", kernel)


def sp(x):
    if x is None:
        return "-"
    return f"{x:.3f}" if x >= 1.0 else f"1/{1.0 / x:.3f}"


def geomean(xs):
    xs = [x for x in xs if x]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def pct(xs, q):
    xs = sorted(xs)
    if not xs:
        return None
    k = (len(xs) - 1) * q
    lo, hi = int(math.floor(k)), int(math.ceil(k))
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def main():
    R = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "bench", "results", "h100")
    pat = pattern_of()
    progs = set(pat)
    cases = defaultdict(dict)   # (prog, kernel, trip) -> policy -> (T, B, ms, spread)
    klass = {}
    with open(os.path.join(R, "summary.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["program"] not in progs:
                continue
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            cases[pk][r["policy"]] = (int(r["threads"]), int(r["blocks"]), float(r["median_ms"]),
                                      float(r["spread_pct"]))
            klass[pk] = r["class"]
    nmin = defaultdict(lambda: 10 ** 9)
    npts = defaultdict(int)
    labelled = defaultdict(list)  # (pk, T, B) -> [(label, median)]
    with open(os.path.join(R, "points.csv"), newline="") as f:
        for r in csv.DictReader(f):
            if r["program"] not in progs:
                continue
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            nmin[pk] = min(nmin[pk], int(r["n_samples"]))
            npts[pk] += 1
            labelled[(pk, int(r["threads"]), int(r["blocks"]))].append((r["label"], float(r["median_ms"])))

    order = [g[1] for g in GROUPS] + ["nested parallelism (probe)", "other"]
    by_pat = defaultdict(list)
    for pk in sorted(cases):
        by_pat[pat[pk[0]]].append(pk)

    print("## Per case\n")
    print("Grids are threads x blocks; times are medians in ms; speedups over LLVM (`1/x`: slower); "
          "`share` = best / auto time; `n` = fewest samples of any point of the case / points swept.\n")
    for p in order:
        if not by_pat.get(p):
            continue
        print(f"### {p}\n")
        print("| program | kernel | trip | class | LLVM | LLVM ms (spread) | auto | auto ms | auto x | "
              "occupancy | occ x | lloyd | lloyd x | best | best ms | best x | share | n |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for pk in by_pat[p]:
            e = cases[pk]
            L = e["llvm"]
            g = lambda pol: f"{e[pol][0]}x{e[pol][1]}" if pol in e else "-"
            s = lambda pol: L[2] / e[pol][2] if pol in e else None
            share = e["best"][2] / e["auto"][2] if "auto" in e else None
            print(f"| {pk[0]} | {short(pk[1])} | {pk[2]} | {klass[pk]} | {g('llvm')} | {L[2]:.4f} ({L[3]:.0f} %) | "
                  f"{g('auto')} | {e['auto'][2]:.4f} | {sp(s('auto'))} | {g('occupancy')} | {sp(s('occupancy'))} | "
                  f"{g('lloyd')} | {sp(s('lloyd'))} | {g('best')} | {e['best'][2]:.4f} | {sp(s('best'))} | "
                  f"{share * 100:.0f} % | {nmin[pk]}/{npts[pk]} |")
        print()

    print("## Per pattern\n")
    print("| pattern | cases | auto | best | occupancy | forest | lloyd | tune (replay) | auto = LLVM's grid | "
          "auto > 3 % slower than LLVM | occupancy > 3 % slower | forest > 3 % slower | auto within 5 % of best |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    allc = []
    for p in order + ["all"]:
        pks = allc if p == "all" else by_pat.get(p, [])
        if p != "all":
            allc.extend(pks)
        if not pks:
            continue
        gm = lambda pol: geomean([cases[pk]["llvm"][2] / cases[pk][pol][2] for pk in pks if pol in cases[pk]])
        same = sum(1 for pk in pks if cases[pk]["auto"][:2] == cases[pk]["llvm"][:2])
        slow = sum(1 for pk in pks if cases[pk]["auto"][2] > 1.03 * cases[pk]["llvm"][2])
        oslow = sum(1 for pk in pks if cases[pk]["occupancy"][2] > 1.03 * cases[pk]["llvm"][2])
        fslow = sum(1 for pk in pks if "forest" in cases[pk] and cases[pk]["forest"][2] > 1.03 * cases[pk]["llvm"][2])
        near = sum(1 for pk in pks if cases[pk]["auto"][2] <= 1.05 * cases[pk]["best"][2])
        print(f"| {p} | {len(pks)} | {sp(gm('auto'))} | {sp(gm('best'))} | {sp(gm('occupancy'))} | "
              f"{sp(gm('forest'))} | {sp(gm('lloyd'))} | {sp(gm('tune'))} | {same} | {slow} | {oslow} | {fslow} | "
              f"{near} |")
    print()

    # Noise: the same grid measured under two labels in one case (interleaved, same process).
    dup = []
    for (pk, t, b), lst in labelled.items():
        if len(lst) > 1:
            ms = [m for _, m in lst]
            dup.append(abs(math.log(max(ms) / min(ms))))
    llvm_spread = [cases[pk]["llvm"][3] for pk in allc]
    print("## Noise\n")
    if dup:
        print(f"- same grid under two labels of one case ({len(dup)} pairs): median difference "
              f"{(math.exp(pct(dup, 0.5)) - 1) * 100:.1f} %, 90th percentile {(math.exp(pct(dup, 0.9)) - 1) * 100:.1f} %, "
              f"max {(math.exp(max(dup)) - 1) * 100:.1f} %")
    print(f"- LLVM point's p10-p90 spread over its median ({len(llvm_spread)} cases): median "
          f"{pct(llvm_spread, 0.5):.1f} %, 90th percentile {pct(llvm_spread, 0.9):.1f} %")

    # Jobs of these programs: status, and the launches gridsel kept as given.
    print("\n## Jobs\n")
    print("| job | status | wall s | REPS | pairs summarized / kept as given / dropped or unmeasured |")
    print("|---|---|---|---|---|")
    given = []
    with open(os.path.join(R, "jobs.jsonl")) as f:
        jobs = [json.loads(line) for line in f]
    summarized = set(cases)
    for j in sorted(jobs, key=lambda j: (order.index(pat[j["program"]]) if j["program"] in pat else 99,
                                         j["program"], j["n"])):
        if j["program"] not in progs:
            continue
        ks, kg, kd = 0, 0, 0
        for q in j.get("pairs", []):
            pk = (j["program"], q["kernel"], q["trip_count"])
            if q.get("kept_as_given"):
                kg += 1
                given.append((j, q))
            elif pk in summarized:
                ks += 1
            else:
                kd += 1
        reps = j.get("prog_reps")
        if j.get("reps_reduced_from"):
            reps = f"{reps} (from {j['reps_reduced_from']})"
        print(f"| {record_key(j)} | {j['status']} | {j.get('wall_s') or '-'} | {reps or '-'} | "
              f"{ks} / {kg} / {kd} |")

    if given:
        print("\n## Kept as given (trip count 0: LLVM's grid under every policy, the sweep's too)\n")
        print("| job | kernel | LLVM | median ms | spread | samples |")
        print("|---|---|---|---|---|---|")
        for j, q in given:
            raw = os.path.join(R, "raw", f"{record_key(j)}.csv.gz")
            ms, grids = [], set()
            with gzip.open(raw, "rt", newline="") as f:
                for r in csv.DictReader(f):
                    if r["kernel"] == q["kernel"] and r.get("warmup", "0") != "1":
                        ms.append(int(r["ns"]) / 1e6)
                        grids.add((int(r["threads"]), int(r["blocks"]), r["policy"]))
            med = pct(ms, 0.5)
            spread = (pct(ms, 0.9) - pct(ms, 0.1)) / med * 100
            g = ", ".join(f"{t}x{b} ({lab})" for t, b, lab in sorted(grids))
            print(f"| {record_key(j)} | {short(q['kernel'])} | {g} | {med:.4f} | {spread:.0f} % | {len(ms)} |")


if __name__ == "__main__":
    main()
