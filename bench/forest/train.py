#!/usr/bin/env python3
"""Trains gridsel's `forest` policy: a random forest predicting ln(kernel ms)
from kernel features and a candidate grid (Lloyd et al. 2018, §III), evaluated
leave-one-kernel-out, exported as the JSON model crates/gridsel-core/src/forest_model.rs reads.

    python3 bench/forest/train.py --results bench/results/h100 \\
        --binaries bench/build/sm_90 --out crates/gridsel-core/data/h100-forest.json \\
        --report bench/results/h100/forest-loo.csv

Inputs: RESULTS/points.csv from `gridsel_bench.py summarize` (when RESULTS has
no points.csv, or it is older than jobs.jsonl, RESULTS is copied to a temporary
folder and summarized there: RESULTS itself is never written except --report)
and, from `gridsel-research features --candidates` on it and BINARIES, every measured
grid's feature row and the candidate grids the `forest` policy searches at run
time (the sweep space's grid points) with theirs.

Outputs: the model (--out), the leave-one-kernel-out report (--report, one row
per (program, kernel, trip count)) and a summary on stderr.
`--fixture DIR` also writes the small test model and its expected predictions
(tests/fixtures/forest/).

Why scikit-learn: it is what IterML used, its RandomForestRegressor is the
Breiman-Cutler forest the paper used, and its trees are plain arrays
(feature, threshold, children, value) that export directly. Only numpy and
scikit-learn are needed; the library itself never runs Python.

Features: this script computes none. `gridsel-research features` prints each row with
the library's own code (`forest_model::features`, what the policy computes at run
time), as the float32 values the trees compare, and names them: the model's
feature list is that header's, so it always matches the library's (which
refuses a model whose list differs).
"""

import argparse
import csv
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from collections import defaultdict

import numpy as np
import sklearn
from sklearn.ensemble import RandomForestRegressor

FORMAT = "gridsel-forest"
VERSION = 1
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

# The device preset the sweep ran on (`gridsel --device`).
DEVICE = "h100"

DEFAULT_PARAMS = dict(n_estimators=8, max_depth=8, min_samples_leaf=3, max_features=0.5,
                      bootstrap=True, random_state=1)


def log(msg):
    print(f"[forest] {msg}", file=sys.stderr, flush=True)


def summarized_points(results, gridsel, binaries):
    pts = os.path.join(results, "points.csv")
    jobs = os.path.join(results, "jobs.jsonl")
    if os.path.exists(pts) and (not os.path.exists(jobs) or os.path.getmtime(pts) >= os.path.getmtime(jobs)):
        return pts, None
    tmp = tempfile.mkdtemp(prefix="gridsel-forest-")
    copy = os.path.join(tmp, "results")
    shutil.copytree(results, copy)
    log(f"summarizing a copy of {results} in {copy}")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench/harness/gridsel_bench.py"), "summarize",
                    copy, "--gridsel", gridsel, "--bin-dir", binaries], check=True)
    return os.path.join(copy, "points.csv"), tmp


def read_points(path):
    cases = defaultdict(list)  # (program, kernel, trip) -> [(label, threads, blocks, ms)]
    with open(path, newline="") as f:
        for r in csv.DictReader(f):
            cases[(r["program"], r["kernel"], int(r["trip_count"]))].append(
                (r["label"], int(r["threads"]), int(r["blocks"]), float(r["median_ms"])))
    return cases


def feature_rows(gridsel, points, binaries):
    """`gridsel-research features --candidates`: the feature names in model order and, per
    (program, kernel, trip) case, its measured grids {(threads, blocks): (feature
    row, fastest median ms)} and the grids the forest searches [((threads, blocks),
    feature row)], in the library's search order."""
    # Beside `gridsel`, as the harness takes it (gridsel_harness.gridsel.research_exe).
    research = os.path.join(os.path.dirname(gridsel), "gridsel-research")
    text = subprocess.run([research, "features", "--candidates", "--points", points,
                           "--binaries", binaries, "--device", DEVICE],
                          check=True, stdout=subprocess.PIPE, text=True).stdout
    reader = csv.DictReader(text.splitlines())
    columns = [c for c in reader.fieldnames if c.startswith("x.")]
    measured, candidates = defaultdict(dict), defaultdict(list)
    for r in reader:
        case = (r["program"], r["kernel"], int(r["trip_count"]))
        grid = (int(r["threads"]), int(r["blocks"]))
        x = [float(r[c]) for c in columns]
        if r["label"] == "candidate":
            candidates[case].append((grid, x))
        else:
            # A grid measured under several labels (a policy's and the grid's) counts at its fastest.
            ms = float(r["median_ms"])
            if grid not in measured[case] or ms < measured[case][grid][1]:
                measured[case][grid] = (x, ms)
    return [c[len("x."):] for c in columns], measured, candidates


def descriptors(gridsel, binaries, programs):
    """The cubin descriptors of the programs' kernels, by (program, kernel), from
    `gridsel inspect --json` (for the fixture's expected.csv)."""
    out = {}
    for prog in sorted(programs):
        text = subprocess.run([gridsel, "inspect", "--json", os.path.join(binaries, prog)],
                              check=True, capture_output=True, text=True).stdout
        for image in json.loads(text):
            if image["image"].get("format") != "cubin":
                continue
            for k in image["kernels"]:
                out[(prog, k["name"])] = k
    return out


def export(model, meta, features, target="ln_ms"):
    trees = []
    for est in model.estimators_:
        t = est.tree_
        leaf = t.children_left == -1
        trees.append({
            "feature": [int(f) if not l else -1 for f, l in zip(t.feature, leaf)],
            "threshold": [float(x) if not l else 0.0 for x, l in zip(t.threshold, leaf)],
            "left": [int(c) for c in t.children_left],
            "right": [int(c) for c in t.children_right],
            "value": [float(v) if l else 0.0 for v, l in zip(t.value[:, 0, 0], leaf)],
        })
    return {"format": FORMAT, "version": VERSION, "target": target, "features": features,
            "meta": meta, "trees": trees}


def write_model(path, doc):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        # One tree per line: small diffs, readable head.
        head = {k: v for k, v in doc.items() if k != "trees"}
        text = json.dumps(head, indent=1)[:-2]
        f.write(text + ',\n "trees": [\n')
        f.write(",\n".join("  " + json.dumps(t, separators=(",", ":")) for t in doc["trees"]))
        f.write("\n ]\n}\n")


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else float("nan")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--results", required=True)
    ap.add_argument("--binaries", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--report")
    ap.add_argument("--gridsel", default=os.path.join(ROOT, "target/release/gridsel"),
                    help="the gridsel CLI; gridsel-research is taken from beside it")
    ap.add_argument("--trees", type=int, default=DEFAULT_PARAMS["n_estimators"])
    ap.add_argument("--max-depth", type=int, default=DEFAULT_PARAMS["max_depth"])
    ap.add_argument("--min-samples-leaf", type=int, default=DEFAULT_PARAMS["min_samples_leaf"])
    ap.add_argument("--max-features", type=float, default=DEFAULT_PARAMS["max_features"])
    ap.add_argument("--seed", type=int, default=DEFAULT_PARAMS["random_state"])
    ap.add_argument("--target", choices=["ln_ms", "ln_rel"], default="ln_rel",
                    help="ln_ms: ln(median ms); ln_rel: ln(ms / the case's median ms over its grids), "
                         "the same argmin with the kernel's scale taken out")
    ap.add_argument("--no-loo", action="store_true", help="skip the leave-one-kernel-out evaluation")
    ap.add_argument("--fixture", help="also write the test fixture model and expected.csv here")
    a = ap.parse_args(argv)
    params = dict(n_estimators=a.trees, max_depth=a.max_depth, min_samples_leaf=a.min_samples_leaf,
                  max_features=a.max_features, bootstrap=True, random_state=a.seed, n_jobs=-1)

    pts_path, tmp = summarized_points(a.results, a.gridsel, a.binaries)
    cases = read_points(pts_path)
    names, measured_of, candidates_of = feature_rows(a.gridsel, pts_path, a.binaries)
    missing = sorted({(p, k) for p, k, t in cases if (p, k, t) not in measured_of})
    if missing:
        log(f"no descriptor for {len(missing)} kernels, left out: {missing}")
    cases = {c: v for c, v in cases.items() if c in measured_of}
    if not cases:
        raise SystemExit(f"train.py: {a.binaries} describes none of the measured kernels; it must hold the "
                         "binaries that were measured (kernel names carry the source file's inode)")
    kernels = sorted({(p, k) for p, k, _ in cases})
    log(f"{len(cases)} cases, {len(kernels)} kernels, {sum(map(len, cases.values()))} points from {pts_path}")

    rows = {}  # case -> (X, y, grids, {grid: fastest median ms})
    for c in cases:
        grids = sorted(measured_of[c])
        seen = {g: measured_of[c][g][1] for g in grids}
        X = np.array([measured_of[c][g][0] for g in grids], dtype=np.float64)
        y = np.array([math.log(seen[g]) for g in grids])
        if a.target == "ln_rel":
            y = y - float(np.median(y))
        rows[c] = (X, y, grids, seen)

    def fit(train_cases):
        X = np.vstack([rows[c][0] for c in train_cases])
        y = np.concatenate([rows[c][1] for c in train_cases])
        return RandomForestRegressor(**params).fit(X, y)

    report = []
    if not a.no_loo:
        for i, kern in enumerate(kernels):
            test = [c for c in cases if (c[0], c[1]) == kern]
            model = fit([c for c in cases if (c[0], c[1]) != kern])
            for c in sorted(test):
                X, y, grids, seen = rows[c]
                err = model.predict(X) - y
                # The grids the library searches; the measured ones when it searches none.
                searched = candidates_of.get(c) or [(g, x) for g, x in zip(grids, X)]
                cand = [g for g, _ in searched]
                pc = model.predict(np.array([x for _, x in searched], dtype=np.float64))
                choice = cand[int(np.argmin(pc))]
                measured = choice in seen
                pick = choice
                if not measured:
                    pm = model.predict(X)
                    pick = grids[int(np.argmin(pm))]
                labels = {lab: (t, b) for lab, t, b, _ in cases[c] if lab != "grid"}
                best = min(seen.values())
                ms = {lab: seen[g] for lab, g in labels.items()}
                f_ms = seen[pick]
                report.append(dict(
                    program=c[0], kernel=c[1], trip_count=c[2],
                    forest_threads=choice[0], forest_blocks=choice[1],
                    measured="yes" if measured else f"no: best-predicted measured {pick[0]}x{pick[1]}",
                    forest_ms=f"{f_ms:.6f}",
                    llvm_ms=f"{ms.get('llvm', float('nan')):.6f}", lloyd_ms=f"{ms.get('lloyd', float('nan')):.6f}",
                    auto_ms=f"{ms.get('auto', float('nan')):.6f}", best_ms=f"{best:.6f}",
                    speedup_vs_llvm=f"{ms['llvm'] / f_ms:.4f}" if "llvm" in ms else "",
                    slowdown_vs_best=f"{f_ms / best:.4f}",
                    rmse_ln=f"{math.sqrt(float(np.mean(err ** 2))):.4f}",
                    n_points=len(grids), n_candidates=len(cand)))
            log(f"fold {i + 1}/{len(kernels)} {kern[0]}/{kern[1][-24:]}: "
                + " ".join(f"{r['slowdown_vs_best']}" for r in report[-len(test):]))
        if a.report:
            with open(a.report, "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(report[0]))
                w.writeheader()
                w.writerows(report)
            log(f"wrote {a.report} ({len(report)} cases)")
        sp = [float(r["speedup_vs_llvm"]) for r in report if r["speedup_vs_llvm"]]
        sl = [float(r["slowdown_vs_best"]) for r in report]
        for name in ("llvm", "lloyd", "auto"):
            xs = [float(r["llvm_ms"]) / float(r[f"{name}_ms"]) for r in report if not math.isnan(float(r[f"{name}_ms"]))]
            log(f"{name:>6}: geomean speedup vs llvm {geomean(xs):.3f}")
        log(f"  best: geomean speedup vs llvm "
            f"{geomean([float(r['llvm_ms']) / float(r['best_ms']) for r in report]):.3f}")
        log(f"forest: geomean speedup vs llvm {geomean(sp):.3f} (min {min(sp):.3f}, max {max(sp):.3f}); "
            f"within 5% of best {sum(s <= 1.05 for s in sl)}/{len(sl)}, within 10% {sum(s <= 1.10 for s in sl)}/{len(sl)}; "
            f"worst {max(sl):.2f}x best; median rmse(ln) {np.median([float(r['rmse_ln']) for r in report]):.3f}")

    model = fit(list(cases))
    meta = {"device": "NVIDIA H100 (sm_90, 132 SMs)", "trained_on": a.results,
            "cases": len(cases), "kernels": len(kernels), "points": int(sum(len(r[1]) for r in rows.values())),
            "sklearn": sklearn.__version__,
            "params": {k: v for k, v in params.items() if k != "n_jobs"}}
    doc = export(model, meta, names, a.target)
    write_model(a.out, doc)
    nodes = sum(len(t["feature"]) for t in doc["trees"])
    log(f"wrote {a.out}: {len(doc['trees'])} trees, {nodes} nodes, "
        f"max depth {max(e.tree_.max_depth for e in model.estimators_)}, {os.path.getsize(a.out)} bytes")

    if a.fixture:
        descs = descriptors(a.gridsel, a.binaries, {p for p, _, _ in cases})
        write_fixture(a.fixture, rows, descs, cases, names)
    if tmp:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


def write_fixture(folder, rows, descs, cases, names):
    """A small model and the predictions scikit-learn makes with it, for tests/forest.rs."""
    os.makedirs(folder, exist_ok=True)
    some = sorted(cases)[::5]
    X = np.vstack([rows[c][0] for c in some])
    y = np.concatenate([rows[c][1] for c in some])
    model = RandomForestRegressor(n_estimators=4, max_depth=5, min_samples_leaf=2, max_features=0.5,
                                  random_state=7).fit(X, y)
    doc = export(model, {"device": "fixture", "note": "tests/forest.rs fixture"}, names)
    write_model(os.path.join(folder, "model.json"), doc)
    cols = ["registers", "shared_mem", "local_mem", "max_threads", "exec_mode", "code_size",
            "trip_count", "threads", "blocks", "prediction"]
    with open(os.path.join(folder, "expected.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(cols)
        for c in sorted(cases)[1::7]:
            k = descs[(c[0], c[1])]
            Xc, _, grids, _ = rows[c]
            idx = range(0, len(grids), max(1, len(grids) // 6))
            pred = model.predict(Xc[list(idx)])
            for j, p in zip(idx, pred):
                t, b = grids[j]
                w.writerow([k.get("registers"), k.get("shared_mem"), k.get("local_mem"), k.get("max_threads"),
                            k.get("exec_mode"), k.get("code_size"), c[2], t, b, repr(float(p))])
    log(f"wrote fixture {folder}/model.json and expected.csv")


if __name__ == "__main__":
    sys.exit(main())
