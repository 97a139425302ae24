"""What the harness's tests share: the committed fixtures, small results
folders written on the fly, and the gridsel CLI and sm_90 image the commands
that ask gridsel run against.

testdata/results/ is a results folder (summary.csv, points.csv and the
offline policies' files) of four cases of the kernels in
tests/fixtures/images/kernels.sm_90.offload, whose names are fixed in that
committed image, so gridsel describes them:

    kernel             trip       class  llvm          best          notes
    heavy_l39          64         short  32x2 0.50     64x1 0.45
    limit256_l27       1048576    long   128x3200 4.0  64x8192 1.9   thread_limit(256): 256-iteration chunks
    local_array_l57    1048576    long   128x3200 2.0  64x8192 1.0   128-iteration chunks
    spmd_l12           1000       ideal  32x32 3.0     128x8 1.0
"""

import csv
import gzip
import os
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
TESTDATA = os.path.join(HERE, "testdata")
sys.path.insert(0, HERE)

from gridsel_harness.gridsel import research_exe  # noqa: E402
from gridsel_harness.results import RAW_HEADER, append_jsonl  # noqa: E402

MS = 1_000_000  # ns per ms
K = "__omp_offloading_fe00_98e137"  # the fixture image's kernels: K + "_spmd_l12", ...


def read(path):
    with open(path) as f:
        return f.read()


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


class TempDirTest(unittest.TestCase):
    """A test with a fresh folder, self.dir, removed afterwards."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, self.dir)

    def results_copy(self):
        """A writable copy of testdata/results."""
        dst = os.path.join(self.dir, "results")
        shutil.copytree(os.path.join(TESTDATA, "results"), dst)
        return dst

    def fixture_binaries(self):
        """A binaries folder whose program `kernels` is the committed sm_90 image."""
        dst = os.path.join(self.dir, "bin")
        os.makedirs(dst)
        shutil.copy(os.path.join(REPO, "tests/fixtures/images/kernels.sm_90.offload"), os.path.join(dst, "kernels"))
        return dst


def gridsel_cli():
    """The gridsel CLI the test command built, with gridsel-research beside it: $GRIDSEL_CLI,
    else target/debug or target/release."""
    for path in (os.environ.get("GRIDSEL_CLI"), os.path.join(REPO, "target/debug/gridsel"),
                 os.path.join(REPO, "target/release/gridsel")):
        if path and all(os.access(p, os.X_OK) for p in (path, research_exe(path))):
            return path
    raise AssertionError("no gridsel and gridsel-research: run `cargo build` (or set GRIDSEL_CLI)")


def write_results(root, program, n, pairs, rows, status="ok", warmup_rows=()):
    """A results dir with one job; rows = [(kernel, trip, label, threads, blocks, ns)]."""
    os.makedirs(os.path.join(root, "raw"), exist_ok=True)
    with gzip.open(os.path.join(root, "raw", f"{program}-{n}.csv.gz"), "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(RAW_HEADER)
        for r in warmup_rows:
            k, t, lab, th, bl, ns = r
            w.writerow([k, t, lab, bl, th, ns, program, n, 1])
        for r in rows:
            k, t, lab, th, bl, ns = r
            w.writerow([k, t, lab, bl, th, ns, program, n, 0])
    rec = {"program": program, "n": n, "status": status, "reps": 3, "pairs": pairs,
           "cycle_lengths": [4], "env": {"gpu": "TestGPU", "driver": "1.0", "commit": "abc",
                                         "date": "2025-01-01T00:00:00+00:00", "llvm": "19.1.7"}}
    append_jsonl(os.path.join(root, "jobs.jsonl"), rec)


def write_profiles(folder, procs):
    """folder/profiles/PROGRAM.ROUND.POLICY.csv in GRIDSEL_PROFILE's format, from
    {(program, round, policy): [(kernel, trip_count, blocks, threads, ns), ...]}."""
    os.makedirs(os.path.join(folder, "profiles"), exist_ok=True)
    for (prog, rnd, pol), rows in procs.items():
        with open(os.path.join(folder, "profiles", f"{prog}.{rnd}.{pol}.csv"), "w") as f:
            f.write("kernel,trip_count,policy,blocks,threads,ns\n")
            for kernel, trip, blocks, threads, ns in rows:
                f.write(f"{kernel},{trip},{pol},{blocks},{threads},{ns}\n")


def write_executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)
    return path
