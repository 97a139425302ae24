"""`summarize`: a results folder's raw launches into summary.csv (per
(kernel, trip count) case, each policy's point and the best one) and
points.csv (every point), medians over the timed launches.
"""

import csv
import json
import os
import subprocess
from collections import defaultdict

from .gridsel import Gridsel
from .log import log
from .results import POINTS_HEADER, SUMMARY_HEADER, iter_raw, jobs_in
from .stats import describe


def summarize_dir(results, gridsel=None, bin_dir=None, min_samples=3, quiet=False):
    """Computes and writes summary.csv and points.csv; returns (summary rows, stats)."""
    jobs = jobs_in(results)
    samples = defaultdict(lambda: defaultdict(list))   # (prog, kernel, trip) -> point -> [ms]
    order = defaultdict(list)                          # point order as first seen (cycle order)
    recorded_class, kept, swept = {}, set(), set()
    binaries = {}
    skipped_status = []
    for key, j in jobs.items():
        if j["status"] not in ("ok", "timeout"):
            skipped_status.append(f"{key} ({j['status']})")
            continue
        prog = j["program"]
        # A pair kept as given ran LLVM's grid only (a launch without a trip count under
        # GRIDSEL_TEAMS_REGIONS=keep): its launches are left out, so that the job that swept
        # it (the same program under `change`) alone makes the case.
        given = set()
        for q in j.get("pairs", []):
            pk = (prog, q["kernel"], q["trip_count"])
            recorded_class[pk] = q.get("class", "unknown")
            (given if q.get("kept_as_given") else swept).add(pk)
        kept |= given
        bd = bin_dir or j.get("bin_dir")
        if bd:
            binaries[prog] = os.path.join(bd, prog)
        raw = os.path.join(results, "raw", f"{key}.csv.gz")
        if not os.path.exists(raw):
            continue
        for r in iter_raw(raw):
            if r.get("warmup", "0") == "1":
                continue
            pk = (prog, r["kernel"], int(r["trip_count"]))
            if pk in given:
                continue
            pt = (r["policy"], int(r["threads"]), int(r["blocks"]))
            if pt not in samples[pk]:
                order[pk].append(pt)
            samples[pk][pt].append(int(r["ns"]) / 1e6)

    gs = Gridsel(gridsel) if gridsel and os.path.exists(gridsel) else None
    class_source = defaultdict(int)

    def klass(prog, kernel, trip):
        b = binaries.get(prog)
        if gs and b and os.path.exists(b):
            try:
                c = gs.select(b, kernel, trip)["class"]
                class_source["gridsel select"] += 1
                return c
            except (RuntimeError, KeyError, ValueError, subprocess.TimeoutExpired):
                pass
        class_source["recorded"] += 1
        return recorded_class.get((prog, kernel, trip), "unknown")

    summary, points = [], []
    dropped = []
    dropped_kept = sorted(kept - swept)
    for pk in sorted(samples, key=lambda k: (k[0], k[1], k[2])):
        prog, kernel, trip = pk
        pts = samples[pk]
        if min(len(v) for v in pts.values()) < min_samples:
            dropped.append(pk)
            continue
        # The policies' points first (llvm leading), then the grid in cycle order.
        order[pk].sort(key=lambda p: (p[0] == "grid", p[0] != "llvm"))
        stats = {}
        for pt in order[pk]:
            med, p10, p90, spread = describe(pts[pt])
            stats[pt] = (med, spread)
            points.append([prog, kernel, trip, pt[0], pt[1], pt[2], len(pts[pt]),
                           f"{med:.6f}", f"{p10:.6f}", f"{p90:.6f}"])
        cls = klass(prog, kernel, trip)
        labels = []
        for pt in order[pk]:
            if pt[0] != "grid" and pt[0] not in labels:
                labels.append(pt[0])
        for lab in labels:
            pt = next(p for p in order[pk] if p[0] == lab)
            med, spread = stats[pt]
            summary.append([prog, kernel, trip, cls, lab, pt[1], pt[2], f"{med:.6f}", f"{spread:.2f}"])
        best = min(order[pk], key=lambda p: (stats[p][0], order[pk].index(p)))
        summary.append([prog, kernel, trip, cls, "best", best[1], best[2],
                        f"{stats[best][0]:.6f}", f"{stats[best][1]:.2f}"])
    for name, header, rows in (("summary.csv", SUMMARY_HEADER, summary), ("points.csv", POINTS_HEADER, points)):
        with open(os.path.join(results, name), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(header)
            w.writerows(rows)
    st = {"pairs": len(set(samples) | set(dropped_kept)), "kept": len({(r[0], r[1], r[2]) for r in summary}),
          "dropped": len(dropped), "dropped_list": dropped, "not_swept": len(dropped_kept),
          "skipped_jobs": skipped_status, "class_source": dict(class_source)}
    with open(os.path.join(results, "summary-stats.json"), "w") as f:
        json.dump({k: v for k, v in st.items() if k != "dropped_list"}
                  | {"dropped_pairs": [list(p) for p in dropped]}, f, indent=1)
    if not quiet:
        log(f"summary: {st['kept']} (kernel, trip) pairs kept of {st['pairs']}; dropped {st['dropped']} with "
            f"fewer than {min_samples} samples at some point; {st['not_swept']} not swept (launches with "
            f"explicit num_teams/thread_limit are kept as given); jobs left out: "
            f"{', '.join(skipped_status) or 'none'}; class from {dict(class_source) or '-'}")
        log(f"wrote {os.path.join(results, 'summary.csv')} ({len(summary)} rows), "
            f"{os.path.join(results, 'points.csv')} ({len(points)} rows)")
    return summary, st


def cmd_summarize(a):
    summarize_dir(a.results, a.gridsel, a.bin_dir, a.min_samples)
    return 0


def add_commands(sub):
    s = sub.add_parser("summarize", help="RESULTS/summary.csv and points.csv")
    s.add_argument("results")
    s.add_argument("--gridsel", default="target/release/gridsel")
    s.add_argument("--bin-dir", help="binaries for `gridsel select` (default: as recorded)")
    s.add_argument("--min-samples", type=int, default=3)
    s.set_defaults(fn=cmd_summarize)
