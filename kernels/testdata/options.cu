// options.cu — a reference decode attention with the attention options
// (soft-cap, ALiBi slopes from a buffer, sinks, a left window, q_len new
// tokens, a log2 lse), one launch, no splits.
//
// Mapping: one block of one warp per (query head h = blockIdx.x, query
// token t = blockIdx.y, sequence b = blockIdx.z); lane l owns dims
// [4l, 4l + 4) of every 128-dim tile (HEAD_DIM a multiple of 4, ≤ 1024).
// The warp walks the rows [lo, p] the query attends in order with an
// online softmax in f32: a reference for the options' math, not a fast
// kernel. Numerics class: tolerance (f32 accumulation, tanhf, expf, logf).
//
// The score pipeline is results' (internal/abi/attention.go): scale, cap,
// bias, mask, sinks in the denominator. The planted misuses the gates must
// catch are compiled in with -D: MISUSE_CAP_TWICE (the cap reads the
// twice-scaled score), MISUSE_WINDOW_SHORT (one row fewer), MISUSE_SINK
// (the sink ignored), MISUSE_CAUSAL (a row of the future seen),
// MISUSE_ALIBI_SIGN (the distance from the wrong end), MISUSE_LSE_LN (ln
// where log2 is declared).
#include "abi.cuh"

#define LANES 32
#define PER_LANE ((HEAD_DIM + 4 * LANES - 1) / (4 * LANES))

extern "C" __global__ void attn_options(
    const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
    const int* __restrict__ seqlens, const float* __restrict__ alibi_slopes,
    const float* __restrict__ sinks, float* __restrict__ out, float* __restrict__ lse,
    int heads, int kv_heads, int capacity, int q_len, int window_left, float softcap, float scale) {
    const int h = blockIdx.x, t = blockIdx.y, b = blockIdx.z, lane = threadIdx.x;
    const int n = seqlens[b];
    const int p = n - q_len + t;            // the query's position
    int hi = p;
#ifdef MISUSE_CAUSAL
    hi = min(n - 1, p + 1);
#endif
    int lo = 0;
    if (window_left >= 0) {
        int w = window_left;
#ifdef MISUSE_WINDOW_SHORT
        w -= 1;
#endif
        lo = max(0, p - w);
    }
    const int hk = kt_kv_head(h, heads, kv_heads);
    const size_t row = ((size_t)b * q_len + t) * heads + h;
    float4 q4[PER_LANE];
    for (int j = 0; j < PER_LANE; j++) {
        int d0 = 4 * (lane + LANES * j);
        q4[j] = d0 < HEAD_DIM ? *reinterpret_cast<const float4*>(q + row * HEAD_DIM + d0) : kt_zero4();
    }
    float mx = kt_neg_inf(), sum = 0.0f;
    float4 acc[PER_LANE];
    for (int j = 0; j < PER_LANE; j++) acc[j] = kt_zero4();
    const float slope = alibi_slopes ? alibi_slopes[h] : 0.0f;
    for (int r = lo; r <= hi && n > 0; r++) {
        const KV_T* kr = kt_kv_row(k, b, r, hk, kv_heads, capacity);
        // This lane's share of q·k, then one butterfly over the warp.
        // (kt_row_dot would reduce each tile itself: summing its result
        // again multiplies the score by 32, and its shuffles must not sit
        // under the lane's d0 < HEAD_DIM branch.)
        float dot = 0.0f;
        for (int j = 0; j < PER_LANE; j++) {
            int d0 = 4 * (lane + LANES * j);
            if (d0 < HEAD_DIM) {
                float4 k4 = kv_ld4(kr + d0);
                dot = fmaf(q4[j].w, k4.w, fmaf(q4[j].z, k4.z, fmaf(q4[j].y, k4.y, fmaf(q4[j].x, k4.x, dot))));
            }
        }
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        float s = dot * scale;
        if (softcap > 0.0f) {
#ifdef MISUSE_CAP_TWICE
            s *= scale;
#endif
            s = softcap * tanhf(s / softcap);
        }
#ifdef MISUSE_ALIBI_SIGN
        s += slope * (float)(p - r);
#else
        s += slope * (float)(r - p);       // from the integer distance: exact for power-of-two slopes
#endif
        float nmx = fmaxf(mx, s);
        float corr = expf(mx - nmx), e = expf(s - nmx);
        sum = sum * corr + e;
        const KV_T* vr = kt_kv_row(v, b, r, hk, kv_heads, capacity);
        for (int j = 0; j < PER_LANE; j++) {
            int d0 = 4 * (lane + LANES * j);
            if (d0 < HEAD_DIM) {
                float4 v4 = kv_ld4(vr + d0);
                acc[j] = make_float4(acc[j].x * corr + e * v4.x, acc[j].y * corr + e * v4.y,
                                     acc[j].z * corr + e * v4.z, acc[j].w * corr + e * v4.w);
            }
        }
        mx = nmx;
    }
#ifndef MISUSE_SINK
    if (sinks) {
        float sk = sinks[h], nmx = fmaxf(mx, sk);
        float corr = expf(mx - nmx);
        sum = sum * corr + expf(sk - nmx);
        for (int j = 0; j < PER_LANE; j++)
            acc[j] = make_float4(acc[j].x * corr, acc[j].y * corr, acc[j].z * corr, acc[j].w * corr);
        mx = nmx;
    }
#endif
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    for (int j = 0; j < PER_LANE; j++) {
        int d0 = 4 * (lane + LANES * j);
        if (d0 < HEAD_DIM)
            *reinterpret_cast<float4*>(out + row * HEAD_DIM + d0) =
                make_float4(acc[j].x * inv, acc[j].y * inv, acc[j].z * inv, acc[j].w * inv);
    }
    if (lane == 0) {
        float l = sum > 0.0f ? mx + logf(sum) : kt_neg_inf();
#ifndef MISUSE_LSE_LN
        l *= 1.4426950408889634f;           // log2(e): the declared base is log2
#endif
        lse[row] = l;
    }
}
