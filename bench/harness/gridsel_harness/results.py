"""A results folder: what `run` and `merge` write (jobs.jsonl, noise.jsonl,
pilots.jsonl, raw/<program>-<n>.csv.gz) and what `summarize` derives from them
(summary.csv, points.csv), with the readers every later command shares.

    RESULTS/
      jobs.jsonl            one line per job, the last one wins
      raw/KEY.csv.gz        RAW_HEADER rows: the job's profile plus program, n, warmup
                            (KEY: job_key, PROG-N, or PROG-N-teams-change)
      noise.jsonl           the noise runs
      summary.csv           SUMMARY_HEADER: per case each policy's point and the best
      points.csv            POINTS_HEADER: per case every point measured
"""

import csv
import gzip
import json
import os
import re
from collections import OrderedDict, defaultdict

from .programs import PROFILE_HEADER

RAW_HEADER = PROFILE_HEADER + ["program", "n", "warmup"]
SUMMARY_HEADER = ["program", "kernel", "trip_count", "class", "policy", "threads", "blocks",
                  "median_ms", "spread_pct"]
POINTS_HEADER = ["program", "kernel", "trip_count", "label", "threads", "blocks", "n_samples",
                 "median_ms", "p10_ms", "p90_ms"]
CLASS_ORDER = ["long", "ideal", "short"]
TERMINAL = ("ok", "timeout", "check_failed", "failed", "pilot_failed")


# GRIDSEL_TEAMS_REGIONS, gridsel's opt-in for `target teams` regions without a
# distribute loop: under `keep` (the default) their launches keep LLVM's grid and
# the sweep measures nothing else; under `change` it sweeps them. So a job is a
# (program, n, opt-in): a `change` sweep of a program measured under the default
# is another job, not one already done.
TEAMS_REGIONS_DEFAULT = "keep"


def teams_regions(env):
    """The opt-in as gridsel reads it from `env`: `change` only when so written
    (surrounding blanks aside); anything else is the default, as gridsel falls back
    to it with one line for a value it does not know."""
    return "change" if env.get("GRIDSEL_TEAMS_REGIONS", "").strip() == "change" else TEAMS_REGIONS_DEFAULT


def job_key(prog, n, regions=TEAMS_REGIONS_DEFAULT):
    """A job's name (jobs.jsonl, raw/KEY.csv.gz): PROG-N, with -teams-change under the opt-in."""
    return f"{prog}-{n}" if regions == TEAMS_REGIONS_DEFAULT else f"{prog}-{n}-teams-{regions}"


def record_key(j):
    """The job key of a jobs.jsonl record (records without `teams_regions` ran under the default)."""
    return job_key(j["program"], j["n"], j.get("teams_regions", TEAMS_REGIONS_DEFAULT))


def short_kernel(program, kernel):
    m = re.search(r"_l(\d+)$", kernel)
    return f"{program}_l{m.group(1)}" if m else f"{program}:{kernel}"


def read_jsonl(path):
    out = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if line:
                    try:
                        out.append(json.loads(line))
                    except json.JSONDecodeError:
                        pass  # a line cut by a kill; ignore
    return out


def append_jsonl(path, obj):
    with open(path, "a") as f:
        f.write(json.dumps(obj, sort_keys=True) + "\n")
        f.flush()
        os.fsync(f.fileno())


def jobs_in(d):
    """{key: last job record} of a results/run directory."""
    out = OrderedDict()
    for j in read_jsonl(os.path.join(d, "jobs.jsonl")):
        out[record_key(j)] = j
    return out


def done_keys(dirs, retry_failed):
    done = {}
    for d in dirs:
        for key, j in jobs_in(d).items():
            if j.get("status") not in TERMINAL:
                continue
            if retry_failed and j["status"] != "ok":
                continue
            raw = os.path.join(d, "raw", f"{key}.csv.gz")
            if j["status"] == "ok" and not os.path.exists(raw):
                continue
            done[key] = d
    return done


def recorded_bin_dir(results):
    """The binaries folder the jobs of `results` ran, when they all ran the same one."""
    dirs = {j.get("bin_dir") for j in jobs_in(results).values() if j.get("bin_dir")}
    return dirs.pop() if len(dirs) == 1 else None


def iter_raw(path):
    with gzip.open(path, "rt", newline="") as f:
        for row in csv.DictReader(f):
            yield row


def load_summary(results):
    """{(prog, kernel, trip): {"class":..., policy: (threads, blocks, median, spread)}}"""
    table = OrderedDict()
    with open(os.path.join(results, "summary.csv"), newline="") as f:
        for r in csv.DictReader(f):
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            e = table.setdefault(pk, {"class": r["class"]})
            e[r["policy"]] = (int(r["threads"]), int(r["blocks"]), float(r["median_ms"]), float(r["spread_pct"]))
    return table


def load_points(results):
    """{(prog, kernel, trip): {(threads, blocks): fastest median ms of that grid}}"""
    out = defaultdict(dict)
    with open(os.path.join(results, "points.csv"), newline="") as f:
        for r in csv.DictReader(f):
            pk = (r["program"], r["kernel"], int(r["trip_count"]))
            g = (int(r["threads"]), int(r["blocks"]))
            ms = float(r["median_ms"])
            out[pk][g] = min(ms, out[pk].get(g, ms))
    return out
