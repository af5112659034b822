"""The pure parts of vllm_bench.py: vLLM's launch geometry, its argument
list in the order of the kernel's mangled parameters, and the two caches'
block tables. No GPU, no torch."""

import ctypes
import random
import unittest

import vllm_bench as vb


class TestGeometry(unittest.TestCase):
    def test_partitions_follow_the_longest_sequence(self):
        # vLLM's eager form: cdiv(nkv, 512) partitions; the reduce's shared
        # memory two floats per partition; the partial's the larger of the
        # partition's logits and half the warps' outputs.
        for nkv, parts in ((1, 1), (512, 1), (513, 2), (32768, 64)):
            (g1, b1, s1), (g2, b2, s2) = vb.geometry(28, 16, nkv)
            self.assertEqual(g1, (28, 16, parts))
            self.assertEqual(g2, (28, 16, 1))
            self.assertEqual(b1, (128, 1, 1))
            self.assertEqual(s1, 2048)
            self.assertEqual(s2, 8 * parts)


class TestArguments(unittest.TestCase):
    def test_partial_matches_the_mangled_signature(self):
        # vPfS2_PT_PKS3_PKT0_S9_ifPKiSB_iPKfiiiSD_SD_iiiii: 3 + 3 pointers,
        # int, float, 2 pointers, int, pointer, 3 ints, 2 pointers, 5 ints.
        p = {k: i + 1 for i, k in enumerate(["exp_sums", "max_logits", "tmp_out", "q", "k", "v", "block_tables",
                                             "seq_lens", "k_scale", "v_scale", "out"])}
        p["max_blocks"] = 2048
        args = vb.partial_args(p, 28, 4)
        kinds = "".join({ctypes.c_void_p: "P", ctypes.c_int32: "i", ctypes.c_float: "f"}[t] for t, _ in args)
        self.assertEqual(kinds, "PPPPPPifPPiPiiiPPiiiii")
        # K [blocks][kv_heads][head/x][16][x]: a block is kv_heads heads of
        # head_size x 16 elements.
        self.assertEqual(args[13][1], 4 * 128 * 16)
        self.assertEqual(args[14][1], 128 * 16)
        self.assertEqual(args[12][1], 28 * 128)
        self.assertEqual(args[10][1], 2048)

    def test_reduce(self):
        p = {"out": 1, "exp_sums": 2, "max_logits": 3, "tmp_out": 4, "seq_lens": 5}
        args = vb.reduce_args(p, 64)
        self.assertEqual([v for _, v in args], [1, 2, 3, 4, 5, 64])

    def test_pack_points_at_each_value(self):
        arr, objs = vb.pack([(ctypes.c_int32, 7), (ctypes.c_float, 0.5)])
        self.assertEqual(len(arr), 2)
        self.assertEqual(ctypes.cast(arr[0], ctypes.POINTER(ctypes.c_int32)).contents.value, 7)
        self.assertEqual(ctypes.cast(arr[1], ctypes.POINTER(ctypes.c_float)).contents.value, 0.5)


class TestBlockTables(unittest.TestCase):
    def test_vllm_cache_repeats_pages(self):
        tables, n = vb.block_tables(16, 32768, vb.VLLM_NUM_BLOCKS, random.Random(0))
        self.assertEqual(n, 1024)
        self.assertEqual(len(tables), 16)
        self.assertTrue(all(len(t) == 2048 for t in tables))
        self.assertTrue(all(0 <= x < 1024 for t in tables for x in t))
        # 32768 entries over 1024 pages: the benchmark's cache repeats.
        self.assertLess(len({x for t in tables for x in t}), 16 * 2048)

    def test_distinct_pages(self):
        tables, n = vb.block_tables(4, 1000, None, random.Random(1))
        flat = [x for t in tables for x in t]
        self.assertEqual(n, 4 * 63)
        self.assertEqual(sorted(flat), list(range(n)))

    def test_capacity_pool(self):
        tables, n = vb.capacity_tables(4, 1000, 32768, random.Random(2))
        flat = [x for t in tables for x in t]
        self.assertEqual(n, 4 * (2048 + 1))
        self.assertTrue(all(len(t) == 63 for t in tables))
        self.assertEqual(len(set(flat)), len(flat))  # each page one sequence's, once
        self.assertTrue(all(0 <= x < n for x in flat))
        self.assertGreater(max(flat), 4 * 63)  # spread over the pool, not packed at its start


if __name__ == "__main__":
    unittest.main()
