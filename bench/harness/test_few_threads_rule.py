#!/usr/bin/env python3
"""few_threads_rule.py (undoing rule 1 for some kernels, judged leave-one-program-out): the
family's grids on small synthetic inputs."""

import unittest

import few_threads_rule as ftr


class FamilyGrids(unittest.TestCase):
    def test_llvms_grid_or_one_warp_per_sm_where_registers_stack_and_trips_say(self):
        tile, light, buffered = ("p", "tile", 65536), ("p", "light", 65536), ("p", "buf", 65536)
        table = {pk: {"llvm": (32, 2048, 4.0, 1.0), "auto": (128, 512, 5.0, 1.0)} for pk in (tile, light, buffered)}
        facts = {tile: {"registers": 128, "local_mem": 0}, light: {"registers": 40, "local_mem": 0},
                 buffered: {"registers": 96, "local_mem": 8192}}
        measured = {tile: {(32, 128): 3.0}, buffered: {(32, 132): 1.0}}
        stand_ins = set()
        fam = ftr.family_grids([tile, light, buffered], table, facts, measured, 132, stand_ins)
        shipped = {pk: (128, 512, 5.0) for pk in table}
        self.assertEqual(fam[ftr.SHIPPED], shipped)
        # From 96 registers, no stack, from 2^16: the tile kernel alone.
        self.assertEqual(fam[("llvm", (96, 0), 1 << 16)], {**shipped, tile: (32, 2048, 4.0)})
        # Any stack: the buffered kernel too; one 32-thread block per SM, 128 standing in for 132.
        self.assertEqual(fam[("32xSMs", (96, None), 1 << 16)],
                         {**shipped, tile: (32, 132, 3.0), buffered: (32, 132, 1.0)})
        self.assertEqual(stand_ins, {(tile, 32, 132)})
        # Above the trip count: nothing moves.
        self.assertEqual(fam[("llvm", (0, None), 1 << 17)], shipped)


if __name__ == "__main__":
    unittest.main()
