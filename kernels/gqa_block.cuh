// gqa_block.cuh: device code shared by the frontier kernels (gqa.cu,
// mma.cu), which give one block to a whole GQA group: all query heads that
// read KV head hk, so each K/V row leaves memory once instead of once per
// query head.
//
// What they share:
//   - an nkv-aware split range: a split only takes work when it gets at
//     least MINROWS rows, so a short context does not pay SPLITS fixed costs
//     (q load, block merge, partial write) for a handful of rows each; the
//     splits left over are idle and write the neutral slot, so the grid,
//     the partial layout and the combine are unchanged;
//   - base-2 softmax: q is pre-multiplied by scale * log2(e) so every
//     exponential is one ex2.approx; the running max is kept in those units
//     and converted back (times ln 2) when the slot is written, because the
//     combine (ABI) weighs slots with expf(max - gmax);
//   - the end-of-split merge of the block's warps in shared memory.
#pragma once
#include "abi.cuh"

#ifndef MINROWS
#define MINROWS 128
#endif

#define GQ_LOG2E 1.4426950408889634f
#define GQ_LN2 0.6931471805599453f

// gq_ex2 is 2^x with one MUFU.EX2; ex2(-inf) = +0, which is what an empty
// state and a masked row need.
__device__ __forceinline__ float gq_ex2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

#ifndef LDH
#define LDH 0
#endif

// gq_ld16 is one 16-byte read-only load. K/V never change during a launch,
// so the non-coherent path is safe. LDH = 1 adds two hints: L1::no_allocate
// (a K/V line is used once, by one warp, so L1 gains nothing by keeping it)
// and L2::256B (a miss fetches the whole 256-byte segment: one head's row,
// which the warp's other three loads of that row then find in L2, instead
// of four 64-byte requests that reach DRAM separately). Measured on the
// H200 it is slower (up to 5% at batch 1, nkv 131072 and at batch 16;
// experiments/results/h200/NOTES-frontier.md), so it is off by default.
__device__ __forceinline__ uint4 gq_ld16(const void* p) {
    uint4 r;
#if LDH
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
#else
    asm volatile("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
                 : "l"(p));
#endif
    return r;
}

// gq_h2x2 unpacks an f16x2 word into two floats (low half first).
__device__ __forceinline__ void gq_h2x2(unsigned int w, float& lo, float& hi) {
    asm("{.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;}"
        : "=f"(lo), "=f"(hi)
        : "r"(w));
}

// gq_pack2 rounds two floats to f16 (nearest even) and packs them, lo in the
// low half: the operand order mma.sync expects for consecutive k or n.
__device__ __forceinline__ unsigned int gq_pack2(float lo, float hi) {
    unsigned int w;
    asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
}

// gq_range is the row range of split sp of sequence b. The number of splits
// in use grows with nkv (one per MINROWS rows, at most SPLITS); the chunk is
// rounded up to ALIGN rows so that split boundaries fall on whole steps of
// the kernel. Splits past the end get lo >= hi: idle.
template <int ALIGN>
__device__ __forceinline__ kt_range gq_range(const int* __restrict__ positions, int b, int sp) {
    const int nkv = positions[b] + 1;
    const int used = min(SPLITS, max(1, (nkv + MINROWS - 1) / MINROWS));
    int chunk = (nkv + used - 1) / used;
    chunk = (chunk + ALIGN - 1) / ALIGN * ALIGN;
    kt_range r;
    r.lo = sp * chunk;
    r.hi = min(nkv, r.lo + chunk);
    return r;
}

// gq_merge_store merges the per-warp states a block left in shared memory
// and writes one partial slot per query head of the group.
//   sm_m[w][i], sm_l[w][i]: warp w's running max (log2 units) and sum for
//   head i of the group; sm_o[w][i][d]: its accumulator. A warp that saw no
//   row has max -inf and contributes exp2(-inf) = 0.
// Called by every thread of the block after a __syncthreads. With QL_ > 1
// query tokens per sequence, entry i = j*group + i' of the merge area is
// token j's head h0 + i', whose slot is row j*heads + h0 + i' of
// QL_*heads (the partial of QL_*heads heads, token-major as q and out).
template <int QL_>
__device__ __forceinline__ int gq_slot_head(int i, int h0, int group, int heads) {
    if (QL_ == 1) return h0 + i;
    const int j = i / group;
    return j * heads + h0 + (i - j * group);
}

// WARPS_ is the number of states to merge per entry, NT_ the block's
// threads (more than WARPS_ warps when several warps shared a state row).
template <int WARPS_, int GMAX_, int QL_ = 1, int NT_ = WARPS_ * 32>
__device__ __forceinline__ void gq_merge_store(const float (*sm_m)[GMAX_], const float (*sm_l)[GMAX_],
                                               const float (*sm_o)[GMAX_][HEAD_DIM], float* __restrict__ partial,
                                               int b, int sp, int h0, int group, int heads) {
    for (int idx = threadIdx.x; idx < QL_ * group * HEAD_DIM; idx += NT_) {
        const int i = idx / HEAD_DIM, d = idx % HEAD_DIM;
        float gm = kt_neg_inf();
#pragma unroll
        for (int w = 0; w < WARPS_; w++) gm = fmaxf(gm, sm_m[w][i]);
        const float gs = gm == kt_neg_inf() ? 0.0f : gm;
        float L = 0.0f, O = 0.0f;
#pragma unroll
        for (int w = 0; w < WARPS_; w++) {
            const float f = gq_ex2(sm_m[w][i] - gs);
            L = fmaf(sm_l[w][i], f, L);
            O = fmaf(sm_o[w][i][d], f, O);
        }
        float* dst = kt_partial_slot(partial, b, sp, gq_slot_head<QL_>(i, h0, group, heads), QL_ * heads);
        dst[4 + d] = O;
        if (d == 0) {
            dst[0] = gm == kt_neg_inf() ? gm : gm * GQ_LN2;
            dst[1] = L;
            dst[2] = 0.0f;
            dst[3] = 0.0f;
        }
    }
}

// gq_store_idle writes the neutral slot (max -inf, sum 0, acc 0) for every
// query head (and token, QL_ > 1) of the group: what a split with no rows
// contributes.
template <int WARPS_, int QL_ = 1>
__device__ __forceinline__ void gq_store_idle(float* __restrict__ partial, int b, int sp, int h0, int group,
                                              int heads) {
    for (int idx = threadIdx.x; idx < QL_ * group * HEAD_DIM; idx += WARPS_ * 32) {
        const int i = idx / HEAD_DIM, d = idx % HEAD_DIM;
        float* dst = kt_partial_slot(partial, b, sp, gq_slot_head<QL_>(i, h0, group, heads), QL_ * heads);
        dst[4 + d] = 0.0f;
        if (d == 0) {
            dst[0] = kt_neg_inf();
            dst[1] = 0.0f;
            dst[2] = 0.0f;
            dst[3] = 0.0f;
        }
    }
}
