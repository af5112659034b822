"""fidelity.py's join of ktune records with an engine benchmark's lines,
on records built here (no GPU)."""

import contextlib
import gzip
import io
import json
import os
import tempfile
import unittest

import fidelity as fd


def record(variant, heads, kv_heads, batch, nkv, page, cold, hot=None, graph=None, status="ok"):
    probes = [{"probe": n, "summary": {"median": us * 1e3}} for n, us in (("cold", cold), ("hot", hot), ("graph", graph)) if us]
    return {"status": status, "probes": probes,
            "config": {"variant": variant, "nkv": nkv, "shape": {"heads": heads, "kv_heads": kv_heads, "batch": batch},
                       "defines": [{"name": "HEAD_DIM", "value": "128"}, {"name": "PAGE_SIZE", "value": str(page)}]}}


def fi_line(form, layout, nkv, page, cold, hot=None, **kw):
    b = {"form": form, "layout": layout, "heads": 32, "kv_heads": 8, "batch": 1, "nkv": nkv, "page": page, "us_median": cold}
    if hot is not None:
        b["us_median_hot"] = hot
    b.update(kw)
    return b


class TestJoin(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, recs):
        path = os.path.join(self.dir, name)
        opener = gzip.open if name.endswith(".gz") else open
        with opener(path, "wt", encoding="utf-8") as f:
            for r in recs:
                f.write(json.dumps(r) + "\n")
        return path

    def run_main(self, *args):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = fd.main(list(args))
        return rc, out.getvalue(), err.getvalue()

    def test_flashinfer_points_join_on_form_layout_and_page(self):
        # Two ktune records differing only in the page size: each line
        # must take its own, so the ratios are 1.01 and 0.90, not one of
        # them twice. The .gz results file is read like a plain one.
        res = self.write("r.jsonl.gz", [
            record("flashinfer-planned-hnd", 32, 8, 1, 8192, 16, cold=10.1, hot=8.0),
            record("flashinfer-planned-hnd", 32, 8, 1, 8192, 64, cold=9.0, hot=7.0),
        ])
        bench = self.write("b.jsonl", [fi_line("planned", "hnd", 8192, 16, 10.0, 8.0),
                                       fi_line("planned", "hnd", 8192, 64, 10.0, 7.0)])
        rc, out, _ = self.run_main("--bench", bench, res)
        self.assertEqual(rc, 0)
        self.assertIn("| 32/8 b1 p16 hnd planned nkv 8192 | 10.00 | 10.10 | 1.010 | ok |", out)
        self.assertIn("| 32/8 b1 p64 hnd planned nkv 8192 | 10.00 | 9.00 | 0.900 | ok |", out)
        self.assertIn("1 of 2 points within 3.0%", out)
        self.assertIn("outside: 32/8 b1 p64 hnd planned nkv 8192", out)

    def test_a_record_that_failed_its_gates_never_agrees(self):
        # Equal times, but the ktune point failed a gate: outside.
        res = self.write("r.jsonl", [record("flashinfer-split-nhd", 32, 8, 1, 2048, 16, cold=30.0, status="gate_failed")])
        bench = self.write("b.jsonl", [fi_line("split", "nhd", 2048, 16, 30.0)])
        rc, out, _ = self.run_main("--bench", bench, res)
        self.assertEqual(rc, 0)
        self.assertIn("0 of 1 points within", out)
        self.assertIn("| gate_failed |", out)

    def test_a_bench_line_without_its_ktune_record_fails_the_run(self):
        res = self.write("r.jsonl", [record("flashinfer-single-hnd", 32, 8, 1, 2048, 16, cold=30.0)])
        bench = self.write("b.jsonl", [fi_line("single", "hnd", 2048, 16, 30.0), fi_line("single", "nhd", 2048, 16, 30.0)])
        rc, out, err = self.run_main("--bench", bench, res)
        self.assertEqual(rc, 1)
        self.assertIn("no ktune record: 32/8 b1 p16 nhd single nkv 2048", err)
        self.assertIn("1 of 1 points within", out)

    def test_a_wrong_bench_point_is_shown_not_timed(self):
        res = self.write("r.jsonl", [record("flashinfer-split-hnd", 32, 8, 1, 2048, 16, cold=30.0)])
        bench = self.write("b.jsonl", [fi_line("split", "hnd", 2048, 16, None, wrong="nmse 1 > 1e-4")])
        rc, out, _ = self.run_main("--bench", bench, res)
        self.assertIn("bench: nmse 1 > 1e-4", out)
        self.assertIn("0 of 1 points within", out)

    def test_vllm_caches_are_held_against_the_eager_hot_probe(self):
        res = self.write("r.jsonl", [
            record("vllm-v2-nvcc-eager", 28, 4, 1, 2048, 16, cold=28.0, hot=17.0),
            record("vllm-v2-nvcc", 28, 4, 1, 2048, 16, cold=28.8, hot=18.1),
        ])
        bench = self.write("b.jsonl", [
            {"heads": 28, "kv_heads": 4, "batch": 1, "nkv": 2048, "num_blocks": 1024, "us_median": 17.2},
            {"heads": 28, "kv_heads": 4, "batch": 1, "nkv": 2048, "num_blocks": "capacity", "us_median": 18.0},
        ])
        rc, out, _ = self.run_main("--bench", bench, res)
        self.assertEqual(rc, 0)
        self.assertIn("| 28/4 b1 nkv 2048, 1024 pages | 17.20 | 17.00 | 0.988 | ok | 18.10 | 28.80 |", out)
        self.assertIn("outside: 28/4 b1 nkv 2048, capacity pages", out)

    def test_a_bench_file_of_neither_kind_is_refused(self):
        with self.assertRaises(ValueError):
            fd.engine_of([{"us_median": 1.0}])

    def test_a_resumed_sweep_keeps_the_newer_record(self):
        old = record("flashinfer-single-hnd", 32, 8, 1, 2048, 16, cold=40.0)
        new = record("flashinfer-single-hnd", 32, 8, 1, 2048, 16, cold=30.0)
        self.assertEqual(fd.probe_us(fd.index([old, new])[fd.ktune_key(new)], "cold"), 30.0)


if __name__ == "__main__":
    unittest.main()
