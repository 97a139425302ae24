"""The sweep harness behind bench/harness/gridsel_bench.py, one job per module:

    runner      run (pilot, sweep, noise; resumable, budgeted) and merge
    summary     summarize: raw launches -> summary.csv and points.csv
    report      report: Table I, geomeans (report.md) and Fig. 8
    policies    add-policy (offline policies into summary.csv) and ceiling
    live        live (whole-program runs against the replay) and best-cache
    crosscheck  crosscheck: profile timing against ncu

and what they share: results (the results folder's files), programs (running a
benchmark program under gridsel), gridsel (the gridsel CLI, the one source of
grid and kernel facts), stats, log. Each command module has `add_commands(sub)`,
which declares its commands' options on the CLI's subparsers.
"""
