"""A split-KV decode attention kernel written in Triton, for ktune.

Two launches, as an engine that builds its kernels with Triton ships them:
ktune_tt_partial (one program per split, query head and sequence) writes
one partial slot per program, and ktune_tt_combine (one program per query
head and sequence) merges a head's slots into out. Each is compiled to a
CUBIN of its own, with the metadata JSON Triton writes beside it
(build.py); experiments/engines/triton.yaml loads both files and takes
each launch's block, shared memory and trailing scratch pointers from its
metadata.

Buffers are ktune's (kernels/ABI.md): q and out f32 [batch][heads][D],
K and V [batch][capacity][kv_heads][D] in f16, positions int32 [batch]
(nkv - 1), partial f32 [batch][SPLITS][heads][D + 4], a slot holding the
running max, the sum of exponentials, two zeros and the V accumulator.

The integer arguments are kept out of Triton's specialization
(do_not_specialize): an argument equal to 1 would otherwise become a
constant and leave the compiled kernel's parameter list, which ktune's
declaration must match one for one.
"""

import triton
import triton.language as tl


@triton.jit(do_not_specialize=["positions", "heads", "kv_heads", "capacity"])
def ktune_tt_partial(q, k, v, positions, partial, heads, kv_heads, capacity, scale,
                     HEAD_DIM: tl.constexpr, SPLITS: tl.constexpr, BLOCK_N: tl.constexpr):
    s = tl.program_id(0)
    h = tl.program_id(1)
    b = tl.program_id(2)
    kvh = h // (heads // kv_heads)
    nkv = tl.load(positions + b) + 1
    chunk = tl.cdiv(nkv, SPLITS)
    start = s * chunk
    end = tl.minimum(start + chunk, nkv)

    d = tl.arange(0, HEAD_DIM)
    qv = tl.load(q + (b * heads + h) * HEAD_DIM + d)
    m = tl.full([1], float("-inf"), tl.float32)
    l = tl.zeros([1], tl.float32)
    acc = tl.zeros([HEAD_DIM], tl.float32)
    row = kv_heads * HEAD_DIM
    base = (b.to(tl.int64) * capacity) * row + kvh * HEAD_DIM
    for t0 in range(start, end, BLOCK_N):
        t = t0 + tl.arange(0, BLOCK_N)
        live = t < end
        off = base + t.to(tl.int64)[:, None] * row + d[None, :]
        kt = tl.load(k + off, mask=live[:, None], other=0.0).to(tl.float32)
        sc = tl.sum(kt * qv[None, :], axis=1) * scale
        sc = tl.where(live, sc, float("-inf"))
        m_new = tl.maximum(m, tl.max(sc, axis=0))
        alpha = tl.exp(m - m_new)
        p = tl.exp(sc - m_new)
        vt = tl.load(v + off, mask=live[:, None], other=0.0).to(tl.float32)
        acc = acc * alpha + tl.sum(p[:, None] * vt, axis=0)
        l = l * alpha + tl.sum(p, axis=0)
        m = m_new

    pstr = HEAD_DIM + 4
    slot = partial + ((b * SPLITS + s) * heads + h) * pstr
    hdr = tl.arange(0, 4)
    # An idle split (start >= end) writes max -inf, sum 0 and a zero
    # accumulator, which the combine weighs 0.
    mb = tl.broadcast_to(m, [4])
    lb = tl.broadcast_to(l, [4])
    tl.store(slot + hdr, tl.where(hdr == 0, mb, tl.where(hdr == 1, lb, 0.0)))
    tl.store(slot + 4 + d, acc)


@triton.jit(do_not_specialize=["heads"])
def ktune_tt_combine(partial, out, heads,
                     HEAD_DIM: tl.constexpr, SPLITS: tl.constexpr, BLOCK_S: tl.constexpr):
    h = tl.program_id(0)
    b = tl.program_id(1)
    pstr = HEAD_DIM + 4
    sp = tl.arange(0, BLOCK_S)
    live = sp < SPLITS
    slots = partial + ((b * SPLITS + sp) * heads + h) * pstr
    ms = tl.load(slots, mask=live, other=float("-inf"))
    ls = tl.load(slots + 1, mask=live, other=0.0)
    mx = tl.max(ms, axis=0)
    w = tl.where(ms == float("-inf"), 0.0, tl.exp(ms - mx))
    d = tl.arange(0, HEAD_DIM)
    accs = tl.load(slots[:, None] + 4 + d[None, :], mask=live[:, None], other=0.0)
    num = tl.sum(w[:, None] * accs, axis=0)
    den = tl.sum(w * ls, axis=0)
    tl.store(out + (b * heads + h) * HEAD_DIM + d, num / den)
