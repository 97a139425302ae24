#!/usr/bin/env python3
"""crosscheck (gridsel_harness.crosscheck): a program's GRIDSEL_PROFILE timing
against ncu's, with a stand-in program and a stand-in ncu that prints the
committed output of the real ncu on the H100 (testdata/crosscheck/)."""

import io
import os
import sys
import textwrap
import unittest
from contextlib import redirect_stdout

from harness_testing import TESTDATA, TempDirTest, read, write_executable

import gridsel_bench as gb

KERNEL = "__omp_offloading_fe00_510052_kernel_gemm_l16"

# gemm N REPS WARMUP: the launches of a fixed grid as gridsel profiles them
# (the label `fixed:T,B` unquoted, as gridsel writes it), and the check line.
FAKE_GEMM = textwrap.dedent(f"""\
    #!{sys.executable}
    import os, sys
    n, reps, warm = (int(x) for x in sys.argv[1:4])
    policy = os.environ["GRIDSEL_POLICY"]
    t, b = policy[len("fixed:"):].split(",")
    profile = os.environ.get("GRIDSEL_PROFILE")
    if profile:
        times = [5_000_000] * warm + [810_000, 812_000, 830_000][:reps]
        with open(profile, "a") as f:
            f.write("kernel,trip_count,policy,blocks,threads,ns\\n")
            for ns in times:
                f.write(f"{KERNEL},{{n * n}},{{policy}},{{b}},{{t}},{{ns}}\\n")
    print(f"gridsel-bench: prog=gemm n={{n}} check=pass max_err=0")
    """)

# ncu OPTIONS PROGRAM ARGS...: runs the program, then prints FAKE_NCU_OUTPUT.
FAKE_NCU = textwrap.dedent(f"""\
    #!{sys.executable}
    import os, subprocess, sys
    assert sys.argv[1:6] == ["--clock-control", "none", "--metrics", "gpu__time_duration.sum", "--csv"], sys.argv
    subprocess.run(sys.argv[6:], check=True)
    sys.stdout.write(open(os.environ["FAKE_NCU_OUTPUT"]).read())
    """)


class Crosscheck(TempDirTest):
    def test_profile_and_ncu_medians_side_by_side(self):
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        write_executable(os.path.join(bin_dir, "gemm"), FAKE_GEMM)
        ncu = write_executable(os.path.join(self.dir, "ncu"), FAKE_NCU)
        lib = os.path.join(self.dir, "libgridsel.so")
        open(lib, "w").close()
        os.environ["FAKE_NCU_OUTPUT"] = os.path.join(TESTDATA, "crosscheck", "ncu-gemm.txt")
        self.addCleanup(os.environ.pop, "FAKE_NCU_OUTPUT")
        results = os.path.join(self.dir, "results")
        with redirect_stdout(io.StringIO()) as out:
            rc = gb.main(["crosscheck", "--bin-dir", bin_dir, "--program", "gemm", "--n", "1024",
                          "--grid", "128,8192", "--reps", "3", "--lib", lib, "--ncu", ncu, "--results", results])
        self.assertEqual(rc, 0, out.getvalue())
        text = read(os.path.join(results, "crosscheck-gemm-1024-128x8192.csv"))
        lines = text.splitlines()
        self.assertEqual(lines[0], "# crosscheck gemm 1024 under GRIDSEL_POLICY=fixed:128,8192, 3 reps + 2 warmup")
        self.assertIn("# profile run: rc=0 gridsel-bench: prog=gemm n=1024 check=pass max_err=0", lines)
        self.assertIn("# ncu run: rc=0 gridsel-bench: prog=gemm n=1024 check=pass max_err=0", lines)
        # Both without their two warmup launches: the profile's median of
        # 810/812/830 us; ncu's of 695.904, 705.536, 680.032, 684.352 us
        # (launches 2-5 of the H100's output, thousands separators and all).
        self.assertEqual(lines[-2:], [
            "kernel,profile_median_us,ncu_median_us,diff_us,profile_grids,ncu_grids(block;grid)",
            f"{KERNEL},812.00,690.13,121.87,128x8192,(128, 1, 1);(8192, 1, 1)",
        ])
        self.assertIn(text, out.getvalue())

    def test_a_missing_ncu_is_reported_and_fails(self):
        bin_dir = os.path.join(self.dir, "bin")
        os.makedirs(bin_dir)
        write_executable(os.path.join(bin_dir, "gemm"), FAKE_GEMM)
        lib = os.path.join(self.dir, "libgridsel.so")
        open(lib, "w").close()
        results = os.path.join(self.dir, "results")
        with redirect_stdout(io.StringIO()):
            rc = gb.main(["crosscheck", "--bin-dir", bin_dir, "--grid", "64,16", "--reps", "3", "--lib", lib,
                          "--ncu", os.path.join(self.dir, "no-ncu"), "--results", results])
        self.assertEqual(rc, 1)
        text = read(os.path.join(results, "crosscheck-gemm-1024-64x16.csv"))
        self.assertIn("# ncu gave no gpu__time_duration rows", text)
        self.assertIn(f"{KERNEL},812.00,nan,nan,64x16,", text)


if __name__ == "__main__":
    unittest.main()
