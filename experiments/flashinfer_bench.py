#!/usr/bin/env python3
"""Time FlashInfer's paged decode kernels the way FlashInfer's own
benchmarks time them, on the CUBINs ktune built and gated, outside ktune.

The kernels are the ones experiments/engines/h200-flashinfer.yaml
declares: BatchDecodeWithPagedKVCacheKernel (its single pass, one launch
a step), the split form (the same kernel over 512-row chunks, then
PersistentVariableLengthMergeStatesKernel) and the planned form (the
same two, chunked and padded as FlashInfer's planner does under CUDA
graphs: planner_grid), f16, head 128, groups 4 (32/8)
and 8 (64/8), pages in NHD and HND order. ktune check builds them with
FlashInfer's own nvcc command into its build cache
($cache/builds/*/*/artifact.cubin beside an entry.json naming
attention_impl.cuh); this script loads those CUBINs with the driver API
through ctypes (a GPU machine without the flashinfer package has no
other way to call them) and finds each entry by the mangled name ktune
check printed (results/h200/flashinfer-decode/h100-check.log).

The method is bench_gpu_time_with_cuda_event in FlashInfer's
flashinfer/testing/utils.py, the CUDA-event path its benchmarks use
(and the fallback of its CUPTI path), with its defaults: one call first
to exclude one-time initialisation; 5 calls between one event pair give
the estimate (each preceded by the flush); 25 ms of warm-up calls and
100 ms of measured ones (max(1, int(T / estimate)) each); every measured
call between its own pair of CUDA events, preceded, outside the pair, by
zeroing an int8 buffer of 2 x the device's L2 size (cold_l2_cache=True,
the default; the size rounded down to whole MiB as FlashInfer does); one
synchronisation at the end; the benchmarks report the median of the
per-call times (np.median). The same without the flush is the hot
number, for comparison. A call is what FlashInfer's decode wrapper
launches for a step: the decode kernel alone for the single pass; for
the split form the decode kernel, then the merge kernel, both between
the events.

The arguments are the spec's, field by field: BatchDecodeParams<__half,
__half, __half, int> with its nested paged_kv_t (whose page_size is a
uint_fastdiv holding CCCL's cuda::fast_mod_div<uint32_t>), the constants
of fast_mod_div as internal/expr/hostfuncs.go computes them, the page
strides of internal/abi/layout.go, window_left -1 and scale
1/sqrt(head_dim) as internal/abi/table.go gives them, the planned arrays
(request_indices, kv_tile_indices, o_indptr, kv_chunk_size,
block_valid_mask as bool) as the spec's planned: entries generate them,
the split form's grid padded to batch * cdiv(capacity, 512) and the
merge kernel's persistent grid sms * min(blocks_per_sm, cdiv(batch *
heads, sms)) at 12 blocks per SM (ktune's --blocks-per-sm 12).
test_flashinfer_bench.py checks the struct's layout and values, the
planned arrays and the geometry against the spec's YAML without a GPU.
Every sequence holds nkv rows in cdiv(nkv, page) pages of its own,
shuffled over the pool; Q, K and V uniform in [-1, 1]. (ktune's pool is
larger: cdiv(capacity, page) pages a sequence and one spare page each
(internal/abi/paged.go): the same bytes are read, from a wider range.
Before a point is
timed its output is compared with a float64 softmax attention computed
by torch on the same Q, K and V (the first and last sequence, every
head); a point whose output is wrong is reported so and not timed, so a
mis-packed struct cannot time garbage.

The prediction: FlashInfer's cold-L2 event timing matches ktune's cold
probe within a few percent at every point (both flush L2 before each
call and time it with a pair of events), and differs from ktune's graph
probe by the launch overhead.

    python3 experiments/flashinfer_bench.py --cubin CACHE/builds/*/*/artifact.cubin \\
        --shapes 32/8,64/8 --batch 1,16 --nkv 2048,8192,32768 --page 16,64 -o out.jsonl

One JSON line per point: form, layout, heads, kv_heads, batch, nkv,
page, us_median (cold L2), us_median_hot, the iteration counts, the
output check and the method. Needs PyTorch with CUDA and libcuda; the
pure parts are tested without them:
cd experiments && python3 -m unittest test_flashinfer_bench.
"""

import argparse
import ctypes
import json
import math
import random

from vllm_bench import Driver, cdiv, pack, parse_shapes

HEAD_DIM = 128
CAPACITY = 32768  # the spec's shapes
CHUNK = 512  # the split form's define
BLOCKS_PER_SM = 12  # the merge kernel's occupancy on sm_90 at its block and shared memory
FORMS = ("single", "split", "planned")
# FlashInfer's planner under CUDA graphs (scheduler.cuh, DecodePlan with
# enable_cuda_graph): max_grid = the decode kernel's blocks an SM (8: 64
# registers x 128 threads) x the device's SMs (the spec's 8 * sms), the
# grid padded to max_grid / kv_heads work items, the KV chunk the fewest
# pages (at least 128 rows) that keep the sequences' chunks within them;
# the spec's flashinfer-planned-* variants.
DECODE_BLOCKS_PER_SM = 8


def planner_grid(sms):
    """FlashInfer's max_grid on a device of sms SMs."""
    return DECODE_BLOCKS_PER_SM * sms
LAYOUTS = ("nhd", "hnd")

# FlashInfer's benchmark method (flashinfer/testing/utils.py defaults).
ESTIMATE_CALLS = 5
WARMUP_MS = 25.0
REPEAT_MS = 100.0
MIB = 1 << 20

# The driver's enums used here (cuda.h).
CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16
CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE = 38
STATIC_SHARED_LIMIT = 48 << 10


# --- cuda::fast_mod_div<uint32_t> -----------------------------------------

def fast_mod_div(d):
    """(multiplier, add, shift) of CCCL's fast_mod_div<uint32_t> for a
    divisor d >= 1, as internal/expr/hostfuncs.go's FastModDiv computes
    them: shift = floor(log2 d); a power of two has multiplier 0 (the
    kernel shifts); otherwise, with k = 32 + shift, multiplier =
    floor((2^k + 2^shift) / d) and add = 1 when floor(2^k / d) equals it."""
    if not 1 <= d < 1 << 32:
        raise ValueError("divisor %d: want 1 to 2^32 - 1" % d)
    shift = d.bit_length() - 1
    if d & (d - 1) == 0:
        return 0, 0, shift
    k = 32 + shift
    mul = ((1 << k) + (1 << shift)) // d
    add = 1 if (1 << k) // d == mul else 0
    return mul, add, shift


def fast_mod_div_quotient(n, mul, add, shift):
    """n / d as fast_mod_div's operator/ divides a 32-bit n: n >> shift
    for a power of two, else umulhi(n + add, multiplier) >> shift, n +
    add not taken past 2^32 - 1."""
    if mul == 0:
        return n >> shift
    if n != (1 << 32) - 1:
        n += add
    return ((n * mul) >> 32) >> shift


# --- geometry -------------------------------------------------------------

def decode_tile(head_dim, group):
    """The decode kernel's template tile, as FlashInfer's dispatch picks
    it and the spec's entry writes it: vec_size, bdx, bdy = group, bdz."""
    vec = max(8, head_dim // 32)
    bdx = head_dim // vec
    threads = max(128, bdx * group)
    return vec, bdx, group, threads // (bdx * group)


def decode_name(head_dim, group):
    """The decode kernel's mangled entry for f16 (h100-check.log)."""
    vec, bdx, bdy, bdz = decode_tile(head_dim, group)
    return ("_ZN10flashinfer33BatchDecodeWithPagedKVCacheKernelILNS_15PosEncodingModeE0ELj2ELj1ELj%dELj%dELj%dELj%dE"
            "NS_16DefaultAttentionILb0ELb0ELb0ELb0EEENS_17BatchDecodeParamsI6__halfS5_S5_iEEEEvT7_" % (vec, bdx, bdy, bdz))


def merge_name(head_dim):
    """The merge kernel's mangled entry for f16 (h100-check.log)."""
    vec, bdx, _, _ = decode_tile(head_dim, 1)
    return ("_ZN10flashinfer41PersistentVariableLengthMergeStatesKernelILj%dELj%dELj%dELj4E6__halfS1_iEEvPT3_PfPT5_PT4_S4_jPjj"
            % (vec, bdx, 128 // bdx))


def padded_batch(batch, capacity, chunk=CHUNK):
    """The split form's work items: every sequence's chunks at the
    capacity, so one plan serves every length (a CUDA graph's padding)."""
    return batch * cdiv(capacity, chunk)


def planner_chunk(batch, nkv, page, kv_heads, sms):
    """The rows of the planned form's KV chunk for a step whose longest
    sequence is nkv: the spec's expression, FlashInfer's binary search
    over pages for equal lengths."""
    return page * max(max(128 // page, 1), cdiv(cdiv(nkv, page), (planner_grid(sms) // kv_heads) // batch))


def work_items(form, batch, capacity, kv_heads, sms):
    """The decode kernel's grid.x: one item a sequence (single pass), every
    sequence's 512-row chunks at the capacity (split), or the planner's
    padded count (planned)."""
    if form == "single":
        return batch
    if form == "split":
        return padded_batch(batch, capacity)
    return planner_grid(sms) // kv_heads


def geometry(form, heads, kv_heads, head_dim, batch, capacity, sms, blocks_per_sm=BLOCKS_PER_SM):
    """The step's launches as the spec declares them: (grid, block,
    dynamic shared bytes) each, the decode kernel first."""
    vec, bdx, bdy, bdz = decode_tile(head_dim, heads // kv_heads)
    threads = bdx * bdy * bdz
    shared = 2 * 2 * threads // bdx * head_dim * 2 + max(threads * 8, 2 * threads // bdx * 4)
    items = work_items(form, batch, capacity, kv_heads, sms)
    out = [((items, kv_heads, 1), (bdx, bdy, bdz), shared)]
    if form != "single":
        mbdy = 128 // bdx
        out.append(((sms * min(blocks_per_sm, cdiv(batch * heads, sms)), 1, 1), (bdx, mbdy, 1),
                    4 * mbdy * head_dim * 2 + 128 * 4))
    return out


def strides(layout, page, kv_heads, head_dim):
    """(page, row, head) strides in elements of a paged cache, as
    internal/abi/layout.go defines them: NHD pages are [page][kv_heads]
    [head_dim], HND pages [kv_heads][page][head_dim]."""
    page_stride = page * kv_heads * head_dim
    if layout == "nhd":
        return page_stride, kv_heads * head_dim, head_dim
    if layout == "hnd":
        return page_stride, head_dim, page * head_dim
    raise ValueError("layout %r: want nhd or hnd" % layout)


# --- the host's arrays ----------------------------------------------------

def pool_shape(layout, num_pages, page, kv_heads, head_dim):
    """The K (and V) pool's torch shape, C-contiguous, whose strides are
    strides(layout, ...)."""
    if layout == "nhd":
        return (num_pages, page, kv_heads, head_dim)
    return (num_pages, kv_heads, page, head_dim)


def page_table(batch, nkv, page, rng):
    """Every sequence's own cdiv(nkv, page) pages at shuffled places in
    the pool, as FlashInfer's paged_kv_t reads them: indptr [batch + 1]
    into indices, and the rows of each sequence's last page."""
    per_seq = cdiv(nkv, page)
    pages = list(range(batch * per_seq))
    rng.shuffle(pages)
    indptr = [b * per_seq for b in range(batch + 1)]
    last = [nkv - (per_seq - 1) * page] * batch
    return indptr, pages, last, batch * per_seq


def expand(batch, count, value, length):
    """The spec's expand: for each sequence i, count(i) entries holding
    value(i, j), then zeros up to length."""
    out = [value(i, j) for i in range(batch) for j in range(count(i))]
    if len(out) > length:
        raise ValueError("%d entries do not fit length %d" % (len(out), length))
    return out + [0] * (length - len(out))


def planned(form, batch, nkv, capacity, sms, chunk=CHUNK, page=16, kv_heads=8):
    """What FlashInfer's planner fills, as the spec's planned: entries
    generate it: name -> (entries, C type). Every sequence is nkv long
    (the planned form's chunk reads the longest)."""
    if form == "single":
        return {
            "request_indices": ([i for i in range(batch)], "i32"),
            "kv_tile_indices": ([0] * batch, "i32"),
            "kv_chunk_size": (expand(batch, lambda i: 1 - min(i, 1), lambda i, j: capacity, 1), "i32"),
        }
    if form == "planned":
        chunk = planner_chunk(batch, nkv, page, kv_heads, sms)
    c = cdiv(nkv, chunk)
    n = padded_batch(batch, capacity, chunk) if form == "split" else work_items(form, batch, capacity, kv_heads, sms)
    return {
        "o_indptr": ([b * c for b in range(batch + 1)], "i32"),
        "request_indices": (expand(batch, lambda i: c, lambda i, j: i, n), "i32"),
        "kv_tile_indices": (expand(batch, lambda i: c, lambda i, j: j, n), "i32"),
        "block_valid_mask": (expand(batch, lambda i: c, lambda i, j: 1, n), "bool"),
        "kv_chunk_size": (expand(batch, lambda i: 1 - min(i, 1), lambda i, j: chunk, 1), "i32"),
    }


# --- BatchDecodeParams ----------------------------------------------------

class FastModDiv(ctypes.Structure):
    """cuda::fast_mod_div<uint32_t>'s members."""
    _fields_ = [("divisor", ctypes.c_uint32), ("multiplier", ctypes.c_uint32),
                ("add", ctypes.c_uint32), ("shift", ctypes.c_int32)]


class UintFastdiv(ctypes.Structure):
    """flashinfer::uint_fastdiv: the CCCL object and the divisor."""
    _fields_ = [("impl_", FastModDiv), ("d_", ctypes.c_uint32)]


class PagedKV(ctypes.Structure):
    """flashinfer::paged_kv_t<__half, int>."""
    _fields_ = [("page_size", UintFastdiv)] + [
        (n, ctypes.c_uint32) for n in ("num_heads", "head_dim", "batch_size", "stride_page", "stride_n", "stride_h",
                                       "v_stride_page", "v_stride_n", "v_stride_h")] + [
        (n, ctypes.c_void_p) for n in ("k_data", "v_data", "indices", "indptr", "last_page_len", "rope_pos_offset")]


class BatchDecodeParams(ctypes.Structure):
    """flashinfer::BatchDecodeParams<__half, __half, __half, int>."""
    _fields_ = [("q", ctypes.c_void_p), ("q_rope_offset", ctypes.c_void_p), ("paged_kv", PagedKV),
                ("o", ctypes.c_void_p), ("lse", ctypes.c_void_p), ("maybe_alibi_slopes", ctypes.c_void_p),
                ("padded_batch_size", ctypes.c_uint32), ("num_qo_heads", ctypes.c_uint32),
                ("q_stride_n", ctypes.c_int32), ("q_stride_h", ctypes.c_int32), ("window_left", ctypes.c_int32),
                ("logits_soft_cap", ctypes.c_float), ("sm_scale", ctypes.c_float),
                ("rope_rcp_scale", ctypes.c_float), ("rope_rcp_theta", ctypes.c_float)] + [
        (n, ctypes.c_void_p) for n in ("request_indices", "kv_tile_indices", "o_indptr", "kv_chunk_size_ptr",
                                       "block_valid_mask")] + [
        ("partition_kv", ctypes.c_uint8)]


def build_params(form, layout, heads, kv_heads, head_dim, batch, capacity, page, addr, sms):
    """The params struct of a step, field for field as the spec passes
    it; addr maps the spec's buffer names (q, out, lse, k, v,
    page_indices, page_indptr, last_page_len, planned:NAME, scratch:NAME)
    to device addresses."""
    split = form != "single"
    mul, add, shift = fast_mod_div(page)
    sp, sn, sh = strides(layout, page, kv_heads, head_dim)
    kv = PagedKV(page_size=UintFastdiv(FastModDiv(page, mul, add, shift), page),
                 num_heads=kv_heads, head_dim=head_dim, batch_size=batch,
                 stride_page=sp, stride_n=sn, stride_h=sh, v_stride_page=sp, v_stride_n=sn, v_stride_h=sh,
                 k_data=addr["k"], v_data=addr["v"], indices=addr["page_indices"], indptr=addr["page_indptr"],
                 last_page_len=addr["last_page_len"], rope_pos_offset=None)
    return BatchDecodeParams(
        q=addr["q"], q_rope_offset=None, paged_kv=kv,
        o=addr["scratch:tmp_v"] if split else addr["out"], lse=addr["scratch:tmp_s"] if split else addr["lse"],
        maybe_alibi_slopes=None,
        padded_batch_size=work_items(form, batch, capacity, kv_heads, sms),
        num_qo_heads=heads, q_stride_n=heads * head_dim, q_stride_h=head_dim,
        window_left=-1,  # ktune's window_left without a window
        logits_soft_cap=0.0, sm_scale=1.0 / math.sqrt(head_dim), rope_rcp_scale=1.0, rope_rcp_theta=1.0,
        request_indices=addr["planned:request_indices"], kv_tile_indices=addr["planned:kv_tile_indices"],
        o_indptr=addr["planned:o_indptr"] if split else None, kv_chunk_size_ptr=addr["planned:kv_chunk_size"],
        block_valid_mask=addr["planned:block_valid_mask"] if split else None,
        partition_kv=1 if split else 0)


def merge_args(addr, batch, heads):
    """The merge kernel's parameters in order (the spec's args; its
    mangled signature: V, S, indptr, v_merged, s_merged, max_seq_len,
    seq_len_ptr, num_heads)."""
    vp, u32 = ctypes.c_void_p, ctypes.c_uint32
    return [(vp, addr["scratch:tmp_v"]), (vp, addr["scratch:tmp_s"]), (vp, addr["planned:o_indptr"]),
            (vp, addr["out"]), (vp, addr["lse"]), (u32, batch), (vp, None), (u32, heads)]


# --- FlashInfer's timing --------------------------------------------------

def iteration_counts(estimate_ms):
    """(warm-up, measured) calls for an estimated call time."""
    return max(1, int(WARMUP_MS / estimate_ms)), max(1, int(REPEAT_MS / estimate_ms))


def flush_bytes(l2_bytes):
    """The cold-L2 buffer: 2 x L2, rounded down to whole MiB."""
    return (2 * l2_bytes) // MIB * MIB


def median(xs):
    """np.median: the middle value, or the mean of the middle two."""
    s = sorted(xs)
    n = len(s)
    if n == 0:
        raise ValueError("median of nothing")
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def event_times(torch, call, flush):
    """Per-call ms by FlashInfer's CUDA-event method; flush is the int8
    buffer zeroed before each call, or None (hot)."""
    def one():
        if flush is not None:
            flush.zero_()
        call()

    torch.cuda.synchronize()
    call()  # excludes one-time initialisation
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(ESTIMATE_CALLS):
        one()
    b.record()
    torch.cuda.synchronize()
    warm, reps = iteration_counts(a.elapsed_time(b) / ESTIMATE_CALLS)
    for _ in range(warm):
        one()
    torch.cuda.synchronize()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for s, e in zip(starts, ends):
        if flush is not None:
            flush.zero_()
        s.record()
        call()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


# --- the GPU run ----------------------------------------------------------

def entries_in(image, names):
    """The names an image holds as symbols (each NUL-terminated in its
    string tables)."""
    return [n for n in names if n.encode() + b"\0" in image]


def find_functions(drv, images, names):
    """name -> CUfunction, each from the first image holding it; every
    name must be found."""
    fns = {}
    for path, image in images:
        want = [n for n in entries_in(image, names) if n not in fns]
        if want:
            fns.update(drv.load(image, want))
    missing = [n for n in names if n not in fns]
    if missing:
        raise RuntimeError("no CUBIN given holds %s (ktune check's log names each entry's mangled name)" % ", ".join(missing))
    return fns


def device_int(drv, attr, dev):
    v = ctypes.c_int()
    drv.check(drv.cu.cuDeviceGetAttribute(ctypes.byref(v), attr, dev), "cuDeviceGetAttribute %d" % attr)
    return v.value


def merge_occupancy(drv, fn, block, shared):
    """The merge kernel's resident blocks per SM, as FlashInfer's host
    sizes its persistent grid from (recorded beside the spec's 12)."""
    n = ctypes.c_int()
    drv.check(drv.cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(ctypes.byref(n), fn, block[0] * block[1] * block[2],
                                                                  ctypes.c_size_t(shared)), "cuOccupancy")
    return n.value


def device_i32(torch, xs):
    return torch.tensor(xs, dtype=torch.int32, device="cuda")


def check_output(torch, q, k, v, out, lse, layout, indptr, indices, nkv):
    """(max abs error, nmse) of out against a float64 softmax attention
    over the same Q, K and V, at the first and last sequence, every head
    (query head h reads KV head h // group), and the max abs error of
    lse (base 2, as the spec's lse: log2 says the kernels write it)."""
    errs, lse_errs, num, den = [], [], 0.0, 0.0
    batch, heads, hd = q.shape
    for b in sorted({0, batch - 1}):
        pages = torch.tensor(indices[indptr[b]:indptr[b + 1]], dtype=torch.long, device="cuda")
        kb, vb = k[pages], v[pages]
        if layout == "hnd":  # [n][kv_heads][page][hd] -> [n][page][kv_heads][hd]
            kb, vb = kb.permute(0, 2, 1, 3), vb.permute(0, 2, 1, 3)
        kv_heads = kb.shape[2]
        kb = kb.reshape(-1, kv_heads, hd)[:nkv].double()
        vb = vb.reshape(-1, kv_heads, hd)[:nkv].double()
        qb = q[b].double().reshape(kv_heads, heads // kv_heads, hd)
        s = torch.einsum("kgd,nkd->kgn", qb, kb) / math.sqrt(hd)
        ref = torch.einsum("kgn,nkd->kgd", torch.softmax(s, dim=2), vb).reshape(heads, hd)
        got = out[b].double()
        if not torch.isfinite(got).all():
            return float("inf"), float("inf"), float("inf")
        ref_lse = (torch.logsumexp(s, dim=2) / math.log(2)).reshape(heads)
        lse_errs.append((lse[b].double() - ref_lse).abs().max().item())
        d = got - ref
        errs.append(d.abs().max().item())
        num += (d * d).sum().item()
        den += (ref * ref).sum().item()
    return max(errs), num / max(den, 1e-300), max(lse_errs)


NMSE_BOUND = 1e-4  # f16 out (and the split form's f16 partials) sit near 1e-6; a wrong struct gives ~1


def run_point(torch, drv, fns, form, layout, heads, kv_heads, batch, nkv, page, capacity, sms, bps, flush, hot, seed):
    rng = random.Random(seed)
    torch.manual_seed(seed)
    hd, group = HEAD_DIM, heads // kv_heads
    indptr, indices, last, num_pages = page_table(batch, nkv, page, rng)
    shape = pool_shape(layout, num_pages, page, kv_heads, hd)
    q = torch.empty(batch, heads, hd, dtype=torch.half, device="cuda").uniform_(-1, 1)
    k = torch.empty(shape, dtype=torch.half, device="cuda").uniform_(-1, 1)
    v = torch.empty(shape, dtype=torch.half, device="cuda").uniform_(-1, 1)
    out = torch.full((batch, heads, hd), float("nan"), dtype=torch.half, device="cuda")
    lse = torch.full((batch, heads), float("nan"), dtype=torch.float32, device="cuda")
    keep = [q, k, v, out, lse]
    addr = {"q": q.data_ptr(), "k": k.data_ptr(), "v": v.data_ptr(), "out": out.data_ptr(), "lse": lse.data_ptr()}
    for name, xs in (("page_indptr", indptr), ("page_indices", indices), ("last_page_len", last)):
        t = device_i32(torch, xs)
        keep.append(t)
        addr[name] = t.data_ptr()
    for name, (xs, ctype) in planned(form, batch, nkv, capacity, sms, page=page, kv_heads=kv_heads).items():
        t = torch.tensor(xs, dtype=torch.bool if ctype == "bool" else torch.int32, device="cuda")
        keep.append(t)
        addr["planned:" + name] = t.data_ptr()
    if form != "single":
        n = work_items(form, batch, capacity, kv_heads, sms)
        # poisoned, as the spec's scratch: a work item that does not run
        # leaves NaN for the merge, and the check sees it.
        tmp_v = torch.full((n, heads, hd), float("nan"), dtype=torch.half, device="cuda")
        tmp_s = torch.full((n, heads), float("nan"), dtype=torch.float32, device="cuda")
        keep += [tmp_v, tmp_s]
        addr["scratch:tmp_v"], addr["scratch:tmp_s"] = tmp_v.data_ptr(), tmp_s.data_ptr()
    params = build_params(form, layout, heads, kv_heads, hd, batch, capacity, page, addr, sms)
    launches = geometry(form, heads, kv_heads, hd, batch, capacity, sms, bps)
    names = [decode_name(hd, group)] + ([merge_name(hd)] if form != "single" else [])
    args = [(ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(params), ctypes.c_void_p))]
    if form != "single":
        a2, keep2 = pack(merge_args(addr, batch, heads))
        args.append(a2)
        keep.append(keep2)
    for name, (_, _, shared) in zip(names, launches):
        if shared > STATIC_SHARED_LIMIT:
            drv.check(drv.cu.cuFuncSetAttribute(fns[name], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, shared),
                      "cuFuncSetAttribute")
    stream = torch.cuda.current_stream().cuda_stream

    def call():
        for name, (grid, block, shared), a in zip(names, launches, args):
            drv.launch(fns[name], grid, block, shared, stream, a)

    rec = {"form": form, "layout": layout, "heads": heads, "kv_heads": kv_heads, "batch": batch, "nkv": nkv,
           "page": page, "capacity": capacity,
           "chunk": planner_chunk(batch, nkv, page, kv_heads, sms) if form == "planned" else CHUNK if form == "split" else None,
           "launches": [{"entry": n, "grid": g, "block": b, "shared": s} for n, (g, b, s) in zip(names, launches)]}
    if form != "single":
        rec["merge_blocks_per_sm"] = bps
        rec["merge_occupancy"] = merge_occupancy(drv, fns[names[1]], launches[1][1], launches[1][2])
    call()
    torch.cuda.synchronize()
    # lse is recorded, not judged: out is what a wrong struct would spoil.
    max_abs, nmse, lse_abs = check_output(torch, q, k, v, out, lse, layout, indptr, indices, nkv)
    rec.update({key: x if math.isfinite(x) else str(x)  # strict JSON has no NaN or Infinity
                for key, x in (("check_max_abs", max_abs), ("check_nmse", nmse), ("check_lse_max_abs", lse_abs))})
    if not nmse <= NMSE_BOUND:
        rec["wrong"] = "output against float64 softmax attention: nmse %.3g > %g, max abs %.3g; not timed" % (
            nmse, NMSE_BOUND, max_abs)
        return rec
    cold = event_times(torch, call, flush)
    rec.update({"us_median": median(cold) * 1e3, "iterations": len(cold)})
    if hot:
        warm = event_times(torch, call, None)
        rec.update({"us_median_hot": median(warm) * 1e3, "iterations_hot": len(warm)})
    rec["method"] = ("FlashInfer bench_gpu_time_with_cuda_event (flashinfer/testing/utils.py): 1 call, 5-call estimate, "
                     "25 ms warm-up, 100 ms measured, each call between its own CUDA events after zeroing a "
                     "2 x L2 int8 buffer (cold; hot: no flush), median")
    del keep
    return rec


def ints(text):
    return [int(x) for x in text.split(",")]


def names_of(text, allowed):
    out = text.split(",")
    for x in out:
        if x not in allowed:
            raise SystemExit("%r: want one of %s" % (x, ", ".join(allowed)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cubin", nargs="+", required=True,
                    help="CUBINs of FlashInfer's nvcc build (ktune's build cache); each entry is taken from the first holding it")
    ap.add_argument("--shapes", default="32/8,64/8", help="HEADS/KV_HEADS,...")
    ap.add_argument("--batch", default="1,16")
    ap.add_argument("--nkv", default="2048,8192,32768")
    ap.add_argument("--page", default="16,64")
    ap.add_argument("--layouts", default="nhd,hnd")
    ap.add_argument("--forms", default="single,split,planned")
    ap.add_argument("--capacity", type=int, default=CAPACITY, help="the split form's grid is padded to it, as the spec's")
    ap.add_argument("--blocks-per-sm", type=int, default=BLOCKS_PER_SM, help="the merge kernel's grid, as ktune's flag")
    ap.add_argument("--no-hot", action="store_true", help="time only with the cold-L2 flush")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("-o", required=True, help="JSON lines out")
    a = ap.parse_args()
    layouts, forms = names_of(a.layouts, LAYOUTS), names_of(a.forms, FORMS)
    shapes = parse_shapes(a.shapes)

    import torch  # only here: the pure parts are tested without it
    torch.cuda.init()
    torch.zeros(1, device="cuda")
    drv = Driver()
    images = []
    for p in a.cubin:
        with open(p, "rb") as f:
            images.append((p, f.read()))
    names = sorted({decode_name(HEAD_DIM, h // kv) for h, kv in shapes} | ({merge_name(HEAD_DIM)} if set(forms) - {"single"} else set()))
    fns = find_functions(drv, images, names)
    dev = torch.cuda.current_device()
    sms = device_int(drv, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev)
    l2 = device_int(drv, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev)
    flush = torch.empty(flush_bytes(l2), dtype=torch.int8, device="cuda")
    print("%s: %d SMs, L2 %d B, flush %d B" % (torch.cuda.get_device_name(), sms, l2, flush.numel()))
    with open(a.o, "w", encoding="utf-8") as out:
        for heads, kv_heads in shapes:
            for batch in ints(a.batch):
                for page in ints(a.page):
                    for layout in layouts:
                        for form in forms:
                            for nkv in ints(a.nkv):
                                try:
                                    rec = run_point(torch, drv, fns, form, layout, heads, kv_heads, batch, nkv, page,
                                                    a.capacity, sms, a.blocks_per_sm, flush, not a.no_hot, a.seed)
                                except RuntimeError as e:
                                    # A fault leaves the context unusable: say
                                    # which point, then stop.
                                    out.write(json.dumps({"form": form, "layout": layout, "heads": heads, "kv_heads": kv_heads,
                                                          "batch": batch, "nkv": nkv, "page": page, "error": str(e)}) + "\n")
                                    raise
                                rec.update({"sms": sms, "l2_bytes": l2, "device": torch.cuda.get_device_name()})
                                out.write(json.dumps(rec) + "\n")
                                out.flush()
                                if "wrong" in rec:
                                    print("%d/%d b%d p%d %s %s nkv %d: WRONG %s" % (heads, kv_heads, batch, page, layout, form, nkv, rec["wrong"]))
                                else:
                                    print("%d/%d b%d p%d %s %s nkv %d: %.2f us cold, %s us hot (nmse %.1e)" % (
                                        heads, kv_heads, batch, page, layout, form, nkv, rec["us_median"],
                                        "%.2f" % rec["us_median_hot"] if "us_median_hot" in rec else "-", rec["check_nmse"]))
                                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
