#!/usr/bin/env python3
"""The GPU check of another LLVM version's runtime (bench/gpu/llvm-versions.sh).

Per run (a program of the suite under one policy): whether the program's own
check passed, and whether every launch ran the grid gridsel decided (the
plugin's "Launching kernel ... with B blocks and T threads" line against the
profile row of the same launch). Per decision of a stateless policy: whether
it equals the one gridsel makes for the same program built by clang 19 where
the kernel is the same (same resources and environment, same trip count), and
the one it makes for the same build with the H100 preset instead of the device
(telling a difference of the device's description from one of the version).
Under `llvm` and for launches gridsel keeps as given, the launched grid is
LLVM's own, next to what LLVM 19's rule gives (gridsel's model).

  llvm_versions.py expect VERSION:RUNS:BINDIR... > expected.json   (at staging)
  llvm_versions.py check RUNS EXPECTED VERSION                     (GPU machine)

A RUNS folder holds runs.tsv (program, policy, tag, exit status, seconds) and
per run TAG.log (stdout and stderr with LIBOMPTARGET_INFO=16, GRIDSEL_LOG=info)
and TAG.csv (GRIDSEL_PROFILE). BINDIR holds the programs, for their kernels'
facts (`gridsel inspect --json`, with GRIDSEL_CLI naming gridsel).
Standard library only."""
import argparse
import collections
import csv
import json
import os
import re
import subprocess
import sys

# Policies whose grid is a function of the device, the kernel and the trip
# count: the ones whose decisions are compared across versions.
STATELESS = ("llvm", "auto", "occupancy", "lloyd", "forest", "fixed:4,128")
# The profile's label of a launch forwarded with LLVM's grid.
KEPT = "llvm"

# LLVM 19: "with 4 blocks and 128 threads"; 21 on: "with [4,1,1] blocks and [128,1,1] threads".
LAUNCH = re.compile(
    r"Launching kernel (\S+) with \[?(\d+)(?:,\d+,\d+\])? blocks and \[?(\d+)(?:,\d+,\d+\])? threads"
    r" in (\S+) mode")
CHECK = re.compile(r"check=(\w+)")
SYMBOL = re.compile(r"^__omp_offloading_[0-9a-f]+_[0-9a-f]+_(.+)$")
# Facts of a kernel that do not bear on its grid.
NOT_FACTS = ("name", "code_size")


def kernel_key(symbol):
    """A kernel's name without the device and file ids clang puts in its symbol
    (`<function>_l<line>`), the same across builds of one source."""
    m = SYMBOL.match(symbol)
    return m.group(1) if m else symbol


def launches(log_text):
    """[(kernel, blocks, threads, mode)] in launch order, as the plugin reported them."""
    return [(kernel_key(m.group(1)), int(m.group(2)), int(m.group(3)), m.group(4))
            for m in LAUNCH.finditer(log_text)]


def profile_rows(path):
    """[(kernel, trip, label, blocks, threads)] of a GRIDSEL_PROFILE file, in launch order."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="") as f:
        for row in csv.reader(f):
            if not row or row[0] == "kernel":
                continue
            rows.append((kernel_key(row[0]), int(row[1]), row[2], int(row[3]), int(row[4])))
    return rows


def decisions(rows):
    """{"kernel trip": [label, blocks, threads]}: the first launch of each kernel and trip count."""
    out = {}
    for kernel, trip, label, blocks, threads in rows:
        out.setdefault(f"{kernel} {trip}", [label, blocks, threads])
    return out


def kernel_facts(binary):
    """{kernel: facts} of the cubin kernels in `binary`, by `gridsel inspect --json`."""
    cli = os.environ.get("GRIDSEL_CLI", "gridsel")
    images = json.loads(subprocess.run([cli, "inspect", "--json", binary], check=True,
                                       capture_output=True, text=True).stdout)
    facts = {}
    for image in images:
        if image["image"].get("format") != "cubin":
            continue
        for k in image["kernels"]:
            facts[kernel_key(k["name"])] = {f: v for f, v in k.items() if f not in NOT_FACTS}
    return facts


def read_runs(folder):
    """[(program, policy, tag, status, seconds)] of runs.tsv."""
    with open(os.path.join(folder, "runs.tsv")) as f:
        return [(p, pol, tag, int(rc), float(s))
                for p, pol, tag, rc, s in (line.rstrip("\n").split("\t") for line in f if line.strip())]


def expect(specs):
    """expected.json: per program, each version's kernel facts and stateless decisions."""
    out = collections.defaultdict(lambda: {"facts": {}, "decisions": {}})
    for spec in specs:
        version, folder, bindir = spec.split(":", 2)
        for program, policy, tag, _, _ in read_runs(folder):
            entry = out[program]
            if version not in entry["facts"]:
                entry["facts"][version] = kernel_facts(os.path.join(bindir, program))
            entry["decisions"].setdefault(version, {})[policy] = decisions(
                profile_rows(os.path.join(folder, tag + ".csv")))
    return out


def grid(d):
    return f"{d[1]}x{d[2]}" if d else "-"


def check_run(folder, program, policy, tag, expected, version):
    """One run's verdict: (failures, notes, llvm_rows), each failure and note one line."""
    with open(os.path.join(folder, tag + ".log"), errors="replace") as f:
        text = f.read()
    failures, notes = [], []
    checks = CHECK.findall(text)
    if not checks or any(c != "pass" for c in checks):
        failures.append(f"check={','.join(checks) or 'none'}")
    warnings = [line for line in text.splitlines() if re.match(r"gridsel: (warn|error):", line)]
    if warnings:
        notes.append(f"{len(warnings)} gridsel warning(s), first: {warnings[0][:160]}")

    # Pair each kernel's launches with its profile rows, in order.
    by_kernel = collections.defaultdict(list)
    for launch in launches(text):
        by_kernel[launch[0]].append(launch)
    rows_by_kernel = collections.defaultdict(list)
    rows = profile_rows(os.path.join(folder, tag + ".csv"))
    for row in rows:
        rows_by_kernel[row[0]].append(row)
    applied = kept = 0
    llvm_rows = {}
    for kernel in sorted(set(by_kernel) | set(rows_by_kernel)):
        seen, decided = by_kernel[kernel], rows_by_kernel[kernel]
        if len(seen) != len(decided):
            failures.append(f"{kernel}: {len(seen)} launches reported, {len(decided)} decided")
        for (_, blocks, threads, mode), (_, trip, label, b, t) in zip(seen, decided):
            if label == KEPT:
                kept += 1
                llvm_rows.setdefault((kernel, trip), (mode, (b, t), (blocks, threads)))
            elif (blocks, threads) == (b, t):
                applied += 1
            else:
                failures.append(f"{kernel} trip {trip}: decided {b}x{t} ({label}), launched {blocks}x{threads}")
    if not rows:
        failures.append("no launch decided")
    notes.insert(0, f"{applied} applied, {kept} kept")

    if policy in STATELESS and program in expected:
        facts = expected[program]["facts"]
        ours = decisions(rows)
        here = expected[program]["decisions"].get(version, {}).get(policy, {})
        theirs = expected[program]["decisions"].get("19", {}).get(policy, {})
        # (equal, compared) for the same kernel and for kernels clang 21 compiled otherwise.
        same, other = [0, 0], [0, 0]
        for key, d in sorted(ours.items()):
            kernel = key.split(" ")[0]
            if key in here and here[key] != d:
                notes.append(f"{key}: {grid(d)} on this device, {grid(here[key])} with the H100 preset")
            if key not in theirs:
                notes.append(f"{key}: no LLVM 19 decision for this trip count")
            elif facts.get("19", {}).get(kernel) != facts.get(version, {}).get(kernel):
                other[0] += theirs[key] == d
                other[1] += 1
                if theirs[key] != d:
                    notes.append(f"{key}: {grid(d)}, LLVM 19's build {grid(theirs[key])} (kernel differs: "
                                 + facts_diff(facts["19"].get(kernel), facts[version].get(kernel)) + ")")
            elif theirs[key] == d:
                same[0] += 1
                same[1] += 1
            elif here.get(key) == d:
                same[1] += 1
                failures.append(f"{key}: {grid(d)} ({d[0]}), LLVM 19's build {grid(theirs[key])} ({theirs[key][0]}),"
                                " same kernel")
            else:
                same[1] += 1
                notes.append(f"{key}: {grid(d)}, LLVM 19's build {grid(theirs[key])}: the device, not the version")
        notes.insert(1, f"as 19's: same kernel {same[0]}/{same[1]}, other kernel {other[0]}/{other[1]}")
    return failures, notes, llvm_rows


def facts_diff(a, b):
    if a is None or b is None:
        return "missing in one build"
    diff = []
    for field in sorted(set(a) | set(b)):
        if field == "environment":
            diff += [f"{f} {a[field].get(f)}->{b[field].get(f)}" for f in sorted(a[field])
                     if a[field].get(f) != b[field].get(f)]
        elif a.get(field) != b.get(field):
            diff.append(f"{field} {a.get(field)}->{b.get(field)}")
    return ", ".join(diff)


def check(folder, expected, version, out=sys.stdout):
    """Prints the table; returns the number of failed runs."""
    failed = 0
    llvm_default = {}
    print(f"{'program':<16} {'policy':<12} {'rc':>3} {'s':>6}  verdict", file=out)
    for program, policy, tag, rc, seconds in read_runs(folder):
        failures, notes, llvm_rows = check_run(folder, program, policy, tag, expected, version)
        if rc != 0:
            failures.insert(0, f"exit status {rc}")
        failed += bool(failures)
        print(f"{program:<16} {policy:<12} {rc:>3} {seconds:>6.1f}  {'FAIL' if failures else 'ok'}; "
              + "; ".join(notes[:2]), file=out)
        for line in failures + notes[2:]:
            print(f"{'':<40}{'FAIL: ' if line in failures else ''}{line}", file=out)
        if policy == "llvm":
            for (kernel, trip), row in llvm_rows.items():
                llvm_default[(program, kernel, trip)] = row

    print(f"\nLLVM's own grid (policy llvm): LLVM {version} launched vs LLVM 19's rule (gridsel's model)"
          f" for the LLVM {version} kernel, and for LLVM 19's build of it", file=out)
    print(f"{'program':<16} {'kernel':<28} {'trip':>10} {'mode':<13} {'19 rule':>9} {'19 build':>9}"
          f" {'launched':>9}", file=out)
    for (program, kernel, trip), (mode, model, launched) in sorted(llvm_default.items()):
        theirs = expected.get(program, {}).get("decisions", {}).get("19", {}).get("llvm", {})
        d19 = theirs.get(f"{kernel} {trip}")
        mark = "" if model == launched else "  <- differs"
        print(f"{program:<16} {kernel[:28]:<28} {trip:>10} {mode:<13} {model[0]:>5}x{model[1]:<3} "
              f"{grid(d19):>9} {launched[0]:>5}x{launched[1]:<3}{mark}", file=out)
    runs = len(read_runs(folder))
    print(f"\nLLVM {version} on the GPU: {runs - failed} of {runs} runs correct with gridsel's grids applied",
          file=out)
    return failed


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("expect")
    e.add_argument("specs", nargs="+", metavar="VERSION:RUNS:BINDIR")
    c = sub.add_parser("check")
    c.add_argument("runs")
    c.add_argument("expected")
    c.add_argument("version")
    args = ap.parse_args()
    if args.cmd == "expect":
        json.dump(expect(args.specs), sys.stdout, indent=1, sort_keys=True)
        print()
        return 0
    with open(args.expected) as f:
        expected = json.load(f)
    return 1 if check(args.runs, expected, args.version) else 0


if __name__ == "__main__":
    sys.exit(main())
