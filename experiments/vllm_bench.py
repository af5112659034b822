#!/usr/bin/env python3
"""Time vLLM's paged_attention_v2 + reduce the way vLLM's own kernel
benchmark times them, on the CUBIN ktune measured, outside ktune.

vLLM's benchmarks/kernels/benchmark_paged_attention.py (the engine's own
benchmark path) times its op like this: query, K and V caches filled
uniform(-scale, scale); a cache of NUM_BLOCKS = 1024 pages, each
sequence's block table drawn with random.randint over them (pages repeat
across and within sequences); every sequence at the same context length;
max_num_partitions from the longest one (the eager form); 3 warm-up
calls, then 100 calls back to back between two time.perf_counter()
readings, torch.cuda.synchronize() before the second; the latency is the
time over 100. It needs vLLM's compiled ops, which a GPU machine without
vLLM installed does not have; this script makes the same calls on the
same two kernels, loaded from the CUBIN ktune built with vLLM's own nvcc
command (ktune check prints its artifact; the build cache keeps it), with
the driver API through ctypes, so the instrument is vLLM's method and
the kernels are the ones ktune gated.

Two caches per point:
  --num-blocks 1024 (vLLM's default): the pages repeat, and 1024 pages of
      28/4 x 128 f16 are 33.6 MB of K and V, which stay in an H100's or
      H200's 50-60 MB L2: the benchmark times the kernels over warm L2.
  distinct pages: every sequence its own cdiv(nkv, 16) pages, the pool
      no larger; back to back, this is ktune's hot probe (warm L2 only
      where the working set fits), not its cold one.
  capacity (--capacity, default 32768): the same own pages drawn from a
      pool of ktune's size, cdiv(capacity, 16) + 1 pages a sequence: the
      bytes read are the same, spread over a wider range, which tells an
      address-range effect (L2 sets, TLB) from a difference of method.

    python3 experiments/vllm_bench.py --cubin ARTIFACT.cubin \\
        --shapes 28/4,32/8 --batch 1,16 --nkv 2048,8192,32768 -o out.jsonl

One JSON line per point and cache: shape, batch, nkv, num_blocks, the
latency in us, and the method. Needs PyTorch with CUDA and libcuda; the
pure parts (geometry, arguments, block tables) are tested without them:
cd experiments && python3 -m unittest test_vllm_bench.
"""

import argparse
import ctypes
import json
import random
import time

PARTITION_SIZE = 512  # vLLM's launcher fixes it for the v2 kernel
NUM_THREADS = 128
BLOCK_SIZE = 16
HEAD_SIZE = 128
VLLM_NUM_BLOCKS = 1024  # benchmark_paged_attention.py's NUM_BLOCKS

# The entries of the v2 kernel and its reduce for f16 (uint16_t), head 128,
# block 16, 128 threads, no fp8, no blocksparse, partition 512, as nvcc
# mangles them (ktune check's h100-vllm-check.log lists both names).
PARTIAL = "_ZN4vllm25paged_attention_v2_kernelIttLi128ELi16ELi128ELNS_18Fp8KVCacheDataTypeE0ELb0ELi512EEEvPfS2_PT_PKS3_PKT0_S9_ifPKiSB_iPKfiiiSD_SD_iiiii"
REDUCE = "_ZN4vllm32paged_attention_v2_reduce_kernelItLi128ELi128ELi512EEEvPT_PKfS4_PKS1_PKii"


def cdiv(a, b):
    return (a + b - 1) // b


def geometry(heads, batch, nkv):
    """The two launches as vLLM's v2 launcher sizes them for a step whose
    longest sequence is nkv: (grid, block, dynamic shared bytes) each."""
    parts = cdiv(nkv, PARTITION_SIZE)
    warps = NUM_THREADS // 32
    partial_shared = max(PARTITION_SIZE * 4, (warps // 2) * HEAD_SIZE * 4)
    return (
        ((heads, batch, parts), (NUM_THREADS, 1, 1), partial_shared),
        ((heads, batch, 1), (NUM_THREADS, 1, 1), 2 * parts * 4),
    )


def block_tables(batch, nkv, num_blocks, rng):
    """Each sequence's pages: vLLM's benchmark draws every entry with
    randint over num_blocks (num_blocks = VLLM_NUM_BLOCKS); with
    num_blocks=None every sequence gets cdiv(nkv, 16) pages of its own, in
    a shuffled order, as ktune's paged cache holds them."""
    per_seq = cdiv(nkv, BLOCK_SIZE)
    if num_blocks is not None:
        return [[rng.randint(0, num_blocks - 1) for _ in range(per_seq)] for _ in range(batch)], num_blocks
    pages = list(range(batch * per_seq))
    rng.shuffle(pages)
    return [pages[b * per_seq:(b + 1) * per_seq] for b in range(batch)], batch * per_seq


def capacity_tables(batch, nkv, capacity, rng):
    """Each sequence's own cdiv(nkv, 16) pages, drawn without repeats from
    a pool the size ktune's paged cache has: cdiv(capacity, 16) pages a
    sequence and one spare each (internal/abi/paged.go), shuffled. The same
    bytes as distinct pages, spread over the capacity's address range, as
    ktune's probes read them."""
    per_seq = cdiv(nkv, BLOCK_SIZE)
    pool = batch * (cdiv(capacity, BLOCK_SIZE) + 1)
    pages = rng.sample(range(pool), batch * per_seq)
    return [pages[b * per_seq:(b + 1) * per_seq] for b in range(batch)], pool


def partial_args(p, heads, kv_heads):
    """The v2 kernel's parameters in order (csrc/attention/
    attention_kernels.cuh), as (ctypes type, value): p maps the buffer
    names to device addresses."""
    x = 16 // 2  # elements of 16 bytes of f16
    kv_head_stride = HEAD_SIZE * BLOCK_SIZE
    kv_block_stride = kv_heads * kv_head_stride
    assert HEAD_SIZE % x == 0
    vp, i32, f32 = ctypes.c_void_p, ctypes.c_int32, ctypes.c_float
    return [
        (vp, p["exp_sums"]), (vp, p["max_logits"]), (vp, p["tmp_out"]),
        (vp, p["q"]), (vp, p["k"]), (vp, p["v"]),
        (i32, kv_heads), (f32, 1.0 / HEAD_SIZE ** 0.5),
        (vp, p["block_tables"]), (vp, p["seq_lens"]), (i32, p["max_blocks"]),
        (vp, 0),  # alibi_slopes
        (i32, heads * HEAD_SIZE),  # q_stride
        (i32, kv_block_stride), (i32, kv_head_stride),
        (vp, p["k_scale"]), (vp, p["v_scale"]),
        (i32, 0), (i32, 0), (i32, 0), (i32, 64), (i32, 0),  # tp_rank, blocksparse: vLLM's defaults
    ]


def reduce_args(p, parts):
    """The reduce kernel's parameters in order."""
    vp, i32 = ctypes.c_void_p, ctypes.c_int32
    return [(vp, p["out"]), (vp, p["exp_sums"]), (vp, p["max_logits"]), (vp, p["tmp_out"]),
            (vp, p["seq_lens"]), (i32, parts)]


def pack(args):
    """The void** array cuLaunchKernel takes, and the objects it points at
    (kept alive by the caller)."""
    objs = [t(v) for t, v in args]
    arr = (ctypes.c_void_p * len(objs))(*[ctypes.cast(ctypes.pointer(o), ctypes.c_void_p) for o in objs])
    return arr, objs


class Driver:
    """The few driver calls the script makes, on torch's context."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError("%s: CUresult %d" % (what, rc))

    def load(self, image, names):
        mod = ctypes.c_void_p()
        self.check(self.cu.cuModuleLoadData(ctypes.byref(mod), image), "cuModuleLoadData")
        fns = {}
        for n in names:
            f = ctypes.c_void_p()
            self.check(self.cu.cuModuleGetFunction(ctypes.byref(f), mod, n.encode()), "cuModuleGetFunction " + n)
            fns[n] = f
        return fns

    def launch(self, f, grid, block, shared, stream, params):
        self.check(self.cu.cuLaunchKernel(f, *[ctypes.c_uint(g) for g in grid], *[ctypes.c_uint(b) for b in block],
                                          ctypes.c_uint(shared), ctypes.c_void_p(stream), params, None),
                   "cuLaunchKernel")


def run_point(torch, drv, fns, heads, kv_heads, batch, nkv, num_blocks, seed, capacity=None):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    scale = 1.0 / HEAD_SIZE ** 0.5
    if num_blocks == "capacity":
        tables, nblocks = capacity_tables(batch, nkv, capacity, rng)
    else:
        tables, nblocks = block_tables(batch, nkv, num_blocks, rng)
    dev = "cuda"
    q = torch.empty(batch, heads, HEAD_SIZE, dtype=torch.half, device=dev).uniform_(-scale, scale)
    k = torch.empty(nblocks, kv_heads, HEAD_SIZE // 8, BLOCK_SIZE, 8, dtype=torch.half, device=dev).uniform_(-scale, scale)
    v = torch.empty(nblocks, kv_heads, HEAD_SIZE, BLOCK_SIZE, dtype=torch.half, device=dev).uniform_(-scale, scale)
    bt = torch.tensor(tables, dtype=torch.int32, device=dev)
    lens = torch.full((batch,), nkv, dtype=torch.int32, device=dev)
    parts = cdiv(nkv, PARTITION_SIZE)
    out = torch.empty_like(q)
    tmp = torch.empty(batch, heads, parts, HEAD_SIZE, dtype=torch.half, device=dev)
    sums = torch.empty(batch, heads, parts, dtype=torch.float32, device=dev)
    maxl = torch.empty_like(sums)
    one = torch.ones(1, dtype=torch.float32, device=dev)
    p = {"exp_sums": sums.data_ptr(), "max_logits": maxl.data_ptr(), "tmp_out": tmp.data_ptr(), "q": q.data_ptr(),
         "k": k.data_ptr(), "v": v.data_ptr(), "block_tables": bt.data_ptr(), "seq_lens": lens.data_ptr(),
         "max_blocks": len(tables[0]), "k_scale": one.data_ptr(), "v_scale": one.data_ptr(), "out": out.data_ptr()}
    (g1, b1, s1), (g2, b2, s2) = geometry(heads, batch, nkv)
    a1, keep1 = pack(partial_args(p, heads, kv_heads))
    a2, keep2 = pack(reduce_args(p, parts))
    stream = torch.cuda.current_stream().cuda_stream

    def step():
        drv.launch(fns[PARTIAL], g1, b1, s1, stream, a1)
        drv.launch(fns[REDUCE], g2, b2, s2, stream, a2)

    def bench(iters):
        t0 = time.perf_counter()
        for _ in range(iters):
            step()
        torch.cuda.synchronize()
        return (time.perf_counter() - t0) / iters

    bench(3)  # vLLM's warm-up
    torch.cuda.synchronize()
    us = bench(100) * 1e6
    del keep1, keep2
    return us, nblocks


def parse_shapes(text):
    out = []
    for s in text.split(","):
        h, kv = s.split("/")
        out.append((int(h), int(kv)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cubin", required=True, help="the CUBIN of vLLM's nvcc build (ktune's build cache)")
    ap.add_argument("--shapes", default="28/4,32/8", help="HEADS/KV_HEADS,...")
    ap.add_argument("--batch", default="1,16")
    ap.add_argument("--nkv", default="2048,8192,32768")
    ap.add_argument("--repeat", type=int, default=3, help="times each point is benchmarked (each a 100-call run)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--capacity", type=int, default=32768,
                    help="also time each point over a pool of ktune's size for this capacity (0: not)")
    ap.add_argument("-o", required=True, help="JSON lines out")
    a = ap.parse_args()

    import torch  # only here: the pure parts are tested without it
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    drv = Driver()
    with open(a.cubin, "rb") as f:
        image = f.read()
    fns = drv.load(image, [PARTIAL, REDUCE])
    with open(a.o, "w", encoding="utf-8") as out:
        for heads, kv_heads in parse_shapes(a.shapes):
            for batch in [int(b) for b in a.batch.split(",")]:
                for nkv in [int(n) for n in a.nkv.split(",")]:
                    for nb in (VLLM_NUM_BLOCKS, None) + (("capacity",) if a.capacity else ()):
                        runs = [run_point(torch, drv, fns, heads, kv_heads, batch, nkv, nb, a.seed + r, a.capacity)[0]
                                for r in range(a.repeat)]
                        runs.sort()
                        rec = {"heads": heads, "kv_heads": kv_heads, "batch": batch, "nkv": nkv,
                               "num_blocks": "distinct" if nb is None else nb,
                               "us_runs": runs, "us_median": runs[len(runs) // 2],
                               "method": "vLLM benchmark_paged_attention.py: 3 warm-up, 100 calls back to back, perf_counter, synchronize"}
                        out.write(json.dumps(rec) + "\n")
                        print("%d/%d b%d nkv %d blocks %s: %.2f us" % (heads, kv_heads, batch, nkv, rec["num_blocks"], rec["us_median"]))
                        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
