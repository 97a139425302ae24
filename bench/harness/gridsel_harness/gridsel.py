"""The `gridsel` CLIs: the one source of the facts the harness needs about
grids and kernels (the sweep space, a policy's choice and loop class, a
kernel's distribute chunk, tune's cache format). The harness asks them and
never computes them itself. A policy's choice is the user's `gridsel
select`; the rest are research commands, of `gridsel-research`, which the
harness takes from beside the `gridsel` it is given (both are built and
staged together).
"""

import csv
import io
import json
import os
import subprocess
from collections import namedtuple

# One case's distribute chunk (iterations per team per round), the trip count's
# chunks, and the most blocks the sweep space tries.
Chunks = namedtuple("Chunks", "chunk chunks max_blocks")

CACHE_COLUMNS = ["kernel", "device", "sm_arch", "trip_count", "threads", "blocks", "ns", "launches"]


def research_exe(exe):
    """The `gridsel-research` beside the `gridsel` at `exe` (on PATH when `exe` is a bare name)."""
    return os.path.join(os.path.dirname(exe), "gridsel-research")


class Gridsel:
    """The CLIs, with caches (gramschmidt has thousands of (kernel, trip) pairs)."""

    def __init__(self, exe, device="h100"):
        self.exe = exe
        self.research_exe = research_exe(exe)
        self.device = device
        self._space = {}
        self._select = {}

    def _call(self, exe, args, timeout, stdin):
        out = subprocess.run([exe] + args, input=stdin, capture_output=True, text=True, timeout=timeout)
        if out.returncode != 0:
            raise RuntimeError(f"{os.path.basename(exe)} {args[0]} failed: {out.stderr.strip()}")
        return out

    def _run(self, args, timeout=60, stdin=None):
        """A user command of `gridsel`."""
        return self._call(self.exe, args, timeout, stdin)

    def research(self, args, timeout=60, stdin=None):
        """A research command of `gridsel-research`."""
        return self._call(self.research_exe, args, timeout, stdin)

    def space(self, binary, kernel, trip):
        """The sweep space of one launch: [(label, threads, blocks)], the policies' points first."""
        key = (binary, kernel, trip)
        if key not in self._space:
            out = self.research(["space", "--device", self.device, "--binary", binary,
                             "--kernel", kernel, "--trip-count", str(trip)])
            pts = []
            for row in csv.DictReader(io.StringIO(out.stdout)):
                pts.append((row["label"], int(row["threads"]), int(row["blocks"])))
            self._space[key] = pts
        return self._space[key]

    def select(self, binary, kernel, trip, policy="lloyd"):
        """`gridsel select --json`: the policy's grid, LLVM's, and the loop class."""
        key = (binary, kernel, trip, policy)
        if key not in self._select:
            out = self._run(["select", "--device", self.device, "--binary", binary,
                             "--kernel", kernel, "--trip-count", str(trip), "--policy", policy, "--json"])
            self._select[key] = json.loads(out.stdout)
        return self._select[key]

    def chunks(self, points, binaries):
        """`gridsel-research chunks`: {(program, kernel, trip): Chunks} for the cases of points.csv
        whose kernel `binaries` describes (fields None where the CLI leaves them empty: an
        unknown execution mode). The CLI's warning about undescribed kernels is passed on."""
        out = self.research(["chunks", "--points", points, "--binaries", binaries, "--device", self.device],
                        timeout=300)
        if out.stderr:
            print(out.stderr.rstrip("\n"), flush=True)
        number = lambda text: int(text) if text else None
        return {(r["program"], r["kernel"], int(r["trip_count"])):
                Chunks(number(r["chunk"]), number(r["chunks"]), number(r["max_blocks"]))
                for r in csv.DictReader(io.StringIO(out.stdout))}

    def cache_entries(self, entries, out):
        """Writes `entries` (dicts with CACHE_COLUMNS) as a GRIDSEL_CACHE file at `out`."""
        text = io.StringIO()
        w = csv.DictWriter(text, fieldnames=CACHE_COLUMNS, lineterminator="\n")
        w.writeheader()
        w.writerows(entries)
        self.research(["cache-entries", "-", "--out", out], stdin=text.getvalue())
