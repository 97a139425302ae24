#!/usr/bin/env python3
"""long_loop_rule.py (a long-loop rule for `auto` judged leave-one-program-out): which kernels
the rule may move, the resident blocks read from `features`, the family's grids, the noise
test and the sizes read from raw files, on small synthetic inputs."""

import csv
import gzip
import os
import tempfile
import unittest

import long_loop_rule as llr
from gridsel_harness.gridsel import Chunks


def kernel(mode="spmd", nests=False, reduction=None):
    return {"exec_mode": mode, "registers": 64,
            "environment": {"may_use_nested_parallelism": nests, "reduction_data_size": reduction}}


class Eligible(unittest.TestCase):
    def test_only_what_rules_1_to_3_decide(self):
        self.assertTrue(llr.decided_by_long_loop_rules(kernel()))
        self.assertFalse(llr.decided_by_long_loop_rules(kernel(reduction=8)))
        self.assertFalse(llr.decided_by_long_loop_rules(kernel(nests=True)))
        self.assertFalse(llr.decided_by_long_loop_rules(kernel(mode="generic-spmd")))
        # An image that does not say whether the kernel nests: rule 5 keeps LLVM's grid.
        self.assertFalse(llr.decided_by_long_loop_rules(kernel(nests=None)))
        self.assertFalse(llr.decided_by_long_loop_rules({"exec_mode": "spmd"}))


class ResidentBlocks(unittest.TestCase):
    def test_blocks_over_waves_per_block_size(self):
        text = ("program,kernel,trip_count,label,threads,blocks,x.waves\n"
                "p,k,1048576,grid,128,3200,2.0202\n"
                "p,k,1048576,grid,64,1584,0.5\n"
                "p,k,1048576,grid,32,16,0\n")
        self.assertEqual(llr.resident_blocks(text), {("p", "k", 1 << 20): {128: 1584, 64: 3168}})


class FamilyGrids(unittest.TestCase):
    def test_waves_of_resident_blocks_from_the_threshold_at_most_one_per_chunk(self):
        big, small, wide = ("p", "a", 1 << 24), ("p", "b", 1 << 18), ("p", "c", 1 << 24)
        cases = [big, small, wide]
        shipped = {pk: (128, 3200, 1.0) for pk in cases}
        chunks = {big: Chunks(128, 1 << 17, 65536), small: Chunks(128, 2048, 65536), wide: Chunks(32, 1 << 19, 65536)}
        resident = {pk: {64: 1000, 128: 500} for pk in cases}
        measured = {big: {(64, 2000): 0.8, (128, 1000): 0.9}, small: {(64, 2000): 0.7},
                    wide: {(64, 2000): 0.5}}
        stand_ins = set()
        fam = llr.family_grids(cases, shipped, chunks, resident, measured, stand_ins, threads=(64, 128), waves=(2, 4))
        self.assertEqual(fam[llr.SHIPPED], shipped)
        at = fam[(64, 2, 1 << 20)]
        # Two waves of the 1000 blocks resident at 64 threads.
        self.assertEqual(at[big], (64, 2000, 0.8))
        # Below the threshold, and a chunk narrower than the blocks: the shipped grid.
        self.assertEqual(at[small], shipped[small])
        self.assertEqual(at[wide], shipped[wide])
        # From 2^17 the small loop moves too, but gets no more blocks than its 2048 chunks;
        # 2048 was not measured, 2000 stands in (within 10 %).
        self.assertEqual(fam[(64, 4, 1 << 17)][small], (64, 2048, 0.7))
        self.assertEqual(stand_ins, {(small, 64, 2048)})
        # Nothing measured near 4 x 500 = 2000 at 128 threads on the small loop: no time.
        self.assertEqual(fam[(128, 4, 1 << 17)][small], (128, 2000, None))


class Noise(unittest.TestCase):
    def test_more_than_three_percent_and_more_than_llvms_spread(self):
        table = {"quiet": {"llvm": (128, 3200, 1.0, 1.0)}, "noisy": {"llvm": (128, 3200, 1.0, 10.0)}}
        self.assertTrue(llr.outside_noise(table, "quiet", 1.031))
        self.assertFalse(llr.outside_noise(table, "quiet", 1.03))
        self.assertFalse(llr.outside_noise(table, "noisy", 1.09))
        self.assertTrue(llr.outside_noise(table, "noisy", 1.11))


class SweptSizes(unittest.TestCase):
    def test_the_size_each_case_was_swept_at(self):
        with tempfile.TemporaryDirectory() as d:
            os.mkdir(os.path.join(d, "raw"))
            for n, trip in ((512, 262144), (724, 524176)):
                with gzip.open(os.path.join(d, "raw", f"prog-{n}.csv.gz"), "wt", newline="") as f:
                    w = csv.writer(f)
                    w.writerow(["kernel", "trip_count", "policy", "blocks", "threads", "ns", "program", "n", "warmup"])
                    w.writerow(["k", trip, "llvm", 2048, 128, 1000, "prog", n, 1])
            with gzip.open(os.path.join(d, "raw", "other-1.csv.gz"), "wt") as f:
                f.write("garbage")
            want = {("prog", "k", 524176), ("prog", "k", 1)}
            self.assertEqual(llr.swept_sizes(d, want), {("prog", "k", 524176): 724})


if __name__ == "__main__":
    unittest.main()
