#!/usr/bin/env python3
"""Measure PyTorch SDPA decode attention the way ktune measures its kernels.

This is the external reference for ktune's results: torch's
scaled_dot_product_attention at query length 1 with the cuDNN backend
(variant "sdpa-cudnn") and the flash backend ("sdpa-flash"), timed with
ktune's probes and written as ktune results records (one JSON line per
point, internal/results/record.go), so that `ktune report` and `ktune tune`
read them next to ktune's own.

    python3 experiments/sdpa_ref.py --nkv 2048,8192,32768,131072 \\
        --batch 1,16 -o experiments/results/h200/sdpa.jsonl
    python3 experiments/sdpa_ref.py --shapes-from experiments/h200-b16.yaml \\
        -o out/sdpa.jsonl

Shapes: --heads, --kv-heads, --head-dim, --kv-dtype (f16, bf16,
fp8e4m3), --kv-scale (fp8 only), --capacity and --shape-name describe one
family, measured at each --batch; --shapes-from SPEC.yaml instead measures
every shape of a ktune spec (or those named by --shape-name), with --nkv
defaulting to the spec's axes and --spec to its name. Either way each
record's shape is the one ktune writes for that spec shape (name, heads,
kv_heads, head_dim, kv_dtype, batch, capacity; kv_scale only when set on
an fp8 shape, which is never written, see below), capacity defaulting as in internal/spec to the largest nkv
of the axes and of the gates (ktune's default gate lengths end at 1641),
so that `ktune report` puts each SDPA point next to ktune's. The spec is
read with PyYAML where it is installed, else with a small reader of the
YAML ktune specs are written in (block mappings and lists, flow {...} and
[...] values).

Needs PyTorch with CUDA (written against 2.11 cu130) and nothing else.
torch is imported inside main only, so the pure parts (statistics, the
stopping rule, record building, error metrics) are testable on a machine
without it: `cd experiments && python3 -m unittest`.

Method, and where it differs from ktune's:

* every probe: a GPU spin (torch.cuda._sleep, ~250 us) is queued before
  the start event, so the host's dispatch of the timed calls overlaps it
  and is not timed (ktune uses a flag-released blocker instead).
* cold: before each sample, a read of a buffer 2 x the L2 size evicts
  K/V from L2 and leaves clean lines (ktune does the same; a memset would
  leave dirty lines whose write-back lands in the timed call).
* hot: HotBatch back-to-back calls over warm caches between two events,
  time / HotBatch (ktune: the same, behind its blocker).
* graph: HotBatch calls captured once in a torch.cuda.CUDAGraph; each
  sample replays it between two events, time / HotBatch (ktune: the same
  with its partial+combine pair).
* Stopping rule (ktune's defaults): at least 10 samples, then stop once
  (Q3 - Q1) / median <= 0.03, or after 200 samples, or when 2 s of the
  probe's budget are spent (then converged = false and a note says why).
* Quartiles: linear interpolation between closest ranks (Hyndman-Fan
  type 7, NumPy's default), as internal/stats.Quantile.
* Inputs: K and V live in ktune's layout [batch][capacity][kv_heads][dim],
  allocated once per shape at its capacity, and SDPA gets the (batch,
  kv_heads, nkv, dim) view of the first nkv rows, so both read the same
  bytes; with --layout bhsd each point gets contiguous copies instead. Q
  has the K/V dtype, f16 or bf16 (SDPA wants one dtype; ktune's Q is f32).
  SDPA has no positions buffer: the sequence length is the view's length.
  Between shapes the buffers are freed (torch.cuda.empty_cache); a shape
  whose K/V would not fit in the free device memory (less 2 GiB) is
  skipped with a message, not measured.
* fp8e4m3: SDPA has no fp8 K/V input, so an fp8 shape is not measured and
  gets no record (one line says so). With --fp8-as f16, SDPA runs on f16
  K/V holding the values quantized to fp8e4m3 (scale amax/448 per tensor
  or per KV head, the shape's kv_scale) and dequantized, and the records
  carry the f16 twin shape (kv_dtype f16, name + "-f16ref") and the define
  DEQUANT=fp8e4m3-<scale>: an f16 measurement of the same problem, never
  an fp8 one. An f32 shape is not measured either (cuDNN and flash take
  f16 and bf16).
* Shapes a backend refuses (a head_dim it has no kernel for, say): nothing
  is written for that backend and shape, its reason (SDPA's warnings and
  error) is printed once, and the run goes on; this does not change the
  exit status, a numerics failure or a failed probe does.
* GQA: with --gqa auto (default) the numerics check tries SDPA's
  enable_gqa=True on the un-expanded K/V first and falls back to K/V
  expanded to the query heads (repeat_interleave, which then reads
  heads/kv_heads times the bytes; bytes and GB/s still count the K/V of
  the problem). The mode that ran is recorded as the define GQA and
  printed.
* Numerics: before timing a backend at a shape, its output at one small
  nkv (--check-nkv) is compared with a float64 reference computed from
  the same f16 or bf16 inputs, with ktune's default bounds and rule
  (internal/oracle: every element within max_abs + max_rel |ref| and the
  NMSE bound, after half an ulp of the output's dtype, SDPA's f16 or bf16
  store, is taken off as the format's share); a backend that fails is not
  timed and none of its points are written.
"""

import argparse
import hashlib
import json
import math
import os
import re
import socket
import sys
import time
import warnings
from datetime import datetime, timezone

SCHEMA = 1
VARIANTS = {"cudnn": "sdpa-cudnn", "flash": "sdpa-flash"}
PROBES = ("cold", "hot", "graph")

# ktune's default oracle-gate bounds (internal/spec, Gates).
DEFAULT_TOL = {"max_abs": 2e-3, "max_rel": 2e-2, "nmse": 1e-6}
# Relative error is only meaningful where the reference is not near zero
# (internal/oracle uses the same floor).
REL_FLOOR = 1e-3

# K/V element types of a shape; SDPA takes f16 and bf16 (f32 exists in
# ktune specs, fp8e4m3 is ktune's quantized K/V).
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "fp8e4m3": 1}
KV_DTYPES = ("f16", "bf16", "fp8e4m3")
SDPA_DTYPES = ("f16", "bf16")
# How an fp8 shape's K/V are scaled: one scale per tensor or per KV head.
KV_SCALES = ("tensor", "head")
# ktune's default gate lengths (internal/spec, Gates.NKV): a shape's
# default capacity covers them as well as the axes' nkv.
KTUNE_GATE_NKV = (1, 29, 52, 512, 1641)
# The name suffix of the f16 twin an fp8 shape is measured as (--fp8-as f16).
F16REF_SUFFIX = "-f16ref"


# ---------------------------------------------------------------- statistics


def quantile(xs, p):
    """The p-quantile of the ascending, non-empty list xs, by linear
    interpolation between closest ranks (Hyndman-Fan type 7): with
    h = (n-1)p, x[floor h] + (h - floor h)(x[floor h + 1] - x[floor h])."""
    h = (len(xs) - 1) * p
    lo = int(math.floor(h))
    if lo + 1 >= len(xs):
        return xs[-1]
    return xs[lo] + (h - lo) * (xs[lo + 1] - xs[lo])


def summarize(ns):
    """ktune's Summary of samples in ns (any order)."""
    if not ns:
        return {"n": 0, "median": 0.0, "min": 0.0, "max": 0.0, "q1": 0.0, "q3": 0.0, "rel_noise": 0.0}
    x = sorted(ns)
    med = quantile(x, 0.5)
    q1, q3 = quantile(x, 0.25), quantile(x, 0.75)
    return {
        "n": len(x),
        "median": med,
        "min": x[0],
        "max": x[-1],
        "q1": q1,
        "q3": q3,
        # A non-positive median cannot be a real timing; 0 keeps the
        # record valid and the rule never calls it converged.
        "rel_noise": (q3 - q1) / med if med > 0 else 0.0,
    }


class StopRule:
    """ktune's stopping rule (internal/stats.Rule) with its defaults."""

    def __init__(self, min_samples=10, max_samples=200, max_noise=0.03, budget_s=2.0):
        self.min_samples = min_samples
        self.max_samples = max_samples
        self.max_noise = max_noise
        self.budget_s = budget_s

    def decide(self, samples, elapsed_s):
        """Return (more, converged, note) after the samples so far and the
        seconds spent. The budget wins over the minimum: a call so slow that
        the minimum would overrun it stops, unconverged, with a note."""
        n = len(samples)
        if n == 0:
            return True, False, ""
        s = summarize(samples)
        quiet = s["median"] > 0 and s["rel_noise"] <= self.max_noise
        if quiet and n >= self.min_samples:
            return False, True, ""
        if quiet:
            why = "fewer than the %d samples required" % self.min_samples
        else:
            why = "noise %.1f%% > %.1f%%" % (100 * s["rel_noise"], 100 * self.max_noise)
        if self.max_samples > 0 and n >= self.max_samples:
            return False, False, "stopped at the %d-sample limit: %s" % (self.max_samples, why)
        if self.budget_s > 0 and elapsed_s >= self.budget_s:
            return False, False, "time budget %gs spent after %d samples: %s" % (self.budget_s, n, why)
        return True, False, ""


# ------------------------------------------------------------------- numerics


def half_ulp(dtype, x):
    """Half the spacing of dtype's representable values at |x|: the largest
    error of a correctly rounded store (internal/oracle.HalfULP). 0 for
    f32 and ""."""
    if dtype == "f16":
        mant, min_exp = 10, -14
    elif dtype == "bf16":
        mant, min_exp = 7, -126
    else:
        return 0.0
    e = min_exp  # zero and the subnormals share the smallest normal's spacing
    if x != 0:
        _, fe = math.frexp(abs(x))  # |x| = f 2^fe, f in [0.5, 1)
        e = max(fe - 1, min_exp)
    return math.ldexp(0.5, e - mant)


def error_metrics(out, ref, out_dtype="", tol=None):
    """ktune's gate metrics of out against ref (flat lists of numbers), as
    internal/oracle.Compare: max |out-ref|; then, after taking off the
    output format's own rounding (half an ulp of out_dtype at ref), the
    max relative error over |ref| > REL_FLOOR and
    NMSE = sum (out-ref)^2 / sum ref^2; the count of NaN/Inf in out; and,
    with tol, the count of elements outside |out-ref| <= max_abs +
    max_rel |ref| (numpy's allclose rule)."""
    max_abs = max_rel = 0.0
    num = den = 0.0
    bad = outside = 0
    for o, r in zip(out, ref):
        if math.isnan(o) or math.isinf(o):
            bad += 1
            continue
        d = abs(o - r)
        max_abs = max(max_abs, d)
        d = max(0.0, d - half_ulp(out_dtype, r))
        if tol is not None and d > tol["max_abs"] + tol["max_rel"] * abs(r):
            outside += 1
        if abs(r) > REL_FLOOR:
            max_rel = max(max_rel, d / abs(r))
        num += d * d
        den += r * r
    # An all-zero reference: the raw squared error, as ktune (JSON has no
    # Inf); max_abs still fails the gate.
    nmse = num / den if den > 0 else num
    return {"max_abs": max_abs, "max_rel": max_rel, "nmse": nmse, "nans": bad, "outside": outside}


def tolerance_gate(out, ref, nkv, seed, tol, detail="", out_dtype=""):
    """A results Gate of kind tolerance, passed as ktune passes one
    (internal/oracle.Metrics.Pass): no NaN or Inf, every element within
    max_abs + max_rel |ref| after the output format's rounding, and the
    NMSE within its bound."""
    m = error_metrics(out, ref, out_dtype, tol)
    ok = (
        len(out) == len(ref)
        and m["nans"] == 0
        and m["outside"] == 0
        and m["nmse"] <= tol["nmse"]
    )
    gate = {"kind": "tolerance", "nkv": nkv, "pass": ok, "seed": seed}
    for k in ("max_abs", "max_rel", "nmse"):
        # JSON has no Infinity; a huge finite number says the same.
        gate[k] = m[k] if math.isfinite(m[k]) else sys.float_info.max
    if m["nans"]:
        gate["nans"] = m["nans"]
    if detail:
        gate["detail"] = detail
    return gate


# -------------------------------------------------------------------- records


def kv_bytes(shape, nkv):
    """K+V bytes a point must read once."""
    elt = ELEMENT_BYTES[shape["kv_dtype"]]
    return shape["batch"] * 2 * nkv * shape["kv_heads"] * shape["head_dim"] * elt


def make_config(spec, backend, shape, nkv, defines):
    """A results Config; defines is a dict, written sorted by name."""
    return {
        "spec": spec,
        "variant": VARIANTS[backend],
        "kernel": "torch",
        "defines": [{"name": k, "value": str(defines[k])} for k in sorted(defines)],
        "shape": dict(shape),
        "nkv": nkv,
        "splits": 0,
        # SDPA picks its own launch geometry.
        "grid": [0, 0, 0],
        "block": [0, 0, 0],
        "combine_grid": [0, 0, 0],
        "combine_block": [0, 0, 0],
    }


def config_hash(config):
    """sha256 of the config's canonical JSON (sorted keys, no spaces)."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def measurement(probe, samples_ns, converged, note, nbytes, read_bw_gbps, batch):
    """A results Measurement; GB/s is bytes per ns (1e9 B/s)."""
    s = summarize(samples_ns)
    gbps = nbytes / s["median"] if s["median"] > 0 else 0.0
    m = {
        "probe": probe,
        "samples_ns": list(samples_ns),
        "summary": s,
        "converged": converged,
        "bytes": nbytes,
        "gbps": gbps,
        "pct_bw": 100 * gbps / read_bw_gbps if read_bw_gbps > 0 else 0.0,
    }
    if note:
        m["note"] = note
    if probe != "cold":
        m["batch"] = batch
    return m


def make_record(config, env, probes, gates, now, wall_sec):
    """A results Record (schema 1) with status ok."""
    return {
        "schema": SCHEMA,
        "hash": config_hash(config),
        "time": now.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "config": config,
        "env": env,
        "status": "ok",
        "compile": {"seconds": 0, "cached": False},
        "gates": gates,
        "probes": probes,
        "wall_sec": wall_sec,
    }


def append_record(path, rec):
    """Append one line and fsync, as ktune's writer does: a record on disk
    survives a crash a moment later."""
    line = json.dumps(rec, separators=(",", ":"), allow_nan=False) + "\n"
    with open(path, "a", encoding="utf-8") as f:
        f.write(line)
        f.flush()
        os.fsync(f.fileno())


# --------------------------------------------------------------------- shapes


def default_capacity(axes_nkv, gate_nkv=None):
    """ktune's capacity of a shape that sets none (internal/spec, validate):
    the largest nkv of the axes and of the gates (ktune's default gate
    lengths when the spec sets none)."""
    gates = list(gate_nkv) if gate_nkv else list(KTUNE_GATE_NKV)
    return max(list(axes_nkv) + gates)


def make_shape(name, heads, kv_heads, head_dim, kv_dtype, batch=1, capacity=None, kv_scale=None,
               default_cap=None):
    """A results Shape as ktune writes it for a spec shape with these
    fields: capacity defaults to default_cap, and kv_scale is a key only
    when set on an fp8 shape. Raises ValueError on what ktune refuses."""
    where = "shape %s" % name
    ints = {"heads": heads, "kv_heads": kv_heads, "head_dim": head_dim, "batch": batch}
    for k, v in ints.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError("%s: %s must be a positive integer, got %r" % (where, k, v))
    if heads % kv_heads:
        raise ValueError("%s: heads %d is not a multiple of kv_heads %d" % (where, heads, kv_heads))
    if kv_dtype not in ELEMENT_BYTES:
        raise ValueError("%s: kv_dtype %r (want %s)" % (where, kv_dtype, ", ".join(sorted(ELEMENT_BYTES))))
    if kv_scale is not None and kv_scale not in KV_SCALES:
        raise ValueError("%s: kv_scale %r (want %s)" % (where, kv_scale, " or ".join(KV_SCALES)))
    cap = capacity if capacity is not None else default_cap
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ValueError("%s: capacity must be a positive integer, got %r" % (where, cap))
    shape = {"name": str(name), "heads": heads, "kv_heads": kv_heads, "head_dim": head_dim,
             "kv_dtype": kv_dtype, "batch": batch, "capacity": cap}
    if kv_scale is not None and kv_dtype == "fp8e4m3":
        shape["kv_scale"] = kv_scale
    return shape


def f16_twin(shape):
    """The shape an fp8 shape is measured as with --fp8-as f16: the same
    problem with f16 K/V, named apart so that no record claims fp8."""
    twin = {k: v for k, v in shape.items() if k != "kv_scale"}
    twin["name"] = shape["name"] + F16REF_SUFFIX
    twin["kv_dtype"] = "f16"
    return twin


def plan_shapes(shapes, fp8_as=None):
    """Split shapes into what SDPA measures and what it cannot. Returns
    (jobs, notes): a job is {"shape": the Shape its records carry, "dtype":
    the q/K/V dtype SDPA runs in, "dequant": the fp8 scaling of an f16
    twin's values or None, "defines": extra defines}; a note is one line
    about a shape that gets no record."""
    jobs, notes = [], []
    for sh in shapes:
        dt = sh["kv_dtype"]
        if dt in SDPA_DTYPES:
            jobs.append({"shape": sh, "dtype": dt, "dequant": None, "defines": {}})
        elif dt == "fp8e4m3" and fp8_as == "f16":
            scale = sh.get("kv_scale", "tensor")
            jobs.append({"shape": f16_twin(sh), "dtype": "f16", "dequant": scale,
                         "defines": {"DEQUANT": "fp8e4m3-" + scale}})
        elif dt == "fp8e4m3":
            notes.append("%s: PyTorch SDPA has no fp8 K/V input: no reference row written for it "
                         "(--fp8-as f16 measures its dequantized f16 twin as %s%s)" % (sh["name"], sh["name"], F16REF_SUFFIX))
        else:
            notes.append("%s: kv_dtype %s: SDPA's cuDNN and flash backends take f16 or bf16 only: "
                         "no reference row written for it" % (sh["name"], dt))
    return jobs, notes


def kv_alloc_bytes(shape, nkvs, layout):
    """Device bytes of a shape's K and V: capacity rows per sequence in
    ktune's layout, plus the contiguous copies of the largest nkv with
    --layout bhsd."""
    row = shape["batch"] * shape["kv_heads"] * shape["head_dim"] * ELEMENT_BYTES[shape["kv_dtype"]]
    need = 2 * row * shape["capacity"]
    if layout == "bhsd" and nkvs:
        need += 2 * row * max(nkvs)
    return need


# ----------------------------------------------------------- reading a spec
# PyYAML when it is importable; otherwise a small reader of the YAML that
# ktune specs are written in: block mappings and lists, flow {…} and […]
# values, plain and quoted scalars, comments. Anchors, tags and multi-line
# flow collections are beyond it.


def _strip_comment(line):
    """line without a # comment (one at the start or after a space, outside
    quotes)."""
    quote = None
    for i, c in enumerate(line):
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i]
    return line


_INT = re.compile(r"^[-+]?[0-9]+$")
_FLOAT = re.compile(r"^[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?$")


def _scalar(text):
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if _INT.match(t):
        return int(t)
    if _FLOAT.match(t):
        return float(t)
    if t in ("true", "True", "false", "False"):
        return t.lower() == "true"
    if t in ("", "~", "null", "Null"):
        return None
    return t


def _flow(s, i, nested):
    """Parse the flow value at s[i:]; return (value, next index). nested:
    inside a flow collection, where , ] } end a plain scalar."""
    n = len(s)
    while i < n and s[i] in " \t":
        i += 1
    if i < n and s[i] in "{[":
        close = "}" if s[i] == "{" else "]"
        out = {} if close == "}" else []
        i += 1
        while True:
            while i < n and s[i] in " \t,":
                i += 1
            if i >= n:
                raise ValueError("unclosed %s" % ("{" if close == "}" else "["))
            if s[i] == close:
                return out, i + 1
            if close == "}":
                j = s.find(":", i)
                if j < 0:
                    raise ValueError("flow mapping entry without ':'")
                key = _scalar(s[i:j])
                val, i = _flow(s, j + 1, True)
                out[key] = val
            else:
                val, i = _flow(s, i, True)
                out.append(val)
    if i < n and s[i] in "'\"":
        j = s.find(s[i], i + 1)
        if j < 0:
            raise ValueError("unclosed quote")
        return s[i + 1:j], j + 1
    j = i
    while j < n and not (nested and s[j] in ",]}"):
        j += 1
    return _scalar(s[i:j]), j


def _value(text):
    """A scalar or flow value; text that does not parse stays a string."""
    try:
        v, end = _flow(text, 0, False)
    except ValueError:
        return text.strip()
    return v if not text[end:].strip() else text.strip()


def _key(body):
    """(key, rest) of a mapping line "key: rest", or None."""
    m = re.match(r"""^("[^"]*"|'[^']*'|[^\s'"{\[][^:]*?)\s*:(\s+|$)(.*)$""", body)
    if not m:
        return None
    return _scalar(m.group(1)), m.group(3)


def _block(lines, i, indent):
    """Parse the block node whose lines start at lines[i] with the given
    indent; return (value, next index)."""
    n = len(lines)
    if lines[i][1].startswith("-") and lines[i][1][1:2] in ("", " "):
        out = []
        while i < n and lines[i][0] == indent and lines[i][1].startswith("-") and lines[i][1][1:2] in ("", " "):
            rest = lines[i][1][1:]
            body = rest.lstrip(" ")
            if not body:
                if i + 1 < n and lines[i + 1][0] > indent:
                    val, i = _block(lines, i + 1, lines[i + 1][0])
                else:
                    val, i = None, i + 1
            elif _key(body) and body[0] not in "{[":
                # "- key: value" opens a mapping whose keys line up with key.
                inner = indent + 1 + len(rest) - len(body)
                lines[i] = (inner, body)
                val, i = _block(lines, i, inner)
            else:
                val, i = _value(body), i + 1
            out.append(val)
        return out, i
    out = {}
    while i < n and lines[i][0] >= indent:
        ind, body = lines[i]
        kv = _key(body) if ind == indent else None
        if kv is None:
            i += 1  # a continuation line or something this reader does not need
            continue
        key, rest = kv
        i += 1
        if rest.strip() and rest.strip()[0] not in "|>":
            out[key] = _value(rest)
        elif rest.strip():
            # A block scalar: the more-indented lines that follow are its text.
            text = []
            while i < n and lines[i][0] > indent:
                text.append(lines[i][1])
                i += 1
            out[key] = " ".join(text)
        elif i < n and (lines[i][0] > indent or lines[i][0] == indent and lines[i][1].startswith("- ")):
            out[key], i = _block(lines, i, lines[i][0])
        else:
            out[key] = None
    return out, i


def parse_spec_fallback(text):
    """The spec document in text (a dict), read without PyYAML."""
    lines = []
    for raw in text.splitlines():
        line = _strip_comment(raw.replace("\t", "    ")).rstrip()
        if not line.strip() or line.strip() in ("---", "..."):
            continue
        lines.append((len(line) - len(line.lstrip(" ")), line.strip()))
    if not lines:
        return {}
    doc, _ = _block(lines, 0, lines[0][0])
    return doc if isinstance(doc, dict) else {}


def load_spec(path):
    """The spec document at path: PyYAML's if it is importable, else the
    fallback reader's. Returns (doc, reader)."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        import yaml
    except ImportError:
        return parse_spec_fallback(text), "fallback"
    return yaml.safe_load(text) or {}, "pyyaml"


def _int_list(v, what):
    if v is None:
        return []
    if isinstance(v, bool):
        raise ValueError("%s: want integers, got %r" % (what, v))
    if isinstance(v, int):
        return [v]
    if isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        return list(v)
    raise ValueError("%s: want a list of integers, got %r" % (what, v))


def spec_shapes(doc, names=None):
    """The spec's name, its shapes as ktune records them, and its axes'
    nkv, from a spec document (load_spec). names: keep only these shapes."""
    if not isinstance(doc, dict):
        raise ValueError("not a ktune spec: the document is not a mapping")
    raw = doc.get("shapes")
    if not isinstance(raw, list) or not raw:
        raise ValueError("no shapes: list in the spec")
    axes = doc.get("axes") if isinstance(doc.get("axes"), dict) else {}
    nkvs = sorted(_int_list(axes.get("nkv"), "axes.nkv"))
    gates = doc.get("gates") if isinstance(doc.get("gates"), dict) else {}
    cap = default_capacity(nkvs, _int_list(gates.get("nkv"), "gates.nkv"))
    shapes = []
    for i, sh in enumerate(raw):
        if not isinstance(sh, dict):
            raise ValueError("shapes[%d]: not a mapping: %r" % (i, sh))
        missing = [k for k in ("name", "heads", "kv_heads", "head_dim", "kv_dtype") if sh.get(k) is None]
        if missing:
            raise ValueError("shapes[%d]: %s missing" % (i, ", ".join(missing)))
        if names and str(sh["name"]) not in names:
            continue
        shapes.append(make_shape(sh["name"], sh["heads"], sh["kv_heads"], sh["head_dim"], str(sh["kv_dtype"]),
                                 batch=sh.get("batch", 1), capacity=sh.get("capacity"),
                                 kv_scale=sh.get("kv_scale"), default_cap=cap))
    if names:
        unknown = sorted(set(names) - {s["name"] for s in shapes})
        if unknown:
            raise ValueError("no shape named %s in the spec" % ", ".join(unknown))
    name = doc.get("name")
    return (str(name) if name is not None else ""), shapes, nkvs


def shape_label(shape):
    """A shape in progress lines: its name and batch (the flags' shapes
    share one name across batches)."""
    return "%s b%d" % (shape["name"], shape["batch"])


def shape_dims(shape):
    """A shape's dimensions in words."""
    s = "%d heads / %d KV heads / head_dim %d, %s" % (shape["heads"], shape["kv_heads"], shape["head_dim"],
                                                      shape["kv_dtype"])
    if "kv_scale" in shape:
        s += " (scale per %s)" % shape["kv_scale"]
    return s + ", batch %d, capacity %d" % (shape["batch"], shape["capacity"])


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0] if text else type(e).__name__


def refusal_reason(error, warned):
    """Why a backend did not run: the warnings SDPA gave (each once,
    without torch's "Triggered internally at" tail) and the error."""
    parts = []
    for t in list(warned) + [error]:
        t = " ".join(re.sub(r"\(Triggered internally at .*", "", t, flags=re.S).split())
        if t and t not in parts:
            parts.append(t)
    return "; ".join(parts)


def parse_ints(text):
    return [int(v) for v in text.split(",") if v.strip()]


# The flags that describe one shape family; --shapes-from takes them from
# the spec instead.
SHAPE_FLAGS = {"heads": 28, "kv_heads": 4, "head_dim": 128, "kv_dtype": "f16", "kv_scale": None,
               "batch": [1, 16], "capacity": None}


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Time torch SDPA decode attention (cuDNN and flash backends) with ktune's probes.",
        epilog="examples: python3 experiments/sdpa_ref.py --nkv 2048,8192,32768 --batch 1,16 -o sdpa.jsonl; "
               "python3 experiments/sdpa_ref.py --shapes-from experiments/h200-b16.yaml -o sdpa.jsonl",
    )
    p.add_argument("-o", "--out", required=True, help="results file to append to (JSONL)")
    p.add_argument("--shapes-from", metavar="SPEC.yaml",
                   help="measure the shapes: of this ktune spec, recorded as ktune records them (name, dims, "
                        "kv_dtype, batch, capacity, kv_scale); --nkv defaults to its axes' nkv and --spec to its name")
    p.add_argument("--nkv", type=parse_ints, default=None,
                   help="context lengths, comma-separated (default: the spec's axes, else 2048,8192,32768,131072)")
    p.add_argument("--batch", type=parse_ints, default=None, help="batch sizes, comma-separated (default 1,16)")
    p.add_argument("--heads", type=int, default=None, help="query heads (default 28)")
    p.add_argument("--kv-heads", type=int, default=None, help="KV heads (default 4)")
    p.add_argument("--head-dim", type=int, default=None, help="default 128")
    p.add_argument("--kv-dtype", choices=KV_DTYPES, default=None,
                   help="K/V dtype (default f16); SDPA runs q/K/V in it; fp8e4m3 is not measured (see --fp8-as)")
    p.add_argument("--kv-scale", choices=KV_SCALES, default=None, help="an fp8 shape's scaling, recorded for fp8 only")
    p.add_argument("--capacity", type=int, default=None,
                   help="rows per sequence in K/V (default: as ktune, the largest of --nkv and ktune's gate lengths)")
    p.add_argument("--shape-name", default=None,
                   help="the shape's label, as in ktune specs (default 7b); with --shapes-from: measure only "
                        "the spec's shapes of these names, comma-separated")
    p.add_argument("--fp8-as", choices=["f16"], default=None,
                   help="measure an fp8e4m3 shape as SDPA on its dequantized f16 K/V, written under the f16 twin "
                        "shape (kv_dtype f16, name + %s, define DEQUANT); default: fp8 shapes get no record" % F16REF_SUFFIX)
    p.add_argument("--spec", default=None, help="the spec name recorded in each config (default: the spec's, else sdpa)")
    p.add_argument("--backends", default="cudnn,flash", help="cudnn, flash or both")
    p.add_argument("--probes", default="cold,graph,hot", help="any of cold, graph, hot")
    p.add_argument("--gqa", choices=["auto", "native", "expand"], default="auto",
                   help="native: enable_gqa=True; expand: K/V repeated to the query heads; auto: native if it runs and passes")
    p.add_argument("--layout", choices=["bshd", "bhsd"], default="bshd",
                   help="bshd: views of ktune's K/V layout; bhsd: contiguous copies per point")
    p.add_argument("--check-nkv", type=int, default=1641, help="nkv of the float64 numerics check")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--hot-batch", type=int, default=20, help="calls per hot/graph sample")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--min-samples", type=int, default=10)
    p.add_argument("--max-samples", type=int, default=200)
    p.add_argument("--max-noise", type=float, default=0.03)
    p.add_argument("--budget", type=float, default=2.0, help="seconds per probe per point")
    p.add_argument("--read-bw", type=float, default=0.0,
                   help="streaming read bandwidth in GB/s; 0: measure it (a sum over a 4 GiB tensor)")
    p.add_argument("--device", type=int, default=0)
    a = p.parse_args(argv)
    for b in a.backends.split(","):
        if b not in VARIANTS:
            p.error("--backends: unknown backend %r (want cudnn, flash)" % b)
    for pr in a.probes.split(","):
        if pr not in PROBES:
            p.error("--probes: unknown probe %r (want cold, graph, hot)" % pr)
    if a.nkv is not None and (not a.nkv or min(a.nkv) < 1):
        p.error("--nkv: want context lengths >= 1")
    if a.shapes_from:
        given = ["--" + k.replace("_", "-") for k in SHAPE_FLAGS if getattr(a, k) is not None]
        if given:
            p.error("--shapes-from takes the shapes from the spec: drop %s" % ", ".join(given))
        names = [n for n in (a.shape_name or "").split(",") if n]
        try:
            doc, a.spec_reader = load_spec(a.shapes_from)
            name, a.shapes, spec_nkv = spec_shapes(doc, names)
        except (OSError, ValueError) as e:
            p.error("--shapes-from %s: %s" % (a.shapes_from, e))
        a.spec = a.spec or name or "sdpa"
        a.nkv = a.nkv or spec_nkv
        if not a.nkv:
            p.error("--shapes-from %s: the spec has no axes.nkv; give --nkv" % a.shapes_from)
        for k, v in SHAPE_FLAGS.items():
            setattr(a, k, v)
        return a
    for k, v in SHAPE_FLAGS.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    a.spec = a.spec or "sdpa"
    a.nkv = a.nkv or [2048, 8192, 32768, 131072]
    a.shape_name = a.shape_name or "7b"
    a.spec_reader = None
    cap = a.capacity or default_capacity(a.nkv)
    if cap < max(a.nkv):
        p.error("--capacity %d is below the largest --nkv %d" % (cap, max(a.nkv)))
    try:
        a.shapes = [make_shape(a.shape_name, a.heads, a.kv_heads, a.head_dim, a.kv_dtype, batch=b,
                               capacity=cap, kv_scale=a.kv_scale) for b in a.batch]
    except ValueError as e:
        p.error(str(e))
    return a


# ----------------------------------------------------------------- on the GPU
# Everything below needs torch: run imports it, so that importing this file
# (the unit tests) does not.


def read_bandwidth(torch):
    """Streaming read bandwidth in GB/s: the median of timed sums over a
    4 GiB float32 tensor, far larger than L2 (ktune uses a float4 read
    kernel; a reduction is the closest plain-torch equivalent)."""
    x = torch.ones(1 << 30, dtype=torch.float32, device="cuda")
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    x.sum()
    torch.cuda.synchronize()
    ms = []
    for _ in range(10):
        start.record()
        x.sum()
        stop.record()
        stop.synchronize()
        ms.append(start.elapsed_time(stop))
    del x
    torch.cuda.empty_cache()
    return (4 << 30) / (quantile(sorted(ms), 0.5) * 1e-3) / 1e9


def device_env(torch, dev, read_bw):
    p = torch.cuda.get_device_properties(dev)
    return {
        "device": p.name,
        "device_index": dev,
        "uuid": str(getattr(p, "uuid", "")),
        "arch": "sm_%d%d" % (p.major, p.minor),
        "sms": p.multi_processor_count,
        "l2_bytes": p.L2_cache_size,
        "mem_bytes": p.total_memory,
        "driver": torch.version.cuda or "",
        "nvrtc": "",
        "clock_mhz": 0,
        "mem_clock_mhz": 0,
        "read_bw_gbps": read_bw,
        "host": socket.gethostname(),
        "ktune": "sdpa_ref.py, torch " + torch.__version__,
    }


def capture(torch, fn, n):
    """A CUDA graph of n calls of fn. The warm-up runs on a side stream, as
    torch's graph notes ask, so that lazy set-up (cuDNN plans, workspaces)
    happens before the capture, not inside it."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(n):
            fn()
    return g


class Bench:
    """Takes one probe's samples of a callable under the stopping rule."""

    def __init__(self, torch, args, l2_bytes):
        self.torch = torch
        self.args = args
        # 2 x L2: reading it leaves no line of the previous sample's K/V.
        self.flush = torch.zeros(2 * l2_bytes // 4, dtype=torch.float32, device="cuda")
        self.sink = torch.empty((), dtype=torch.float32, device="cuda")
        self.rule = StopRule(args.min_samples, args.max_samples, args.max_noise, args.budget)
        self.start = torch.cuda.Event(enable_timing=True)
        self.stop = torch.cuda.Event(enable_timing=True)

    def probe(self, name, fn):
        """Return (samples_ns, converged, note, batch)."""
        torch, start, stop = self.torch, self.start, self.stop
        batch = 1 if name == "cold" else max(1, self.args.hot_batch)
        # Warm-up: code, TLBs and clocks settle; cold still flushes per sample.
        for _ in range(self.args.warmup * batch):
            fn()
        torch.cuda.synchronize()
        graph = capture(torch, fn, batch) if name == "graph" else None

        def sample():
            if name == "cold":
                torch.sum(self.flush, dim=0, out=self.sink)
            # A GPU-side spin queued before the start event stands in for
            # ktune's stream blocker: while it runs, the host records the
            # start event, issues the calls and records the stop event, so
            # host dispatch is not timed. Without it a slow dispatch lands
            # in the cold samples (seen on the H200: cuDNN at b1 nkv 2048
            # measured 33 µs cold, 12.5 µs in another run; graph 7 µs both).
            if BLOCK_CYCLES:
                torch.cuda._sleep(BLOCK_CYCLES)
            start.record()
            if graph is not None:
                graph.replay()
            else:
                for _ in range(batch):
                    fn()
            stop.record()
            stop.synchronize()
            return start.elapsed_time(stop) * 1e6 / batch

        samples = []
        t0 = time.perf_counter()
        while True:
            more, converged, note = self.rule.decide(samples, time.perf_counter() - t0)
            if not more:
                break
            samples.append(sample())
        del graph
        return samples, converged, note, batch


# About 250 µs at the H200's 1980 MHz: longer than the host needs to queue
# one sample's calls (a graph replay or up to HotBatch SDPA calls).
BLOCK_CYCLES = 500_000

# Device memory left free beside a shape's K/V: SDPA's workspaces, the
# CUDA graphs, Q and the numerics check's copies.
MEM_RESERVE = 2 << 30


def torch_dtype(torch, name):
    return {"f16": torch.float16, "bf16": torch.bfloat16}[name]


def fp8_roundtrip(torch, x, scaling):
    """Replace x (f16, [batch][capacity][kv_heads][dim]) in place by its
    values quantized to fp8e4m3 and dequantized: scale amax / 448, one per
    tensor or one per KV head; one sequence at a time, so that the
    temporaries stay a sequence's size."""
    fp8 = torch.float8_e4m3fn
    amax = None
    for b in range(x.shape[0]):
        m = x[b].abs().amax(dim=(0, 2)).float()
        amax = m if amax is None else torch.maximum(amax, m)
    if scaling == "tensor":
        amax = amax.max().expand_as(amax)
    scale = (amax.clamp(min=1e-12) / torch.finfo(fp8).max).view(1, -1, 1)
    for b in range(x.shape[0]):
        x[b] = ((x[b].float() / scale).to(fp8).float() * scale).to(x.dtype)


def make_buffers(torch, job, seed):
    """Q (batch, heads, 1, dim) and K, V in ktune's layout
    [batch][capacity][kv_heads][dim], in the job's dtype, uniform in
    [-1, 1]; an fp8 shape's f16 twin gets K/V through fp8_roundtrip."""
    sh, dt = job["shape"], torch_dtype(torch, job["dtype"])
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)

    def uniform(*shape):
        return torch.empty(shape, dtype=dt, device="cuda").uniform_(-1, 1, generator=g)

    q = uniform(sh["batch"], sh["heads"], 1, sh["head_dim"])
    k = uniform(sh["batch"], sh["capacity"], sh["kv_heads"], sh["head_dim"])
    v = uniform(sh["batch"], sh["capacity"], sh["kv_heads"], sh["head_dim"])
    if job["dequant"]:
        fp8_roundtrip(torch, k, job["dequant"])
        fp8_roundtrip(torch, v, job["dequant"])
    return q, k, v


def kv_view(kbuf, vbuf, nkv, layout):
    """SDPA's (batch, kv_heads, nkv, dim) of the first nkv rows."""
    k, v = kbuf[:, :nkv].transpose(1, 2), vbuf[:, :nkv].transpose(1, 2)
    if layout == "bhsd":
        k, v = k.contiguous(), v.contiguous()
    return k, v


def sdpa_call(torch, mode, q, k, v, group, scale):
    """A no-argument callable running SDPA on the given tensors. Expanded
    K/V are made here, before any timing."""
    sdpa = torch.nn.functional.scaled_dot_product_attention
    if group == 1:
        return lambda: sdpa(q, k, v, scale=scale)
    if mode == "expand":
        ke, ve = k.repeat_interleave(group, dim=1), v.repeat_interleave(group, dim=1)
        return lambda: sdpa(q, ke, ve, scale=scale)
    return lambda: sdpa(q, k, v, scale=scale, enable_gqa=True)


def reference(torch, q, k, v, group, scale):
    """float64 attention on the CPU from the same f16 or bf16 values; query
    head h reads KV head h // group, as ktune's oracle and SDPA's
    enable_gqa (the query heads are viewed as (kv_heads, group), so K/V
    are not copied group times)."""
    b, heads, _, d = q.shape
    q64 = q.double().cpu()[:, :, 0, :].reshape(b, heads // group, group, d)
    k64, v64 = k.double().cpu(), v.double().cpu()
    p = torch.softmax(torch.einsum("bkgd,bknd->bkgn", q64, k64) * scale, dim=-1)
    return torch.einsum("bkgn,bknd->bkgd", p, v64).reshape(b, heads, d)


def check(torch, args, job, backend, q, kbuf, vbuf, nkv, group, scale):
    """Run the backend at nkv against the float64 reference in the GQA modes
    allowed; return (mode, gate, messages, refused): mode None when none
    passed, refused the backend's reason when it ran in no mode at all."""
    k, v = kv_view(kbuf, vbuf, nkv, args.layout)
    ref = reference(torch, q, k, v, group, scale).flatten().tolist()
    modes = ["native", "expand"] if args.gqa == "auto" else [args.gqa]
    msgs, refusals = [], []
    for mode in modes:
        with warnings.catch_warnings(record=True) as caught:
            # SDPA says why a backend cannot take the inputs in warnings
            # before it raises "No available kernel".
            warnings.simplefilter("always")
            try:
                out = sdpa_call(torch, mode, q, k, v, group, scale)()
                torch.cuda.synchronize()
            except RuntimeError as e:
                why = refusal_reason(first_line(e), [str(w.message) for w in caught])
                refusals.append("gqa %s: %s" % (mode, why))
                msgs.append("gqa %s: does not run: %s" % (mode, why))
                continue
        detail = "%s backend, gqa %s, layout %s, %s q/K/V, vs float64 on the CPU" % (
            backend, mode, args.layout, job["dtype"])
        gate = tolerance_gate(out.double().cpu()[:, :, 0, :].flatten().tolist(), ref, nkv, args.seed, DEFAULT_TOL,
                              detail, out_dtype=job["dtype"])
        if gate["pass"]:
            msgs.append("gqa %s: runs and passes (max_abs %.3g, max_rel %.3g, nmse %.3g)"
                        % (mode, gate["max_abs"], gate["max_rel"], gate["nmse"]))
            return mode, gate, msgs, None
        msgs.append("gqa %s: out of bounds (max_abs %.3g, max_rel %.3g, nmse %.3g, nans %d)"
                    % (mode, gate["max_abs"], gate["max_rel"], gate["nmse"], gate.get("nans", 0)))
    refused = "; ".join(refusals) if len(refusals) == len(modes) else None
    return None, None, msgs, refused


def run(args):
    jobs, notes = plan_shapes(args.shapes, args.fp8_as)
    if args.spec_reader:
        print("sdpa_ref: %d shape(s) from %s (read with %s), nkv %s"
              % (len(args.shapes), args.shapes_from, args.spec_reader, ",".join(map(str, args.nkv))))
    for n in notes:
        print("sdpa_ref: " + n)
    if not jobs:
        print("sdpa_ref: no shape SDPA can take: nothing measured, nothing written")
        return 0

    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    if not torch.cuda.is_available():
        print("sdpa_ref: no CUDA device visible to torch", file=sys.stderr)
        return 1
    torch.cuda.set_device(args.device)
    props = torch.cuda.get_device_properties(args.device)
    read_bw = args.read_bw or read_bandwidth(torch)
    env = device_env(torch, args.device, read_bw)
    print("%s: %d SMs, L2 %d MiB, CUDA %s, torch %s, read %.0f GB/s"
          % (env["device"], env["sms"], env["l2_bytes"] >> 20, env["driver"], torch.__version__, read_bw))

    backends = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
    bench = Bench(torch, args, props.L2_cache_size)
    failures = 0
    skipped = []  # shapes and points not measured, for the closing summary
    said = set()  # refusal reasons already printed
    for job in jobs:
        sh = job["shape"]
        label = shape_label(sh)
        nkvs = [n for n in args.nkv if n <= sh["capacity"]]
        if len(nkvs) < len(args.nkv):
            over = [n for n in args.nkv if n > sh["capacity"]]
            print("%s: nkv %s above the capacity %d: not measured" % (label, ",".join(map(str, over)), sh["capacity"]))
            skipped.append("%s nkv %s (above the capacity)" % (label, ",".join(map(str, over))))
        if not nkvs:
            continue
        need = kv_alloc_bytes(sh, nkvs, args.layout)
        free = torch.cuda.mem_get_info()[0]
        print("%s: %s, K/V %.2f GiB (%.1f GiB free)" % (label, shape_dims(sh), need / 2**30, free / 2**30))
        if job["dequant"]:
            print("%s: SDPA on the K/V of fp8e4m3 shape %s quantized (scale per %s) and dequantized to f16; "
                  "recorded as kv_dtype f16 with define DEQUANT=%s, not as an fp8 measurement"
                  % (label, sh["name"][:-len(F16REF_SUFFIX)], job["dequant"], job["defines"]["DEQUANT"]))
        if need + MEM_RESERVE > free:
            print("%s: K/V need %.2f GiB + %.0f GiB reserve, %.2f GiB free: shape skipped"
                  % (label, need / 2**30, MEM_RESERVE / 2**30, free / 2**30), file=sys.stderr)
            skipped.append("%s (K/V do not fit)" % label)
            continue
        try:
            q, kbuf, vbuf = make_buffers(torch, job, args.seed)
        except torch.cuda.OutOfMemoryError as e:
            print("%s: out of device memory allocating K/V: shape skipped (%s)" % (label, first_line(e)),
                  file=sys.stderr)
            skipped.append("%s (out of memory)" % label)
            q = kbuf = vbuf = None
        if q is None:
            # Here, not in the handler: the exception's frames hold what
            # make_buffers had allocated until the handler ends.
            torch.cuda.empty_cache()
            continue
        group = sh["heads"] // sh["kv_heads"]
        scale = 1 / math.sqrt(sh["head_dim"])
        check_nkv = min(args.check_nkv, sh["capacity"])
        for backend in args.backends.split(","):
            variant = VARIANTS[backend]
            with sdpa_kernel(backends[backend]):
                mode, gate, msgs, refused = check(torch, args, job, backend, q, kbuf, vbuf, check_nkv, group, scale)
                if refused is not None:
                    key = (backend, refused)
                    why = refused if key not in said else "the reason printed above"
                    said.add(key)
                    print("%s %s: the backend refuses this shape (%s): nothing written" % (variant, label, why))
                    skipped.append("%s %s (refused by the backend)" % (variant, label))
                    continue
                for m in msgs:
                    print("%s %s: %s" % (variant, label, m))
                if mode is None:
                    print("%s %s: no GQA mode passed the numerics check at nkv %d: not timed, nothing written"
                          % (variant, label, check_nkv), file=sys.stderr)
                    failures += 1
                    continue
                for nkv in nkvs:
                    failures += time_point(torch, args, bench, env, job, backend, mode, gate,
                                           q, kbuf, vbuf, nkv, group, scale, skipped)
        del q, kbuf, vbuf
        torch.cuda.empty_cache()
    if skipped:
        print("sdpa_ref: not measured: " + "; ".join(skipped), file=sys.stderr)
    return 1 if failures else 0


def time_point(torch, args, bench, env, job, backend, mode, gate, q, kbuf, vbuf, nkv, group, scale, skipped):
    """Measure one point and append its record; return 1 when a probe
    failed."""
    shape = job["shape"]
    where = "%s %s nkv %d" % (VARIANTS[backend], shape_label(shape), nkv)
    t0 = time.perf_counter()
    try:
        k, v = kv_view(kbuf, vbuf, nkv, args.layout)
        fn = sdpa_call(torch, mode, q, k, v, group, scale)
    except torch.cuda.OutOfMemoryError as e:
        # --layout bhsd copies, or K/V expanded to the query heads.
        print("%s: out of device memory for the point's K/V: not measured (%s)" % (where, first_line(e)),
              file=sys.stderr)
        skipped.append("%s (out of memory)" % where)
        fn = k = v = None
    if fn is None:
        torch.cuda.empty_cache()
        return 0
    nbytes = kv_bytes(shape, nkv)
    probes = []
    failed = 0
    for name in args.probes.split(","):
        try:
            samples, converged, note, batch = bench.probe(name, fn)
        except RuntimeError as e:
            # E.g. a backend that cannot be captured in a CUDA graph: the
            # record keeps the probes that ran.
            print("%s: %s probe failed: %s" % (where, name, e), file=sys.stderr)
            failed = 1
            continue
        if mode == "expand" and group > 1:
            extra = "K/V expanded to the query heads: the call reads %dx these bytes" % group
            note = note + "; " + extra if note else extra
        probes.append(measurement(name, samples, converged, note, nbytes, env["read_bw_gbps"], batch))
    del fn, k, v
    torch.cuda.empty_cache()
    if not probes:
        return 1
    defines = dict(job["defines"], GQA=mode, LAYOUT=args.layout)
    cfg = make_config(args.spec, backend, shape, nkv, defines)
    rec = make_record(cfg, env, probes, [gate], datetime.now(timezone.utc), time.perf_counter() - t0)
    append_record(args.out, rec)
    print("%s: %s" % (where, ", ".join("%s %.1f us" % (p["probe"], p["summary"]["median"] / 1e3) for p in probes)))
    return failed


def main(argv=None):
    return run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
