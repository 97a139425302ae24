#!/usr/bin/env python3
"""gridsel measurement harness: sweep launch grids, summarize, report.

Subcommands (see bench/README.md, "## Harness"):
  run        pilot + sweep every (program, size) of the suites, resumable, budgeted
  merge      merge run directories into one results directory (later ones win)
  summarize  RESULTS/summary.csv (policies and best grid per kernel+trip) and points.csv
  add-policy put a policy evaluated offline into RESULTS/summary.csv
  report     RESULTS/report.md (Table I, geomeans) and RESULTS/fig8.svg/.png
  live       RESULTS/live-check.md: whole-program runs per policy against the replay
  best-cache a GRIDSEL_CACHE file of the sweep's best grids, for live runs of `best`
  ceiling    RESULTS/static-ceiling.md: how far any static long-loop rule can go
  crosscheck profile vs. ncu device time for one program under a fixed grid

The code is in gridsel_harness/, one module per job. Everything uses the
standard library only; the plot uses matplotlib when it is importable.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gridsel_harness import crosscheck, live, policies, report, runner, summary  # noqa: E402

COMMANDS = (runner, summary, policies, report, live, crosscheck)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="gridsel_bench.py", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    for module in COMMANDS:
        module.add_commands(sub)
    a = ap.parse_args(argv)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())
