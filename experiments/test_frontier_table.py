"""CPU tests of frontier_table.py: run `python3 -m unittest` here."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import frontier_table  # noqa: E402


def rec(shape, variant, nkv, cold, graph, status="ok", kernel="mma", pct=50.0):
    probes = []
    for name, med in (("cold", cold), ("graph", graph)):
        if med is not None:
            probes.append({"probe": name, "summary": {"n": 10, "median": med}, "pct_bw": pct})
    return {"status": status, "probes": probes,
            "config": {"variant": variant, "kernel": kernel, "nkv": nkv, "shape": {"name": shape}}}


class TableTest(unittest.TestCase):
    def test_best_per_probe_and_failed_points_ignored(self):
        recs = [
            rec("7b-f16-b1", "a", 2048, 10000, 7000),
            rec("7b-f16-b1", "b", 2048, 11000, 6000),
            rec("7b-f16-b1", "broken", 2048, 1000, 1000, status="fail"),
            rec("7b-f16-b1", "sdpa-cudnn", 2048, 12000, 8000, kernel="torch"),
        ]
        (r,) = frontier_table.rows(recs)
        self.assertEqual(r["cold"][2], "a")
        self.assertEqual(r["graph"][2], "b")
        self.assertAlmostEqual(r["ratio_cold"], 10000 / 12000)
        self.assertAlmostEqual(r["ratio_graph"], 6000 / 8000)
        self.assertEqual(frontier_table.verdict(r), "met")  # 0.83 and 0.75 <= 0.90

    def test_fp8_compares_with_the_f16_reference_and_says_so(self):
        recs = [
            rec("8b-fp8-b16", "a", 8192, 50000, 49000),
            rec("8b-f16-b16", "sdpa-cudnn", 8192, 100000, 98000, kernel="torch"),
        ]
        (r,) = frontier_table.rows(recs)
        self.assertEqual(r["ref_kv"], "f16")
        self.assertIn("(f16)", frontier_table.markdown([r]))

    def test_missed_and_missing_reference(self):
        recs = [rec("70b-bf16-b1", "a", 32768, 9500, 9000),
                rec("70b-bf16-b1", "sdpa-cudnn", 32768, 10000, 10000, kernel="torch"),
                rec("d64-f16-b1", "a", 32768, 5000, 4000)]
        rs = frontier_table.rows(recs)
        self.assertEqual([frontier_table.verdict(r) for r in rs], ["missed", "no reference"])


if __name__ == "__main__":
    unittest.main()
