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
* Inputs: K and V live in ktune's layout [batch][capacity][kv_heads][dim]
  (capacity = the largest nkv) and SDPA gets the (batch, kv_heads, nkv,
  dim) view of the first nkv rows, so both read the same bytes; with
  --layout bhsd each point gets contiguous copies instead. Q is f16 (SDPA
  wants one dtype; ktune's Q is f32). SDPA has no positions buffer: the
  sequence length is the view's length.
* GQA: with --gqa auto (default) the numerics check tries SDPA's
  enable_gqa=True on the un-expanded K/V first and falls back to K/V
  expanded to the query heads (repeat_interleave, which then reads
  heads/kv_heads times the bytes; bytes and GB/s still count the K/V of
  the problem). The mode that ran is recorded as the define GQA and
  printed.
* Numerics: before timing a backend at a batch, its output at one small
  nkv (--check-nkv) is compared with a float64 reference computed from
  the same f16 inputs, with ktune's default bounds and rule
  (internal/oracle: every element within max_abs + max_rel |ref| and the
  NMSE bound, after half an ulp of the output's dtype, SDPA's f16 store,
  is taken off as the format's share); a backend that fails is not timed
  and none of its points are written.
"""

import argparse
import hashlib
import json
import math
import os
import socket
import sys
import time
from datetime import datetime, timezone

SCHEMA = 1
VARIANTS = {"cudnn": "sdpa-cudnn", "flash": "sdpa-flash"}
PROBES = ("cold", "hot", "graph")

# ktune's default oracle-gate bounds (internal/spec, Gates).
DEFAULT_TOL = {"max_abs": 2e-3, "max_rel": 2e-2, "nmse": 1e-6}
# Relative error is only meaningful where the reference is not near zero
# (internal/oracle uses the same floor).
REL_FLOOR = 1e-3


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
    elt = 2 if shape["kv_dtype"] == "f16" else 4
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


def parse_ints(text):
    return [int(v) for v in text.split(",") if v.strip()]


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Time torch SDPA decode attention (cuDNN and flash backends) with ktune's probes.",
        epilog="example: python3 experiments/sdpa_ref.py --nkv 2048,8192,32768 --batch 1,16 -o sdpa.jsonl",
    )
    p.add_argument("-o", "--out", required=True, help="results file to append to (JSONL)")
    p.add_argument("--nkv", type=parse_ints, default=[2048, 8192, 32768, 131072], help="context lengths, comma-separated")
    p.add_argument("--batch", type=parse_ints, default=[1, 16], help="batch sizes, comma-separated")
    p.add_argument("--heads", type=int, default=28)
    p.add_argument("--kv-heads", type=int, default=4)
    p.add_argument("--head-dim", type=int, default=128)
    p.add_argument("--shape-name", default="7b", help="the shape's label, as in ktune specs")
    p.add_argument("--spec", default="sdpa", help="the spec name recorded in each config")
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
    if a.heads % a.kv_heads:
        p.error("--heads must be a multiple of --kv-heads")
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


def make_buffers(torch, args, batch, cap, seed):
    """Q (batch, heads, 1, dim) and K, V in ktune's layout
    [batch][cap][kv_heads][dim], f16, uniform in [-1, 1]."""
    g = torch.Generator(device="cuda")
    g.manual_seed(seed)

    def uniform(*shape):
        return torch.empty(shape, dtype=torch.float16, device="cuda").uniform_(-1, 1, generator=g)

    q = uniform(batch, args.heads, 1, args.head_dim)
    k = uniform(batch, cap, args.kv_heads, args.head_dim)
    v = uniform(batch, cap, args.kv_heads, args.head_dim)
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
    """float64 attention on the CPU from the same f16 values; query head h
    reads KV head h // group, as ktune's oracle and SDPA's enable_gqa."""
    q64 = q.double().cpu()[:, :, 0, :]
    k64 = k.double().cpu().repeat_interleave(group, dim=1)
    v64 = v.double().cpu().repeat_interleave(group, dim=1)
    p = torch.softmax(torch.einsum("bhd,bhnd->bhn", q64, k64) * scale, dim=-1)
    return torch.einsum("bhn,bhnd->bhd", p, v64)


def check(torch, args, backend, q, kbuf, vbuf, nkv, group, scale):
    """Run the backend at nkv against the float64 reference in the GQA modes
    allowed; return (mode, gate, messages) with mode None when none passed."""
    k, v = kv_view(kbuf, vbuf, nkv, args.layout)
    ref = reference(torch, q, k, v, group, scale).flatten().tolist()
    modes = ["native", "expand"] if args.gqa == "auto" else [args.gqa]
    msgs = []
    for mode in modes:
        try:
            out = sdpa_call(torch, mode, q, k, v, group, scale)()
            torch.cuda.synchronize()
        except RuntimeError as e:
            msgs.append("gqa %s: does not run: %s" % (mode, str(e).splitlines()[0] if str(e) else type(e).__name__))
            continue
        detail = "%s backend, gqa %s, layout %s, vs float64 on the CPU" % (backend, mode, args.layout)
        gate = tolerance_gate(out.double().cpu()[:, :, 0, :].flatten().tolist(), ref, nkv, args.seed, DEFAULT_TOL,
                              detail, out_dtype="f16")
        if gate["pass"]:
            msgs.append("gqa %s: runs and passes (max_abs %.3g, max_rel %.3g, nmse %.3g)"
                        % (mode, gate["max_abs"], gate["max_rel"], gate["nmse"]))
            return mode, gate, msgs
        msgs.append("gqa %s: out of bounds (max_abs %.3g, max_rel %.3g, nmse %.3g, nans %d)"
                    % (mode, gate["max_abs"], gate["max_rel"], gate["nmse"], gate.get("nans", 0)))
    return None, None, msgs


def run(args):
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
    cap = max(args.nkv)
    check_nkv = min(args.check_nkv, cap)
    group = args.heads // args.kv_heads
    scale = 1 / math.sqrt(args.head_dim)
    failures = 0
    for batch in args.batch:
        q, kbuf, vbuf = make_buffers(torch, args, batch, cap, args.seed)
        shape = {"name": args.shape_name, "heads": args.heads, "kv_heads": args.kv_heads,
                 "head_dim": args.head_dim, "kv_dtype": "f16", "batch": batch, "capacity": cap}
        for backend in args.backends.split(","):
            variant = VARIANTS[backend]
            with sdpa_kernel(backends[backend]):
                mode, gate, msgs = check(torch, args, backend, q, kbuf, vbuf, check_nkv, group, scale)
                for m in msgs:
                    print("%s batch %d: %s" % (variant, batch, m))
                if mode is None:
                    print("%s batch %d: no GQA mode passed the numerics check at nkv %d: not timed, nothing written"
                          % (variant, batch, check_nkv), file=sys.stderr)
                    failures += 1
                    continue
                for nkv in args.nkv:
                    failures += time_point(torch, args, bench, env, shape, backend, mode, gate,
                                           q, kbuf, vbuf, nkv, group, scale)
        del q, kbuf, vbuf
        torch.cuda.empty_cache()
    return 1 if failures else 0


def time_point(torch, args, bench, env, shape, backend, mode, gate, q, kbuf, vbuf, nkv, group, scale):
    """Measure one point and append its record; return 1 when a probe
    failed."""
    t0 = time.perf_counter()
    k, v = kv_view(kbuf, vbuf, nkv, args.layout)
    fn = sdpa_call(torch, mode, q, k, v, group, scale)
    nbytes = kv_bytes(shape, nkv)
    probes = []
    failed = 0
    for name in args.probes.split(","):
        try:
            samples, converged, note, batch = bench.probe(name, fn)
        except RuntimeError as e:
            # E.g. a backend that cannot be captured in a CUDA graph: the
            # record keeps the probes that ran.
            print("%s batch %d nkv %d: %s probe failed: %s" % (VARIANTS[backend], shape["batch"], nkv, name, e),
                  file=sys.stderr)
            failed = 1
            continue
        if mode == "expand" and group > 1:
            extra = "K/V expanded to the query heads: the call reads %dx these bytes" % group
            note = note + "; " + extra if note else extra
        probes.append(measurement(name, samples, converged, note, nbytes, env["read_bw_gbps"], batch))
    if not probes:
        return 1
    cfg = make_config(args.spec, backend, shape, nkv, {"GQA": mode, "LAYOUT": args.layout})
    rec = make_record(cfg, env, probes, [gate], datetime.now(timezone.utc), time.perf_counter() - t0)
    append_record(args.out, rec)
    print("%s batch %d nkv %d: %s" % (VARIANTS[backend], shape["batch"], nkv, ", ".join(
        "%s %.1f us" % (p["probe"], p["summary"]["median"] / 1e3) for p in probes)))
    del fn, k, v
    torch.cuda.empty_cache()
    return failed


def main(argv=None):
    return run(parse_args(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
