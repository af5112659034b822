import json
import os
import tempfile
import unittest

import reference_table as rt


def record(variant, status, page, nkv, cold_ns, batch=1):
    return {"status": status, "config": {
        "variant": variant, "nkv": nkv,
        "defines": [{"name": "PAGE_SIZE", "value": str(page)}] if page else [],
        "shape": {"name": f"8b-f16-b{batch}", "kv_dtype": "f16", "batch": batch}},
        "probes": [{"probe": "cold", "summary": {"median": cold_ns}}]}


class TestReferenceTable(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def write(self, name, text):
        p = os.path.join(self.dir, name)
        with open(p, "w") as f:
            f.write(text)
        return p

    def test_best_passing_paged_point_only(self):
        recs = [record("fast-but-failed", "gate_failed", 16, 8192, 1000),
                record("contiguous", "ok", 0, 8192, 2000),
                record("slow", "ok", 16, 8192, 9000),
                record("best", "ok", 16, 8192, 8000)]
        p = self.write("k.jsonl", "\n".join(json.dumps(r) for r in recs))
        self.assertEqual(rt.ktune_best(p), {("8b", "f16", 1, 8192, 16, "cold"): (8.0, "best")})

    def test_reference_graph_is_the_faster_plan(self):
        p = self.write("r.csv", "shape,kv_dtype,batch,nkv,page_size,probe,median_us\n"
                                "8b,f16,1,8192,16,graph,20.0\n8b,f16,1,8192,16,graph_plain,9.0\n"
                                "# device: x\n")
        self.assertEqual(rt.reference(p)[("8b", "f16", 1, 8192, 16, "graph")], (9.0, "graph_plain"))

    def test_targets_and_missing_pairs(self):
        best = {("8b", "f16", 1, 8192, 16, "cold"): (9.6, "a"),    # 0.96: met at batch 1
                ("8b", "f16", 1, 8192, 64, "cold"): (9.8, "a"),    # 0.98: missed at batch 1
                ("8b", "f16", 16, 8192, 16, "cold"): (9.9, "b"),   # 0.99: met at batch 16
                ("8b", "f16", 16, 2048, 16, "cold"): (1.0, "b")}   # no reference
        ref = {("8b", "f16", 1, 8192, 16, "cold"): (10.0, "cold"),
               ("8b", "f16", 1, 8192, 64, "cold"): (10.0, "cold"),
               ("8b", "f16", 16, 8192, 16, "cold"): (10.0, "cold")}
        _, met, missed, lacking = rt.table(best, ref)
        self.assertEqual((met, missed), (2, 1))
        self.assertEqual(lacking, [("8b", "f16", 16, 2048, 16, "cold")])


if __name__ == "__main__":
    unittest.main()
