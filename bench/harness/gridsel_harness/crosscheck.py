"""`crosscheck`: gridsel's profile timing (launch and wait) against ncu's
device time for one program under one fixed grid.
"""

import csv
import json
import os
import shutil
import statistics
import sys
import tempfile
from collections import defaultdict

from .log import log
from .programs import check_line, environment, prog_env, read_profile, run_prog


def ncu_rows(text):
    """(kernel, block size, grid size, ns) per launch, in launch order, from
    `ncu --csv --metrics gpu__time_duration.sum` (sizes as ncu writes them, "(128, 1, 1)")."""
    lines = text.splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        return
    scale = {"nsecond": 1, "ns": 1, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6, "second": 1e9, "s": 1e9}
    for r in csv.DictReader(lines[start:]):
        if r.get("Metric Name") != "gpu__time_duration.sum":
            continue
        try:
            v = float(r["Metric Value"].replace(",", ""))
        except (KeyError, ValueError):
            continue
        yield (r.get("Kernel Name", "?"), r.get("Block Size", "?"), r.get("Grid Size", "?"),
               v * scale.get(r.get("Metric Unit", "nsecond"), 1))


def parse_ncu_csv(text):
    """{kernel: [ns]} from `ncu --csv --metrics gpu__time_duration.sum`, plus grids seen."""
    out, grids = defaultdict(list), defaultdict(set)
    for name, block, grid, ns in ncu_rows(text):
        out[name].append(ns)
        grids[name].add((block, grid))
    return out, grids


def cmd_crosscheck(a):
    t, b = (int(x) for x in a.grid.split(","))
    binary = os.path.join(a.bin_dir, a.program)
    results = a.results
    os.makedirs(results, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gridsel-xcheck-")
    base = dict(os.environ)
    policy = f"fixed:{t},{b}"
    prof = os.path.join(tmp, "profile.csv")
    argv = [binary, str(a.n), str(a.reps), "2"]
    rc1, wall1, text1 = run_prog(argv, prog_env(base, a.lib, policy, prof), a.timeout_s, os.path.join(tmp, "p.out"))
    per = defaultdict(list)
    grids_p = defaultdict(set)
    for r in read_profile(prof):
        per[r["kernel"]].append(r["ns"])
        grids_p[r["kernel"]].add((r["threads"], r["blocks"]))
    env2 = prog_env(base, a.lib, policy, None)
    ncu_argv = [a.ncu, "--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv"] + argv
    try:
        rc2, wall2, text2 = run_prog(ncu_argv, env2, a.timeout_s, os.path.join(tmp, "ncu.out"))
    except OSError as e:
        rc2, text2 = None, f"cannot run {a.ncu}: {e}"
    dev, grids_n = parse_ncu_csv(text2)
    lines = [f"# crosscheck {a.program} {a.n} under GRIDSEL_POLICY={policy}, {a.reps} reps + 2 warmup",
             f"# env: {json.dumps(environment())}",
             f"# profile run: rc={rc1} {check_line(text1)}",
             f"# ncu run: rc={rc2} {check_line(text2)}",
             "# profile = wall time of __tgt_target_kernel (launch + wait, includes ~20 us launch overhead);",
             "# ncu = gpu__time_duration.sum (device time only). Warmup launches are left out of both.",
             "kernel,profile_median_us,ncu_median_us,diff_us,profile_grids,ncu_grids(block;grid)"]
    for k in sorted(set(per) | set(dev)):
        pm = statistics.median(per[k][2:] or per[k]) / 1e3 if per.get(k) else float("nan")
        nm = statistics.median(dev[k][2:] or dev[k]) / 1e3 if dev.get(k) else float("nan")
        pg = " ".join(f"{x}x{y}" for x, y in sorted(grids_p.get(k, [])))
        ng = " ".join(f"{x};{y}" for x, y in sorted(grids_n.get(k, [])))
        lines.append(f"{k},{pm:.2f},{nm:.2f},{pm - nm:.2f},{pg},{ng}")
    if not dev:
        lines.append(f"# ncu gave no gpu__time_duration rows; its output ends with: {text2[-1500:]!r}")
    out = "\n".join(lines) + "\n"
    path = os.path.join(results, f"crosscheck-{a.program}-{a.n}-{t}x{b}.csv")
    with open(path, "w") as f:
        f.write(out)
    sys.stdout.write(out)
    log(f"wrote {path}")
    shutil.rmtree(tmp, ignore_errors=True)
    return 0 if rc1 == 0 and rc2 == 0 else 1


def add_commands(sub):
    c = sub.add_parser("crosscheck", help="profile vs. ncu for one program and grid")
    c.add_argument("--bin-dir", required=True)
    c.add_argument("--program", default="gemm")
    c.add_argument("--n", type=int, default=1024)
    c.add_argument("--grid", required=True, metavar="T,B")
    c.add_argument("--reps", type=int, default=20)
    c.add_argument("--lib", default="target/release/libgridsel.so")
    c.add_argument("--ncu", default="ncu")
    c.add_argument("--results", default="bench/results/h100")
    c.add_argument("--timeout-s", type=float, default=300)
    c.set_defaults(fn=cmd_crosscheck)
