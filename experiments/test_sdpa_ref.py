"""CPU tests of sdpa_ref.py's pure parts: run `python3 -m unittest` here."""

import json
import math
import os
import re
import sys
import unittest
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sdpa_ref  # noqa: E402

RECORD_GO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "internal", "results", "record.go")


def go_json_fields():
    """struct name -> set of JSON field names, read from record.go, so that
    the records written here are checked against the Go schema itself."""
    with open(RECORD_GO, encoding="utf-8") as f:
        text = f.read()
    out = {}
    for m in re.finditer(r"^type (\w+) struct \{(.*?)^\}", text, re.S | re.M):
        out[m.group(1)] = set(re.findall(r'json:"([a-z0-9_]+)', m.group(2)))
    return out


SHAPE = {"name": "7b", "heads": 28, "kv_heads": 4, "head_dim": 128, "kv_dtype": "f16", "batch": 1, "capacity": 32768}


class TestStatistics(unittest.TestCase):
    def test_quantile_type7(self):
        # Hand-computed: h = (n-1)p.
        x = [1.0, 2.0, 3.0, 4.0, 5.0]
        self.assertEqual(sdpa_ref.quantile(x, 0.25), 2.0)
        self.assertEqual(sdpa_ref.quantile(x, 0.75), 4.0)
        self.assertEqual(sdpa_ref.quantile([1.0, 2.0, 3.0, 4.0], 0.5), 2.5)
        self.assertEqual(sdpa_ref.quantile([1.0, 2.0, 3.0, 4.0], 0.25), 1.75)  # h = 0.75
        self.assertEqual(sdpa_ref.quantile([7.0], 0.75), 7.0)
        self.assertEqual(sdpa_ref.quantile(x, 1.0), 5.0)

    def test_summarize(self):
        s = sdpa_ref.summarize([40.0, 10.0, 30.0, 20.0])
        # sorted 10 20 30 40: q1 at h=0.75 -> 17.5, median 25, q3 at h=2.25 -> 32.5
        self.assertEqual(s, {"n": 4, "median": 25.0, "min": 10.0, "max": 40.0,
                             "q1": 17.5, "q3": 32.5, "rel_noise": 15.0 / 25.0})
        self.assertEqual(sdpa_ref.summarize([])["n"], 0)
        self.assertEqual(sdpa_ref.summarize([0.0, 0.0])["rel_noise"], 0.0)

    def test_stop_rule(self):
        r = sdpa_ref.StopRule(min_samples=10, max_samples=200, max_noise=0.03, budget_s=2.0)
        quiet = [100.0] * 9
        self.assertEqual(r.decide([], 0), (True, False, ""))
        self.assertEqual(r.decide(quiet, 0.1), (True, False, ""))  # quiet but < 10
        self.assertEqual(r.decide(quiet + [100.0], 0.1), (False, True, ""))
        noisy = [100.0, 150.0] * 10
        more, conv, note = r.decide(noisy, 0.5)
        self.assertTrue(more)
        more, conv, note = r.decide(noisy, 2.0)
        self.assertEqual((more, conv), (False, False))
        self.assertIn("time budget", note)
        self.assertIn("noise", note)
        more, conv, note = r.decide(quiet[:3], 2.5)  # budget beats the minimum
        self.assertEqual((more, conv), (False, False))
        self.assertIn("fewer than the 10 samples", note)
        more, conv, note = r.decide([100.0, 150.0] * 100, 0.1)
        self.assertEqual((more, conv), (False, False))
        self.assertIn("200-sample limit", note)


class TestNumerics(unittest.TestCase):
    def test_metrics(self):
        m = sdpa_ref.error_metrics([1.0, 0.5, 0.0005], [1.0, 0.4, 0.0])
        self.assertAlmostEqual(m["max_abs"], 0.1)
        self.assertAlmostEqual(m["max_rel"], 0.25)  # 0.1/0.4; |ref| 0 is below the floor
        self.assertAlmostEqual(m["nmse"], (0.01 + 0.0005 ** 2) / (1 + 0.16))
        self.assertEqual(m["nans"], 0)

    def test_gate(self):
        tol = sdpa_ref.DEFAULT_TOL
        ok = sdpa_ref.tolerance_gate([0.5, -0.25], [0.5001, -0.25], 1641, 1, tol)
        self.assertTrue(ok["pass"])
        self.assertEqual((ok["kind"], ok["nkv"], ok["seed"]), ("tolerance", 1641, 1))
        bad = sdpa_ref.tolerance_gate([0.5, -0.2], [0.5, -0.25], 1641, 1, tol)
        self.assertFalse(bad["pass"])
        nan = sdpa_ref.tolerance_gate([float("nan"), 1.0], [0.0, 1.0], 1641, 1, tol)
        self.assertFalse(nan["pass"])
        self.assertEqual(nan["nans"], 1)
        json.dumps(nan, allow_nan=False)  # stays valid JSON
        zero = sdpa_ref.tolerance_gate([1.0], [0.0], 1, 1, tol)  # nmse over a zero reference
        self.assertFalse(zero["pass"])
        json.dumps(zero, allow_nan=False)

    def test_half_ulp(self):
        # internal/oracle.HalfULP: half the spacing at |x|.
        self.assertEqual(sdpa_ref.half_ulp("f16", 1.0), 2.0 ** -11)
        self.assertEqual(sdpa_ref.half_ulp("f16", -1.5), 2.0 ** -11)
        self.assertEqual(sdpa_ref.half_ulp("f16", 0.0), 2.0 ** -25)  # the subnormals' spacing
        self.assertEqual(sdpa_ref.half_ulp("bf16", 1.0), 2.0 ** -8)
        self.assertEqual(sdpa_ref.half_ulp("bf16", 0.01), 2.0 ** -15)  # 0.01 in [2^-7, 2^-6)
        self.assertEqual(sdpa_ref.half_ulp("f32", 1.0), 0.0)
        self.assertEqual(sdpa_ref.half_ulp("", 1.0), 0.0)

    def test_out_format_allowance(self):
        """A bf16 store of the exact result is not the kernel's error: its
        rounding (up to 2^-9 relative) would fail NMSE 1e-6 on its own."""
        tol = sdpa_ref.DEFAULT_TOL
        ref = [0.0123 + 1e-5 * i for i in range(200)]
        half = [r + sdpa_ref.half_ulp("bf16", r) for r in ref]  # the worst rounding
        self.assertFalse(sdpa_ref.tolerance_gate(half, ref, 1641, 1, tol)["pass"])
        g = sdpa_ref.tolerance_gate(half, ref, 1641, 1, tol, out_dtype="bf16")
        self.assertTrue(g["pass"])
        self.assertEqual((g["max_rel"], g["nmse"]), (0.0, 0.0))
        self.assertGreater(g["max_abs"], 0.0)  # max_abs stays the raw error

    def test_allclose_rule(self):
        """An element passes on max_abs + max_rel |ref| (internal/oracle):
        a 7.5% error on an output of 2e-3 is 1.5e-4, inside max_abs."""
        tol = sdpa_ref.DEFAULT_TOL
        g = sdpa_ref.tolerance_gate([2.15e-3, 0.5], [2e-3, 0.5], 1641, 1, tol)
        self.assertTrue(g["pass"])
        self.assertAlmostEqual(g["max_rel"], 0.075)
        m = sdpa_ref.error_metrics([0.5, 0.1 + 5e-3], [0.5, 0.1], tol=tol)
        self.assertEqual(m["outside"], 1)  # 5e-3 > 2e-3 + 0.02 * 0.1


class TestRecords(unittest.TestCase):
    def record(self):
        cfg = sdpa_ref.make_config("sdpa", "cudnn", SHAPE, 32768, {"LAYOUT": "bshd", "GQA": "native"})
        env = {"device": "NVIDIA H200", "device_index": 0, "arch": "sm_90", "sms": 132, "l2_bytes": 60 << 20,
               "mem_bytes": 1, "driver": "13.0", "nvrtc": "", "clock_mhz": 0, "mem_clock_mhz": 0,
               "read_bw_gbps": 4560.0, "host": "h", "ktune": "sdpa_ref.py"}
        nbytes = sdpa_ref.kv_bytes(SHAPE, 32768)
        probes = [sdpa_ref.measurement("cold", [2e4, 3e4, 4e4], False, "time budget", nbytes, 4560.0, 1),
                  sdpa_ref.measurement("graph", [1e4] * 10, True, "", nbytes, 4560.0, 20)]
        gate = sdpa_ref.tolerance_gate([0.5], [0.5], 1641, 1, sdpa_ref.DEFAULT_TOL)
        return sdpa_ref.make_record(cfg, env, probes, [gate], datetime(2026, 11, 30, 22, 0, tzinfo=timezone.utc), 3.5)

    def test_bytes_and_rates(self):
        # 1 sequence x (K and V) x 32768 rows x 4 heads x 128 dims x 2 bytes
        self.assertEqual(sdpa_ref.kv_bytes(SHAPE, 32768), 2 * 32768 * 4 * 128 * 2)
        self.assertEqual(sdpa_ref.kv_bytes(dict(SHAPE, batch=16, kv_dtype="f32"), 10), 16 * 2 * 10 * 4 * 128 * 4)
        cold = self.record()["probes"][0]
        self.assertEqual(cold["summary"]["median"], 3e4)
        self.assertAlmostEqual(cold["gbps"], 67108864 / 3e4)  # bytes per ns = GB/s
        self.assertAlmostEqual(cold["pct_bw"], 100 * cold["gbps"] / 4560.0)
        self.assertNotIn("batch", cold)
        self.assertEqual(self.record()["probes"][1]["batch"], 20)

    def test_schema_fields(self):
        """Every key written is a JSON field of the matching Go struct."""
        go = go_json_fields()
        rec = self.record()
        checks = [("Record", rec), ("Config", rec["config"]), ("Shape", rec["config"]["shape"]),
                  ("Env", rec["env"]), ("Compile", rec["compile"]), ("Gate", rec["gates"][0])]
        checks += [("Define", d) for d in rec["config"]["defines"]]
        for p in rec["probes"]:
            checks += [("Measurement", p), ("Summary", p["summary"])]
        for struct, obj in checks:
            self.assertIn(struct, go, "record.go has no struct %s" % struct)
            self.assertLessEqual(set(obj), go[struct], "%s keys not in record.go" % struct)
        # Config and Env carry every field the Go side has without omitempty.
        self.assertEqual(rec["schema"], 1)
        self.assertEqual(rec["status"], "ok")
        self.assertEqual(rec["time"], "2026-11-30T22:00:00Z")
        self.assertEqual([d["name"] for d in rec["config"]["defines"]], ["GQA", "LAYOUT"])
        self.assertEqual((rec["config"]["variant"], rec["config"]["kernel"], rec["config"]["splits"]),
                         ("sdpa-cudnn", "torch", 0))
        json.dumps(rec, allow_nan=False)

    def test_hash(self):
        a = sdpa_ref.make_config("sdpa", "flash", SHAPE, 2048, {"GQA": "native", "LAYOUT": "bshd"})
        b = sdpa_ref.make_config("sdpa", "flash", SHAPE, 2048, {"LAYOUT": "bshd", "GQA": "native"})
        self.assertEqual(sdpa_ref.config_hash(a), sdpa_ref.config_hash(b))
        self.assertRegex(sdpa_ref.config_hash(a), "^[0-9a-f]{64}$")
        for other in (sdpa_ref.make_config("sdpa", "cudnn", SHAPE, 2048, {"GQA": "native", "LAYOUT": "bshd"}),
                      sdpa_ref.make_config("sdpa", "flash", SHAPE, 4096, {"GQA": "native", "LAYOUT": "bshd"}),
                      sdpa_ref.make_config("sdpa", "flash", SHAPE, 2048, {"GQA": "expand", "LAYOUT": "bshd"})):
            self.assertNotEqual(sdpa_ref.config_hash(a), sdpa_ref.config_hash(other))

    def test_append(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "sdpa.jsonl")
            sdpa_ref.append_record(path, self.record())
            sdpa_ref.append_record(path, self.record())
            with open(path, encoding="utf-8") as f:
                lines = f.read().splitlines()
            self.assertEqual(len(lines), 2)
            self.assertEqual(json.loads(lines[0])["hash"], self.record()["hash"])


class TestNoTorch(unittest.TestCase):
    def test_import_is_torch_free(self):
        self.assertNotIn("torch", sys.modules)

    def test_args(self):
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--nkv", "2048,8192", "--batch", "1"])
        self.assertEqual((a.nkv, a.batch, a.heads, a.kv_heads, a.head_dim), ([2048, 8192], [1], 28, 4, 128))
        self.assertEqual((a.min_samples, a.max_noise, a.budget, a.hot_batch), (10, 0.03, 2.0, 20))


if __name__ == "__main__":
    unittest.main()
