#!/usr/bin/env python3
"""What reading a learned store costs a production run at start-up.

Builds tests/c/repeat.c for LLVM 19's host plugin (one kernel, `repeat 1 1000`
launches it once), learns its build with one `tune` run, then writes a store
at the format's 4 MiB cap: that kernel's record, settled, plus some 2 500
records of other kernels, as a store shared by many programs holds them.
Then, under the default policy with `GRIDSEL_DEVICE=h100` (host offload):

1. sequential: RUNS rounds, each running once, in turn, the program without
   gridsel, with gridsel and no store (`GRIDSEL_CACHE` a missing file), and
   with the 4 MiB store; wall time of each process (fork to exit), median and
   90th percentile, and the store's cost as the difference of medians; and
   each configuration's CPU time and page faults per process (getrusage of
   the children), which other load on the machine moves less than wall time;
2. concurrent: PROCS processes per configuration, started BATCH at a time
   (each batch waits for its slowest), against no store and the 4 MiB store,
   alternating twice; wall time of all of them.

Checks that the store's launches are profiled `learned` (so the store is read
and applied), and that no run changed, added or removed a file in the store's
folder. Relative numbers only: the machine's other load moves them all.

  bench/startup/store_startup.py [--lib target/release/libgridsel.so] [--runs 100]
                                 [--procs 1000] [--batch 50] [--out DIR]
"""

import argparse
import hashlib
import json
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LLVM19_LIB = "/usr/lib/llvm-19/lib"
MAX_BYTES = 4 << 20
ARGS = ["1", "1000"]


def build_program(out):
    exe = out / "repeat"
    subprocess.run(
        ["clang-19", "-O2", "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu",
         f"-Wl,-rpath,{LLVM19_LIB}", str(REPO / "tests/c/repeat.c"), "-o", str(exe)],
        check=True)
    return exe


def env_for(lib, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRIDSEL_", "LIBOMPTARGET_"))}
    env.update(OMP_NUM_THREADS="1", GRIDSEL_DEVICE="h100", XDG_CACHE_HOME="/nonexistent")
    if lib:
        env["LD_PRELOAD"] = str(lib)
    env.update(extra)
    return env


def learned_record(exe, lib, out):
    """The program's one search, as a `tune` run stores it."""
    scratch = out / "scratch.json"
    subprocess.run([str(exe), "20", "1000"], check=True, stdout=subprocess.DEVNULL,
                   env=env_for(lib, GRIDSEL_POLICY="tune", GRIDSEL_CACHE=str(scratch)))
    text = scratch.read_text()
    records = json.loads(text)["records"]
    journal = Path(str(scratch) + ".journal")
    if journal.exists():
        records += [json.loads(l) for l in journal.read_text().splitlines()[1:]]
    (record,) = {r["kernel"]: r for r in records}.values()
    return record


def store_text(record):
    """A store at the cap: `record` settled on grid:64,7, and others' searches."""
    mine = dict(record, runs=3, launches_per_run=20, settled=[True, True], pinned=None,
                grids={"auto": {"cold": [], "warm": [50000, 50100, 49900]},
                       "grid:64,7": {"cold": [], "warm": [25000, 25050, 24950]}})
    lines = [json.dumps(mine, separators=(",", ":"))]
    size = len(lines[0])
    i = 0
    while True:
        grids = {f"move:{32 * (1 + c % 8)},{c % 5 - 2}": {"cold": [90000 + c],
                                                          "warm": [40000 + 17 * c + s for s in range(8)]}
                 for c in range(12)}
        other = dict(record, kernel=f"__omp_offloading_fd00_{i:x}_other_program_l{i}",
                     grids=grids, **{"class": 10 + i % 20})
        line = json.dumps(other, separators=(",", ":"))
        if size + len(line) + 200 > MAX_BYTES:
            break
        lines.append(line)
        size += len(line) + 2
        i += 1
    return '{"version": 3, "records": [\n' + ",\n".join(lines) + "\n]}\n", len(lines)


def folder_state(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def run_once(exe, env):
    """Wall time, CPU time and minor page faults of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([str(exe), *ARGS], check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return wall, cpu, after.ru_minflt - before.ru_minflt


def run_concurrently(exe, env, procs, batch):
    start = time.perf_counter()
    left = procs
    while left:
        n = min(batch, left)
        ps = [subprocess.Popen([str(exe), *ARGS], stdout=subprocess.DEVNULL, env=env)
              for _ in range(n)]
        for p in ps:
            if p.wait() != 0:
                raise SystemExit(f"a process failed: {p.args}")
        left -= n
    return time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=str(REPO / "target/release/libgridsel.so"))
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--procs", type=int, default=1000)
    ap.add_argument("--batch", type=int, default=50)
    ap.add_argument("--out", default=None)
    a = ap.parse_args()
    lib = Path(a.lib).resolve()
    out = Path(a.out or tempfile.mkdtemp(prefix="gridsel-store-startup-"))
    out.mkdir(parents=True, exist_ok=True)
    exe = build_program(out)
    record = learned_record(exe, lib, out)
    stores = out / "stores"
    stores.mkdir(exist_ok=True)
    store = stores / "tune.json"
    text, records = store_text(record)
    store.write_text(text)
    missing = stores / "missing.json"
    before = folder_state(stores)

    profile = out / "profile.csv"
    subprocess.run([str(exe), *ARGS], check=True, stdout=subprocess.DEVNULL,
                   env=env_for(lib, GRIDSEL_CACHE=str(store), GRIDSEL_PROFILE=str(profile)))
    labels = {line.split(",")[2] for line in profile.read_text().splitlines()[1:]}
    assert labels == {"learned"}, labels

    configs = {
        "no gridsel": env_for(None),
        "gridsel, no store": env_for(lib, GRIDSEL_CACHE=str(missing)),
        f"gridsel, 4 MiB store ({records} records)": env_for(lib, GRIDSEL_CACHE=str(store)),
    }
    times = {name: [] for name in configs}
    for _ in range(a.runs):
        for name, env in configs.items():
            times[name].append(run_once(exe, env))
    print(f"## Start-up of `repeat {' '.join(ARGS)}` (host offload, LLVM 19), {a.runs} interleaved rounds\n")
    print(f"store: {store.stat().st_size} bytes\n")
    print("| configuration | median ms | p90 ms | CPU ms per process | page faults per process |")
    print("|---|---|---|---|---|")
    for name, runs in times.items():
        ts = sorted(w for w, _, _ in runs)
        cpu = statistics.mean(c for _, c, _ in runs)
        faults = statistics.mean(f for _, _, f in runs)
        print(f"| {name} | {statistics.median(ts) * 1e3:.2f} | {ts[int(0.9 * len(ts))] * 1e3:.2f} "
              f"| {cpu * 1e3:.2f} | {faults:.0f} |")
    names = list(configs)
    wall = {name: [w for w, _, _ in runs] for name, runs in times.items()}
    cost = statistics.median(wall[names[2]]) - statistics.median(wall[names[1]])
    print(f"\nthe store's cost, difference of medians: {cost * 1e3:+.2f} ms per process")

    print(f"\n## {a.procs} processes, {a.batch} at a time\n")
    print("| configuration | round | total s | ms per process |")
    print("|---|---|---|---|")
    for round_ in (1, 2):
        for name in names[1:]:
            total = run_concurrently(exe, configs[name], a.procs, a.batch)
            print(f"| {name} | {round_} | {total:.2f} | {total / a.procs * 1e3:.2f} |")

    after = folder_state(stores)
    assert after == before, f"the store's folder changed: {before} -> {after}"
    print("\nthe store's folder is byte-identical after every run; no file was created in it")


if __name__ == "__main__":
    main()
