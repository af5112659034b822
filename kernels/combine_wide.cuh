// combine_wide.cuh: the frontier kernels' attn_combine. Same launch and
// same arithmetic contract as combine.cuh (grid (heads, batch), block
// HEAD_DIM threads; out = sum_sp w_sp acc_sp / sum_sp w_sp l_sp with
// w_sp = exp(m_sp - max m)), but no serial walk over the splits.
//
// Why: the shared combine has every thread walk all SPLITS slots twice,
// one L2 round trip after another; kfront measured it at about 3 us + 0.11
// us per split, 10 us of a 30 us total at SPLITS = 64. Here
//   1. thread i loads the (max, sum) pair of splits i, i + HEAD_DIM, ...
//      all at once (one round trip), and the block reduces the max, the
//      weighted sum and the number of live splits (idle splits are a
//      suffix under gq_range, so slots past the last live one are never
//      read: at short nkv the combine reads only what was computed);
//   2. the weights go to shared memory; the block's HEAD_DIM threads form
//      four sets of HEAD_DIM/4: set w takes splits w, w + 4, ... and thread
//      l of a set dims 4l .. 4l+3 (one 16-byte load per split), with
//      CW_UNROLL loads in flight before the first multiply-add (at
//      HEAD_DIM 128 a set is a warp and a thread its lane);
//   3. the four sets' sums meet in shared memory and thread i writes dim i.
// About three L2 round trips at any SPLITS instead of 2 * SPLITS / unroll.
//
// Numerics: tolerance class only (the order of the sums over splits is not
// the shared combine's, so a kernel using it has no bitwise twin). expf as
// in the shared combine; an idle split (max -inf) weighs exactly 0.
#pragma once
#include "abi.cuh"

#if HEAD_DIM % 64 != 0
#error "combine_wide: HEAD_DIM must be a multiple of 64 (whole warps, four sets of 4-dim threads)"
#endif

// CW_EARLY = 1 issues the first CW_UNROLL accumulator loads of each warp
// together with the headers (see below).
// PDL = 1 makes the combine wait for the partial kernel on the device
// (griddepcontrol.wait), for a host that launches it with programmatic
// stream serialization so that its launch overlaps the partial's tail.
#ifndef PDL
#define PDL 0
#endif
#ifndef CW_EARLY
#define CW_EARLY 0
#endif
#ifndef CW_UNROLL
#define CW_UNROLL (CW_EARLY ? 16 : 8)
#endif

#define CW_NW (HEAD_DIM / 32)                      // warps in the block
#define CW_NS 4                                    // sets of HEAD_DIM/4 threads
#define CW_PER ((SPLITS + HEAD_DIM - 1) / HEAD_DIM)  // headers per thread

// cw_block_max and cw_block_sum reduce one value per thread over the block;
// red must hold CW_NW floats and be free (a __syncthreads before reuse).
__device__ __forceinline__ float cw_block_max(float x, float* red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
    __syncthreads();
    float r = red[0];
#pragma unroll
    for (int w = 1; w < CW_NW; w++) r = fmaxf(r, red[w]);
    return r;
}

__device__ __forceinline__ float cw_block_sum(float x, float* red) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = x;
    __syncthreads();
    float r = red[0];
#pragma unroll
    for (int w = 1; w < CW_NW; w++) r += red[w];
    return r;
}

extern "C" __global__ void __launch_bounds__(HEAD_DIM)
    attn_combine(const float* __restrict__ partial, float* __restrict__ out, int heads) {
    __shared__ float sw[SPLITS];
    __shared__ float red[3][CW_NW];
    __shared__ __align__(16) float sacc[CW_NS][HEAD_DIM];
    const int b = blockIdx.y;
    const int i = threadIdx.x, set = i / (HEAD_DIM / 4), col = i % (HEAD_DIM / 4);
#if PDL
    // Launched as a programmatic dependent of the partial kernel, this
    // block may start before the partials are written: wait for them here.
    // Under an ordinary launch there is no prerequisite grid in flight and
    // the wait returns at once.
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif

    // QLEN query tokens: the block merges head blockIdx.x of each token in
    // turn, slot (and out) row j*heads + h of QLEN*heads (mma_core.cuh's
    // order), so the launch stays the ABI's (heads, batch).
    const int rows = QLEN * heads;
    for (int j = 0; j < QLEN; j++) {
    if (j > 0) __syncthreads();  // sw, red and sacc are the previous token's until every thread is done
    const int h = j * heads + blockIdx.x;

    // 1. Headers: every load of the block in flight at once.
    float2 ml[CW_PER];
#pragma unroll
    for (int c = 0; c < CW_PER; c++) {
        const int sp = i + c * HEAD_DIM;
        ml[c] = make_float2(kt_neg_inf(), 0.0f);
        if (sp < SPLITS) ml[c] = *reinterpret_cast<const float2*>(kt_partial_slot(partial, b, sp, h, rows));
    }
#if CW_EARLY
    // The first CW_UNROLL accumulators of this set go out with the
    // headers, before it is known which splits are live: one L2 round trip
    // fewer whenever SPLITS <= CW_NS * CW_UNROLL. Slots past the last live
    // split are loaded for nothing (they hold the neutral slot) and unused.
    float4 x0[CW_UNROLL];
#pragma unroll
    for (int u = 0; u < CW_UNROLL; u++) {
        const int sp = set + u * CW_NS;
        x0[u] = sp < SPLITS ? *reinterpret_cast<const float4*>(kt_partial_slot(partial, b, sp, h, rows) + 4 + 4 * col)
                            : kt_zero4();
    }
#endif
    float mx = kt_neg_inf(), last = 0.0f;
#pragma unroll
    for (int c = 0; c < CW_PER; c++) {
        mx = fmaxf(mx, ml[c].x);
        if (ml[c].x != kt_neg_inf()) last = (float)(i + c * HEAD_DIM + 1);
    }
    const float gmx = cw_block_max(mx, red[0]);
    const int nlive = (int)cw_block_max(last, red[1]);
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < CW_PER; c++) {
        const int sp = i + c * HEAD_DIM;
        if (sp < SPLITS) {
            const float w = ml[c].x == kt_neg_inf() ? 0.0f : expf(ml[c].x - gmx);
            sw[sp] = w;
            s = fmaf(ml[c].y, w, s);
        }
    }
    const float S = cw_block_sum(s, red[2]);  // its barrier also publishes sw

    // 2. Accumulators of the live splits, CW_UNROLL 16-byte loads in flight.
    float4 acc = kt_zero4();
    int first = set;
#if CW_EARLY
#pragma unroll
    for (int u = 0; u < CW_UNROLL; u++) {
        const int sp = set + u * CW_NS;
        const float w = sp < nlive ? sw[sp] : 0.0f;
        if (sp < nlive) {
            acc.x = fmaf(x0[u].x, w, acc.x);
            acc.y = fmaf(x0[u].y, w, acc.y);
            acc.z = fmaf(x0[u].z, w, acc.z);
            acc.w = fmaf(x0[u].w, w, acc.w);
        }
    }
    first += CW_NS * CW_UNROLL;
#endif
    for (int s0 = first; s0 < nlive; s0 += CW_NS * CW_UNROLL) {
        float4 x[CW_UNROLL];
        float w[CW_UNROLL];
#pragma unroll
        for (int u = 0; u < CW_UNROLL; u++) {
            const int sp = s0 + u * CW_NS;
            const bool ok = sp < nlive;
            x[u] = ok ? *reinterpret_cast<const float4*>(kt_partial_slot(partial, b, sp, h, rows) + 4 + 4 * col)
                      : kt_zero4();
            w[u] = ok ? sw[sp] : 0.0f;
        }
#pragma unroll
        for (int u = 0; u < CW_UNROLL; u++) {
            acc.x = fmaf(x[u].x, w[u], acc.x);
            acc.y = fmaf(x[u].y, w[u], acc.y);
            acc.z = fmaf(x[u].z, w[u], acc.z);
            acc.w = fmaf(x[u].w, w[u], acc.w);
        }
    }

    // 3. The sets' sums meet; thread i writes dim i (coalesced).
    *reinterpret_cast<float4*>(&sacc[set][4 * col]) = acc;
    __syncthreads();
    float o = sacc[0][i];
#pragma unroll
    for (int w = 1; w < CW_NS; w++) o += sacc[w][i];
    out[((size_t)b * rows + h) * HEAD_DIM + i] = S > 0.0f ? o / S : 0.0f;
    }
}
