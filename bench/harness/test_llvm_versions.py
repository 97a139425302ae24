#!/usr/bin/env python3
"""llvm_versions.py: the GPU check's verdicts on small synthetic runs, with the
launch lines of LLVM 19's and LLVM 21's plugins."""

import io
import os
import unittest

from harness_testing import TempDirTest

import llvm_versions as lv

K = "__omp_offloading_fe00_53605c_"
FACTS = {"exec_mode": "spmd", "registers": 72, "environment": {"exec_mode": 2}}


def launch_19(kernel, blocks, threads):
    return f"omptarget info: Launching kernel {K}{kernel} with {blocks} blocks and {threads} threads in SPMD mode"


def launch_21(kernel, blocks, threads, mode="SPMD"):
    return (f"omptarget info: Launching kernel {K}{kernel} with [{blocks},1,1] blocks and "
            f"[{threads},1,1] threads in {mode} mode")


class LlvmVersions(TempDirTest):
    def run_folder(self, runs):
        """runs: [(program, policy, lines, profile rows (kernel, trip, label, b, t))]."""
        with open(os.path.join(self.dir, "runs.tsv"), "w") as tsv:
            for program, policy, lines, rows in runs:
                tag = f"{program}.{policy.replace(':', '_').replace(',', '_')}"
                tsv.write(f"{program}\t{policy}\t{tag}\t0\t1.5\n")
                with open(os.path.join(self.dir, tag + ".log"), "w") as f:
                    f.write("\n".join(lines + [f"gridsel-bench: prog={program} n=512 check=pass max_err=0"]) + "\n")
                with open(os.path.join(self.dir, tag + ".csv"), "w") as f:
                    f.write("kernel,trip_count,policy,blocks,threads,ns\n")
                    for kernel, trip, label, b, t in rows:
                        quoted = f'"{label}"' if "," in label else label
                        f.write(f"{K}{kernel},{trip},{quoted},{b},{t},1000\n")

    def expected(self, d19, d21, facts21=FACTS):
        return {"gemm": {"facts": {"19": {"gemm_l16": FACTS}, "21": {"gemm_l16": facts21}},
                         "decisions": {"19": d19, "21": d21}}}

    def check(self, expected):
        out = io.StringIO()
        failed = lv.check(self.dir, expected, "21", out)
        return failed, out.getvalue()

    def test_both_launch_line_formats_are_read(self):
        text = "\n".join([launch_19("gemm_l16", 2048, 128), launch_21("gemm_l16", 4, 3, "Generic")])
        self.assertEqual(lv.launches(text), [("gemm_l16", 2048, 128, "SPMD"), ("gemm_l16", 4, 3, "Generic")])

    def test_applied_grids_and_equal_decisions_pass(self):
        self.run_folder([("gemm", "auto", [launch_21("gemm_l16", 2048, 128)] * 2,
                          [("gemm_l16", 262144, "auto", 2048, 128)] * 2)])
        decided = {"auto": {"gemm_l16 262144": ["auto", 2048, 128]}}
        failed, table = self.check(self.expected(decided, decided))
        self.assertEqual(failed, 0, table)
        self.assertIn("2 applied, 0 kept; as 19's: same kernel 1/1, other kernel 0/0", table)

    def test_a_launch_that_ran_another_grid_fails(self):
        self.run_folder([("gemm", "fixed:4,128", [launch_21("gemm_l16", 4, 128), launch_21("gemm_l16", 1, 1)],
                          [("gemm_l16", 262144, "fixed:4,128", 4, 128)] * 2)])
        failed, table = self.check({})
        self.assertEqual(failed, 1, table)
        self.assertIn("FAIL: gemm_l16 trip 262144: decided 4x128 (fixed:4,128), launched 1x1", table)

    def test_a_launch_gridsel_did_not_decide_fails(self):
        self.run_folder([("gemm", "auto", [launch_21("gemm_l16", 2048, 128)] * 2,
                          [("gemm_l16", 262144, "auto", 2048, 128)])])
        failed, table = self.check({})
        self.assertEqual(failed, 1, table)
        self.assertIn("gemm_l16: 2 launches reported, 1 decided", table)

    def test_another_decision_for_the_same_kernel_fails_unless_the_kernel_differs(self):
        self.run_folder([("gemm", "lloyd", [launch_21("gemm_l16", 1000, 96)],
                          [("gemm_l16", 262144, "lloyd", 1000, 96)])])
        d19 = {"lloyd": {"gemm_l16 262144": ["lloyd", 2000, 96]}}
        d21 = {"lloyd": {"gemm_l16 262144": ["lloyd", 1000, 96]}}
        failed, table = self.check(self.expected(d19, d21))
        self.assertEqual(failed, 1, table)
        self.assertIn("same kernel", table)
        failed, table = self.check(self.expected(d19, d21, dict(FACTS, registers=109)))
        self.assertEqual(failed, 0, table)
        self.assertIn("kernel differs: registers 72->109", table)
        self.assertIn("same kernel 0/0, other kernel 0/1", table)

    def test_llvms_own_grid_is_shown_next_to_the_rule_of_19(self):
        self.run_folder([("gemm", "llvm", [launch_21("gemm_l16", 1024, 128)],
                          [("gemm_l16", 262144, "llvm", 2048, 128)])])
        failed, table = self.check(self.expected({"llvm": {"gemm_l16 262144": ["llvm", 2048, 128]}}, {}))
        self.assertEqual(failed, 0, table)
        line = next(line for line in table.splitlines() if line.startswith("gemm ") and "262144" in line)
        self.assertEqual(line.split()[4:], ["2048x128", "2048x128", "1024x128", "<-", "differs"])


if __name__ == "__main__":
    unittest.main()
