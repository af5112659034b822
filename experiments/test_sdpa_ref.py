"""CPU tests of sdpa_ref.py's pure parts: run `python3 -m unittest` here."""

import glob
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
    """struct name -> set of JSON field names, read from record.go and the
    types it records from other packages (the ABI's shape and defines, the
    statistics' summary), so that the records written here are checked
    against the Go schema itself."""
    text = ""
    internal = os.path.join(os.path.dirname(RECORD_GO), "..")
    for path in [RECORD_GO, os.path.join(internal, "stats", "stats.go")] + sorted(glob.glob(os.path.join(internal, "abi", "*.go"))):
        with open(path, encoding="utf-8") as f:
            text += f.read() + "\n"
    out = {}
    for m in re.finditer(r"^type (\w+) struct \{(.*?)^\}", text, re.S | re.M):
        out[m.group(1)] = set(re.findall(r'json:"([a-z0-9_]+)', m.group(2)))
    return out


def refused_args(test, argv, why):
    """parse_args(argv) exits with a usage error that says why."""
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err), test.assertRaises(SystemExit):
        sdpa_ref.parse_args(argv)
    test.assertIn(why, err.getvalue())


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


MIXED_SPEC = """\
# Shapes of several K/V types and head dims.
name: mixed
description: bf16 and fp8 K/V at head_dim 64, 128 and 256 # a comment
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
  - {name: 7b-bf16, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: bf16, batch: 16}
  - {name: d64-fp8, heads: 32, kv_heads: 8, head_dim: 64, kv_dtype: fp8e4m3, batch: 1, kv_scale: head}
  - {name: d256-fp8, heads: 64, kv_heads: 8, head_dim: 256, kv_dtype: fp8e4m3, batch: 16, capacity: 262144, kv_scale: tensor}
  - name: block
    heads: 64
    kv_heads: 8
    head_dim: 256
    kv_dtype: "bf16"   # quoted
axes:
  nkv: [2048, 8192, 131072]
  SPLITS: [8, 16]
variants:
  - {name: d2, kernel: d2, defines: {SPLITS: [32], NR: 4}}
gates: {max_abs: 5e-3, nmse: 1e-4}
"""

REPO = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


class TestSpecReading(unittest.TestCase):
    def test_fallback_flow_shapes(self):
        doc = sdpa_ref.parse_spec_fallback(MIXED_SPEC)
        self.assertEqual(doc["name"], "mixed")
        self.assertEqual(doc["axes"], {"nkv": [2048, 8192, 131072], "SPLITS": [8, 16]})
        self.assertEqual(doc["shapes"][2], {"name": "d64-fp8", "heads": 32, "kv_heads": 8, "head_dim": 64,
                                            "kv_dtype": "fp8e4m3", "batch": 1, "kv_scale": "head"})
        self.assertEqual(doc["shapes"][4], {"name": "block", "heads": 64, "kv_heads": 8, "head_dim": 256,
                                            "kv_dtype": "bf16"})
        self.assertEqual(doc["variants"], [{"name": "d2", "kernel": "d2", "defines": {"SPLITS": [32], "NR": 4}}])
        self.assertEqual(doc["gates"], {"max_abs": 5e-3, "nmse": 1e-4})

        name, shapes, nkvs = sdpa_ref.spec_shapes(doc)
        self.assertEqual((name, nkvs), ("mixed", [2048, 8192, 131072]))
        self.assertEqual([s["name"] for s in shapes], ["7b", "7b-bf16", "d64-fp8", "d256-fp8", "block"])
        self.assertEqual(shapes[2], {"name": "d64-fp8", "heads": 32, "kv_heads": 8, "head_dim": 64,
                                     "kv_dtype": "fp8e4m3", "batch": 1, "capacity": 131072, "kv_scale": "head"})
        self.assertEqual(shapes[3]["capacity"], 262144)  # set in the spec
        self.assertEqual(shapes[3]["kv_scale"], "tensor")
        self.assertNotIn("kv_scale", shapes[0])  # the key only where set
        self.assertEqual([s["name"] for s in sdpa_ref.spec_shapes(doc, ["block", "7b"])[1]], ["7b", "block"])
        with self.assertRaises(ValueError):
            sdpa_ref.spec_shapes(doc, ["70b"])

    def test_fallback_odd_lines(self):
        doc = sdpa_ref.parse_spec_fallback(
            "name: x\ndescription: >\n  folded text: with a colon\n  - and a dash\nshapes:\n"
            "- {name: 'a#1', heads: 8, kv_heads: 8, head_dim: 64, kv_dtype: f16}  # same indent as the key\n"
            "axes:\n  nkv:\n    - 512\n    - 4096\n")
        self.assertEqual(doc["description"], "folded text: with a colon - and a dash")
        self.assertEqual(doc["shapes"], [{"name": "a#1", "heads": 8, "kv_heads": 8, "head_dim": 64, "kv_dtype": "f16"}])
        self.assertEqual(doc["axes"], {"nkv": [512, 4096]})

    def test_load_spec_without_pyyaml(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "mixed.yaml")
            with open(path, "w", encoding="utf-8") as f:
                f.write(MIXED_SPEC)
            saved = sys.modules.get("yaml")
            sys.modules["yaml"] = None  # import yaml now raises ImportError
            try:
                doc, reader = sdpa_ref.load_spec(path)
                a = sdpa_ref.parse_args(["-o", "x.jsonl", "--shapes-from", path, "--shape-name", "7b-bf16,block"])
            finally:
                if saved is None:
                    del sys.modules["yaml"]
                else:
                    sys.modules["yaml"] = saved
        self.assertEqual(reader, "fallback")
        self.assertEqual(doc, sdpa_ref.parse_spec_fallback(MIXED_SPEC))
        self.assertEqual((a.spec, a.nkv, a.spec_reader), ("mixed", [2048, 8192, 131072], "fallback"))
        self.assertEqual([s["name"] for s in a.shapes], ["7b-bf16", "block"])

    def test_fallback_reads_the_repo_specs_as_pyyaml(self):
        """Every spec in the repository: the fallback and PyYAML agree on
        what this script reads (name, shapes, axes, gates.nkv)."""
        try:
            import yaml
        except ImportError:
            self.skipTest("PyYAML not installed")
        n = 0
        for root, dirs, files in os.walk(REPO):
            dirs[:] = [d for d in dirs if not d.startswith(".")]
            for f in files:
                if not f.endswith(".yaml"):
                    continue
                with open(os.path.join(root, f), encoding="utf-8") as fh:
                    text = fh.read()
                try:
                    want = yaml.safe_load(text)
                except yaml.YAMLError:
                    continue
                if not isinstance(want, dict) or not isinstance(want.get("shapes"), list):
                    continue
                got = sdpa_ref.parse_spec_fallback(text)
                for k in ("name", "shapes", "axes"):
                    self.assertEqual(got.get(k), want.get(k), "%s: %s" % (f, k))
                gates = want.get("gates") if isinstance(want.get("gates"), dict) else {}
                self.assertEqual((got.get("gates") or {}).get("nkv"), gates.get("nkv"), f)
                n += 1
        self.assertGreater(n, 10)

    def test_capacity_default(self):
        # internal/spec: the largest nkv of the axes and of the gates, whose
        # default lengths end at 1641.
        self.assertEqual(sdpa_ref.default_capacity([2048, 131072]), 131072)
        self.assertEqual(sdpa_ref.default_capacity([512]), 1641)
        self.assertEqual(sdpa_ref.default_capacity([512], [1, 4096]), 4096)
        self.assertEqual(sdpa_ref.default_capacity([], None), 1641)
        doc = sdpa_ref.parse_spec_fallback(
            "name: s\nshapes:\n  - {name: a, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}\n"
            "  - {name: b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, capacity: 9000}\n"
            "axes:\n  nkv: [1, 512]\ngates:\n  nkv: [1, 3000]\n")
        _, shapes, _ = sdpa_ref.spec_shapes(doc)
        self.assertEqual([(s["capacity"], s["batch"]) for s in shapes], [(3000, 1), (9000, 1)])
        # The flags: the same rule over --nkv, or --capacity.
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--nkv", "512,1024", "--batch", "1"])
        self.assertEqual(a.shapes[0]["capacity"], 1641)
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--nkv", "512,1024", "--batch", "1", "--capacity", "65536"])
        self.assertEqual(a.shapes[0]["capacity"], 65536)
        refused_args(self, ["-o", "x.jsonl", "--nkv", "4096", "--capacity", "2048"], "below the largest --nkv 4096")

    def test_refused_specs(self):
        doc = sdpa_ref.parse_spec_fallback("shapes:\n  - {name: a, heads: 28, kv_heads: 8, head_dim: 128, kv_dtype: f16}\n")
        with self.assertRaisesRegex(ValueError, "not a multiple"):
            sdpa_ref.spec_shapes(doc)
        doc = sdpa_ref.parse_spec_fallback("shapes:\n  - {name: a, heads: 8, kv_heads: 8, kv_dtype: f16}\n")
        with self.assertRaisesRegex(ValueError, "head_dim missing"):
            sdpa_ref.spec_shapes(doc)
        doc = sdpa_ref.parse_spec_fallback(
            "shapes:\n  - {name: a, heads: 8, kv_heads: 8, head_dim: 64, kv_dtype: fp8e4m3, kv_scale: row}\n")
        with self.assertRaisesRegex(ValueError, "kv_scale"):
            sdpa_ref.spec_shapes(doc)


class TestShapes(unittest.TestCase):
    def test_bf16_record_shape(self):
        _, shapes, _ = sdpa_ref.spec_shapes(sdpa_ref.parse_spec_fallback(MIXED_SPEC), ["7b-bf16"])
        jobs, notes = sdpa_ref.plan_shapes(shapes)
        self.assertEqual(notes, [])
        self.assertEqual(len(jobs), 1)
        self.assertEqual((jobs[0]["dtype"], jobs[0]["dequant"], jobs[0]["defines"]), ("bf16", None, {}))
        cfg = sdpa_ref.make_config("mixed", "cudnn", jobs[0]["shape"], 8192, dict(jobs[0]["defines"], GQA="native"))
        # What ktune writes for this spec shape, key for key.
        self.assertEqual(cfg["shape"], {"name": "7b-bf16", "heads": 28, "kv_heads": 4, "head_dim": 128,
                                        "kv_dtype": "bf16", "batch": 16, "capacity": 131072})
        self.assertLessEqual(set(cfg["shape"]), go_json_fields()["Shape"])
        self.assertEqual(sdpa_ref.kv_bytes(cfg["shape"], 8192), 16 * 2 * 8192 * 4 * 128 * 2)

    def test_fp8_twin(self):
        _, shapes, _ = sdpa_ref.spec_shapes(sdpa_ref.parse_spec_fallback(MIXED_SPEC), ["d64-fp8", "d256-fp8"])
        self.assertEqual(sdpa_ref.kv_bytes(shapes[0], 1000), 2 * 1000 * 8 * 64 * 1)  # fp8: a byte an element
        jobs, notes = sdpa_ref.plan_shapes(shapes, fp8_as="f16")
        self.assertEqual(notes, [])
        self.assertEqual([j["shape"] for j in jobs], [
            {"name": "d64-fp8-f16ref", "heads": 32, "kv_heads": 8, "head_dim": 64, "kv_dtype": "f16",
             "batch": 1, "capacity": 131072},
            {"name": "d256-fp8-f16ref", "heads": 64, "kv_heads": 8, "head_dim": 256, "kv_dtype": "f16",
             "batch": 16, "capacity": 262144},
        ])
        self.assertEqual([(j["dtype"], j["dequant"], j["defines"]) for j in jobs],
                         [("f16", "head", {"DEQUANT": "fp8e4m3-head"}), ("f16", "tensor", {"DEQUANT": "fp8e4m3-tensor"})])
        self.assertEqual(sdpa_ref.kv_bytes(jobs[0]["shape"], 1000), 2 * 1000 * 8 * 64 * 2)  # the f16 it reads
        self.assertEqual(shapes[0]["name"], "d64-fp8")  # the spec's shape is left as it was
        self.assertEqual(shapes[0]["kv_scale"], "head")
        cfg = sdpa_ref.make_config("mixed", "flash", jobs[0]["shape"], 2048, dict(jobs[0]["defines"], GQA="native"))
        self.assertLessEqual(set(cfg["shape"]), go_json_fields()["Shape"])
        self.assertEqual([d["name"] for d in cfg["defines"]], ["DEQUANT", "GQA"])

    def test_fp8_without_fp8_as_writes_nothing(self):
        _, shapes, _ = sdpa_ref.spec_shapes(sdpa_ref.parse_spec_fallback(MIXED_SPEC))
        jobs, notes = sdpa_ref.plan_shapes(shapes)
        self.assertEqual([j["shape"]["name"] for j in jobs], ["7b", "7b-bf16", "block"])
        self.assertEqual(len(notes), 2)
        for n, name in zip(notes, ["d64-fp8", "d256-fp8"]):
            self.assertTrue(n.startswith(name + ": PyTorch SDPA has no fp8 K/V input"), n)
            self.assertIn("no reference row written", n)
        self.assertIn("f32", sdpa_ref.plan_shapes([dict(shapes[0], kv_dtype="f32")])[1][0])

        # The whole script: an fp8 shape alone measures nothing, writes
        # nothing, exits 0, and never needs torch.
        import contextlib
        import io
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            out = os.path.join(d, "sdpa.jsonl")
            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                rc = sdpa_ref.main(["-o", out, "--kv-dtype", "fp8e4m3", "--kv-scale", "head",
                                    "--heads", "32", "--kv-heads", "8", "--head-dim", "64", "--batch", "1,16"])
            self.assertEqual(rc, 0)
            self.assertFalse(os.path.exists(out))
        lines = text.getvalue().splitlines()
        self.assertEqual(sum("no fp8 K/V input" in l for l in lines), 2, lines)  # one a shape
        self.assertNotIn("torch", sys.modules)

    def test_kv_alloc(self):
        sh = sdpa_ref.make_shape("big", 64, 8, 256, "f16", batch=16, capacity=131072)
        self.assertEqual(sdpa_ref.kv_alloc_bytes(sh, [2048, 131072], "bshd"), 2 * 16 * 131072 * 8 * 256 * 2)
        self.assertEqual(sdpa_ref.kv_alloc_bytes(sh, [2048, 65536], "bhsd"), 2 * 16 * (131072 + 65536) * 8 * 256 * 2)

    def test_labels(self):
        sh = sdpa_ref.make_shape("d64-fp8", 32, 8, 64, "fp8e4m3", batch=16, capacity=4096, kv_scale="head")
        self.assertEqual(sdpa_ref.shape_label(sh), "d64-fp8 b16")
        self.assertEqual(sdpa_ref.shape_dims(sh),
                         "32 heads / 8 KV heads / head_dim 64, fp8e4m3 (scale per head), batch 16, capacity 4096")
        self.assertNotIn("kv_scale", sdpa_ref.make_shape("x", 8, 8, 64, "bf16", capacity=1, kv_scale="head"))

    def test_refusal_reason(self):
        why = sdpa_ref.refusal_reason(
            "No available kernel. Aborting execution.",
            ["Flash attention kernel not used because: (Triggered internally at /pytorch/aten/src/x.cpp:12.)",
             "Flash attention requires head_dim <= 256 (Triggered internally at /pytorch/y.cpp:3.)",
             "Flash attention requires head_dim <= 256 (Triggered internally at /pytorch/y.cpp:3.)"])
        self.assertEqual(why, "Flash attention kernel not used because:; Flash attention requires head_dim <= 256; "
                              "No available kernel. Aborting execution.")


class TestNoTorch(unittest.TestCase):
    def test_import_is_torch_free(self):
        self.assertNotIn("torch", sys.modules)

    def test_args(self):
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--nkv", "2048,8192", "--batch", "1"])
        self.assertEqual((a.nkv, a.batch, a.heads, a.kv_heads, a.head_dim), ([2048, 8192], [1], 28, 4, 128))
        self.assertEqual((a.min_samples, a.max_noise, a.budget, a.hot_batch), (10, 0.03, 2.0, 20))
        self.assertEqual(a.shapes, [dict(SHAPE, capacity=8192)])
        self.assertEqual((a.spec, a.fp8_as), ("sdpa", None))

    def test_old_invocation(self):
        """The flags of experiments/results/h200/FRONTIER.md: one family,
        its name and batch."""
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--spec", "h200-fused", "--shape-name", "7b-b1", "--batch", "1"])
        self.assertEqual(a.spec, "h200-fused")
        self.assertEqual(a.nkv, [2048, 8192, 32768, 131072])
        self.assertEqual(a.shapes, [{"name": "7b-b1", "heads": 28, "kv_heads": 4, "head_dim": 128,
                                     "kv_dtype": "f16", "batch": 1, "capacity": 131072}])
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--batch", "1,16", "--heads", "64", "--kv-heads", "8",
                                 "--head-dim", "256", "--kv-dtype", "bf16"])
        self.assertEqual([(s["name"], s["batch"], s["heads"], s["kv_dtype"]) for s in a.shapes],
                         [("7b", 1, 64, "bf16"), ("7b", 16, 64, "bf16")])

    def test_shapes_from_spec(self):
        spec = os.path.join(REPO, "experiments", "h200-frontier.yaml")
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--shapes-from", spec, "--probes", "cold,graph"])
        self.assertEqual(a.spec, "h200-frontier")
        self.assertEqual(a.nkv, [1, 512, 2048, 8192, 32768, 131072])
        self.assertEqual([(s["name"], s["batch"], s["capacity"]) for s in a.shapes],
                         [("7b-b1", 1, 131072), ("7b-b16", 16, 131072)])
        a = sdpa_ref.parse_args(["-o", "x.jsonl", "--shapes-from", spec, "--nkv", "2048", "--spec", "ref"])
        self.assertEqual((a.spec, a.nkv), ("ref", [2048]))
        for flag in (["--batch", "1"], ["--heads", "28"], ["--kv-dtype", "bf16"], ["--capacity", "4096"]):
            refused_args(self, ["-o", "x.jsonl", "--shapes-from", spec] + flag, "drop " + flag[0])
        refused_args(self, ["-o", "x.jsonl", "--shapes-from", spec, "--shape-name", "7b"], "no shape named 7b")


if __name__ == "__main__":
    unittest.main()
