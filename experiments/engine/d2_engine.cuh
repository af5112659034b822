// d2_engine.cuh — split-KV decode attention (flash-decoding) with D2's
// register staging, in the form an inference engine ships it: head_dim is
// a run-time argument, the K/V element type is a template parameter
// (kv_ld4<KV>), the row window NR is a template parameter, and the split
// count is the compile-time ATTN_SPLITS. This is not ktune's ABI: ktune
// runs it through the signature declared in experiments/engine.yaml.
//
// Mapping: one warp per (split, query head, sequence); lane i owns dims
// 4i .. 4i+3 (head_dim % 4 == 0 and head_dim <= 128 are the dispatch's to
// enforce; lanes past head_dim hold zeros and still join every shuffle).
// The rows of a split are walked in windows of NR: the K and V rows of a
// window are loaded into registers before the first softmax step of that
// window, so their loads are in flight together, then each row is one
// butterfly dot product and one online-softmax update.
//
// Because head_dim is known only at run time, `live = d0 < hd` is a real
// condition and the guarded loads of a window compile to predicated loads
// rather than per-row branches (kernels/ABI.md's d2 with a compile-time
// HEAD_DIM folds `live` to true and branches on `j < nr` instead; see
// experiments/results/h200/NOTES-d2-anchor.md).
//
// Numerics: tolerance class. The per-row arithmetic is written as plain
// expressions, which the compiler may contract into FMAs, so it is not
// byte-identical to ktune's built-in d2 (which spells each fmaf out).
//
// Layouts: q, out [batch][heads][hd] f32; K, V [batch][capacity][kv_heads]
// [hd] of KV; positions[b] = nkv - 1; partial [batch][ATTN_SPLITS][heads]
// [pstr] f32 with pstr = hd + 4: slot[0] running max, slot[1] sum of
// exponentials, slot[4 ..] the weighted V accumulator, dim-sliced.
#pragma once

#include <cuda_fp16.h>

#ifndef ATTN_SPLITS
#define ATTN_SPLITS 32
#endif

// -infinity without <math.h>'s INFINITY, which NVRTC does not define.
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// kv_ld4 loads 4 consecutive elements of a K or V row as floats: f32
// reads one float4, f16 converts two __half2 into a float4.
template <typename KV>
__device__ __forceinline__ float4 kv_ld4(const KV* p);

template <>
__device__ __forceinline__ float4 kv_ld4<float>(const float* p) {
    return *reinterpret_cast<const float4*>(p);
}

template <>
__device__ __forceinline__ float4 kv_ld4<__half>(const __half* p) {
    const __half2* p2 = reinterpret_cast<const __half2*>(p);
    const float2 a = __half22float2(p2[0]);
    const float2 b = __half22float2(p2[1]);
    return make_float4(a.x, a.y, b.x, b.y);
}

// gqa_attn_split_partial: grid (ATTN_SPLITS, nh, batch), block 32.
// stride_kv is the elements between consecutive rows of one sequence
// (nkvh * hd); a sequence spans capacity rows.
template <typename KV, int NR>
__global__ void gqa_attn_split_partial(
    const float* __restrict__ q, const KV* __restrict__ k, const KV* __restrict__ v,
    const int* __restrict__ positions, float* __restrict__ partial,
    int nh, int nkvh, int hd, int capacity, int stride_kv, int pstr, float scale)
{
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane_id = threadIdx.x;
    const int hk = h / (nh / nkvh);

    // nkv is data, not geometry: the grid stays static under graph replay.
    const int nkv = positions[b] + 1;
    const int chunk = (nkv + ATTN_SPLITS - 1) / ATTN_SPLITS;
    const int lo = sp * chunk;
    const int hi = min(nkv, lo + chunk);

    const size_t seq = (size_t)b * capacity * stride_kv;
    const KV* kb = k + seq + (size_t)hk * hd;
    const KV* vb = v + seq + (size_t)hk * hd;

    const int d0 = lane_id * 4;
    const bool live = d0 < hd;
    const float4 q4 = live ? *reinterpret_cast<const float4*>(q + ((size_t)b * nh + h) * hd + d0)
                           : make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    float mx = neg_inf(), S = 0.0f;
    float4 oc = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

    for (int base = lo; base < hi; base += NR) {
        const int nr = min(NR, hi - base); // warp-uniform
        // D2: stage K and V of the whole window before the first softmax
        // step, so that all 2*NR row loads issue back to back.
        float4 k4[NR], v4[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) {
            const size_t off = (size_t)(base + j) * stride_kv + d0;
            k4[j] = (live && j < nr) ? kv_ld4<KV>(kb + off) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            v4[j] = (live && j < nr) ? kv_ld4<KV>(vb + off) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
#pragma unroll
        for (int j = 0; j < NR; j++) {
            if (j >= nr) break; // warp-uniform: every lane leaves together
            float d = q4.x * k4[j].x + q4.y * k4[j].y + q4.z * k4[j].z + q4.w * k4[j].w;
#pragma unroll
            for (int o = 16; o > 0; o >>= 1)
                d += __shfl_xor_sync(0xFFFFFFFFu, d, o);
            const float s = d * scale;
            const float nmx = fmaxf(mx, s);
            const float corr = expf(mx - nmx);
            const float e = expf(s - nmx);
            S = S * corr + e;
            mx = nmx;
            if (live) {
                const float4 vv = v4[j];
                oc.x = oc.x * corr + e * vv.x;
                oc.y = oc.y * corr + e * vv.y;
                oc.z = oc.z * corr + e * vv.z;
                oc.w = oc.w * corr + e * vv.w;
            }
        }
    }

    // An idle split (lo >= nkv) still writes its slot: max -inf, sum 0.
    float* dst = partial + (((size_t)b * ATTN_SPLITS + sp) * nh + h) * pstr;
    if (lane_id == 0) {
        dst[0] = mx;
        dst[1] = S;
        dst[2] = 0.0f;
        dst[3] = 0.0f;
    }
    if (live) *reinterpret_cast<float4*>(dst + 4 + d0) = oc; // 16-byte aligned via pstr
}

// gqa_attn_split_combine: grid (nh, batch), block hd. Thread i owns dim i
// and merges the ATTN_SPLITS slots of its (head, sequence).
__global__ void gqa_attn_split_combine(
    const float* __restrict__ partial, float* __restrict__ o, int nh, int hd, int pstr)
{
    const int h = blockIdx.x, b = blockIdx.y, i = threadIdx.x;
    if (i >= hd) return;
    const float* p0 = partial + ((size_t)b * ATTN_SPLITS * nh + h) * pstr;
    const size_t step = (size_t)nh * pstr;
    float gmx = neg_inf();
    for (int sp = 0; sp < ATTN_SPLITS; sp++)
        gmx = fmaxf(gmx, p0[sp * step]);
    float S = 0.0f, acc = 0.0f;
    for (int sp = 0; sp < ATTN_SPLITS; sp++) {
        const float* p = p0 + sp * step;
        const float w = expf(p[0] - gmx); // an idle split weighs exp(-inf) = 0
        S += p[1] * w;
        acc += p[4 + i] * w;
    }
    o[((size_t)b * nh + h) * hd + i] = (S > 0.0f) ? acc / S : 0.0f;
}
