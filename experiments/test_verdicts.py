import unittest

import verdicts


def record(variant, batch, gate_sec, page=None, cost=None, nkv=2048):
    d = [{"name": "SPLITS", "value": "8"}]
    if page:
        d.append({"name": "PAGE_SIZE", "value": str(page)})
    r = {"status": "ok", "gate_sec": gate_sec, "config": {
        "variant": variant, "kernel": "mma", "nkv": nkv, "defines": d,
        "shape": {"name": f"s-b{batch}", "batch": batch}}}
    if cost:
        r["gate_cost"] = {p + "_sec": v for p, v in cost.items()}
    return r


class TestCost(unittest.TestCase):
    def test_sums_a_kernels_points_and_splits_by_form(self):
        part = dict(inputs=0.5, oracle=0.25, upload=1.0, device=0.75, host=0.5)
        recs = [record("a", 16, 3.0, cost=part), record("a", 16, 0.5, nkv=8192,
                                                         cost=dict(part, upload=0.0, host=0.0)),
                record("b", 16, 7.0, page=16), record("c", 1, 0.6)]
        lines = verdicts.cost(recs)
        self.assertEqual(len(lines), 3, lines)
        b1, b16, b16p = lines
        self.assertIn("batch 1, contiguous: 1 kernels, median 0.60", b1)
        # Kernel a's two points are one kernel: 3.0 + 0.5.
        self.assertIn("batch 16, contiguous: 1 kernels, median 3.50", b16)
        self.assertIn("upload 1.00", b16)
        self.assertIn("inputs 1.00", b16)
        self.assertIn("batch 16, paged 16: 1 kernels, median 7.00", b16p)
        self.assertNotIn("medians of", b16p)


class TestMatch(unittest.TestCase):
    def test_a_define_gained_since_does_not_unmatch(self):
        new = record("a", 1, 0.1)
        new["config"]["defines"].append({"name": "FIXCHUNK", "value": "0"})
        old = record("a", 1, 0.1)
        self.assertEqual(verdicts.match(new, [old]), [old])
        other = record("a", 1, 0.1)
        other["config"]["defines"][0]["value"] = "16"
        self.assertEqual(verdicts.match(new, [other]), [])


if __name__ == "__main__":
    unittest.main()
