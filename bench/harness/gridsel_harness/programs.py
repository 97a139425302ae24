"""Running the benchmark programs: their environment under gridsel, one run
in its own process group with a time limit, and what it leaves behind (the
`gridsel-bench:` lines it prints, the GRIDSEL_PROFILE rows gridsel writes).
"""

import csv
import datetime
import os
import signal
import subprocess
import time

# The columns of a GRIDSEL_PROFILE file, as gridsel writes them.
PROFILE_HEADER = ["kernel", "trip_count", "policy", "blocks", "threads", "ns"]
LLVM_VERSION = os.environ.get("GRIDSEL_LLVM_VERSION", "19.1.7")


def environment():
    gpu, driver = "none", "none"
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            first = out.stdout.strip().splitlines()[0]
            gpu, _, driver = (x.strip() for x in first.rpartition(","))
    except (OSError, subprocess.TimeoutExpired):
        pass
    return {
        "gpu": gpu,
        "driver": driver,
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": os.environ.get("GRIDSEL_COMMIT", "unknown"),
        "llvm": LLVM_VERSION,
        "host": os.uname().nodename,
        "gridsel_device": os.environ.get("GRIDSEL_DEVICE", ""),
        # The device heap libomptarget asks CUDA for (8 MB when unset): kernels
        # that nest parallel regions need more at large sizes (NOTES.md §9).
        "heap_size": os.environ.get("LIBOMPTARGET_HEAP_SIZE", ""),
    }


def run_prog(argv, env, timeout_s, stdout_path):
    """Runs argv in its own process group; kills the group at timeout_s.
    Returns (returncode or None when killed, wall seconds, stdout text)."""
    t0 = time.monotonic()
    with open(stdout_path, "w") as out:
        p = subprocess.Popen(argv, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=max(timeout_s, 0.1))
        except subprocess.TimeoutExpired:
            rc = None
            for sig, grace in ((signal.SIGTERM, 3), (signal.SIGKILL, 30)):
                try:
                    os.killpg(p.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    p.wait(timeout=grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
    wall = time.monotonic() - t0
    with open(stdout_path, errors="replace") as f:
        text = f.read()
    return rc, wall, text


def check_line(text):
    lines = [l for l in text.splitlines() if l.startswith("gridsel-bench:") and " check=" in l]
    return lines[-1] if lines else ""


def bench_lines(text):
    return [l for l in text.splitlines() if l.startswith("gridsel-bench:")]


def read_profile(path):
    """Rows of a GRIDSEL_PROFILE csv as dicts (header lines repeated by appends are skipped)."""
    rows = []
    if not os.path.exists(path):
        return rows
    with open(path, newline="", errors="replace") as f:
        for rec in csv.reader(f):
            if len(rec) == 7 and rec[2].startswith("fixed:"):
                # gridsel writes the label `fixed:T,B` unquoted: rejoin it.
                rec = rec[:2] + [rec[2] + "," + rec[3]] + rec[4:]
            if len(rec) != 6 or rec[0] == "kernel":
                continue  # header, or a row cut by a kill
            try:
                rows.append({"kernel": rec[0], "trip_count": int(rec[1]), "policy": rec[2],
                             "blocks": int(rec[3]), "threads": int(rec[4]), "ns": int(rec[5])})
            except ValueError:
                continue
    return rows


def prog_env(base, lib, policy, profile):
    env = dict(base)
    env["LD_PRELOAD"] = os.path.abspath(lib) + (":" + env["LD_PRELOAD"] if env.get("LD_PRELOAD") else "")
    env["OMP_TARGET_OFFLOAD"] = "MANDATORY"
    env["GRIDSEL_POLICY"] = policy
    if profile:
        env["GRIDSEL_PROFILE"] = profile
    else:
        env.pop("GRIDSEL_PROFILE", None)
    return env
