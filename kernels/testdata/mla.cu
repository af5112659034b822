// mla.cu — a reference decode attention over a multi-head latent cache
// (MLA, DeepSeek's layout): K rows HEAD_DIM wide (576: the 512-channel
// latent and the 64-channel rope part), V the first dv channels of every
// K row (layout latent: no V buffer) or a V buffer of its own, dv wide
// (layout split); out [batch][q_len][heads][dv], the natural-log lse
// [batch][q_len][heads]. One launch, no splits.
//
// Mapping: one block of one warp per (query head h = blockIdx.x, sequence
// b = blockIdx.z), walking the q_len query tokens in turn (so that one
// grid, [heads, 1, batch], serves every q_len); lane l owns dims
// [4l, 4l + 4) of every 128-dim tile of the K row (HEAD_DIM a multiple of
// 4, ≤ 1024; the last tile of 576 is half used), and the same dims of V
// where they are below dv (dv a multiple of 4, ≤ HEAD_DIM). The warp walks
// the rows [0, p] the query attends in order with an online softmax in
// f32: a reference for the math, not a fast kernel (each head reads the
// whole cache itself, where an engine's kernel shares each latent row
// among the heads). Numerics class: tolerance (f32 accumulation over the
// 576-element dot product, expf, logf).
//
// The score is q·k over every K channel times scale (1/√HEAD_DIM, passed
// by the host); q is [batch][q_len][heads][HEAD_DIM] in f32, causal
// within the q_len new tokens as every option kernel. The planted misuses
// the gates must catch are compiled in with -D: MISUSE_DOT_DV (the dot
// product stops at dv: the rope part forgotten) and MISUSE_V_TAIL (V read
// from K's last dv channels instead of its first).
#include "abi.cuh"

#define LANES 32
#define PER_LANE ((HEAD_DIM + 4 * LANES - 1) / (4 * LANES))

// mla_row computes query row (b, t, h = blockIdx.x); v is null for the
// latent layout.
__device__ __forceinline__ void mla_row(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ seqlens,
                                        float* __restrict__ out, float* __restrict__ lse, int heads, int kv_heads,
                                        int capacity, int q_len, int dv, float scale, int b, int t) {
    const int h = blockIdx.x, lane = threadIdx.x;
    const int n = seqlens[b];
    const int p = n - q_len + t;  // the query's position: it sees rows [0, p]
    const int hk = kt_kv_head(h, heads, kv_heads);
    const size_t row = ((size_t)b * q_len + t) * heads + h;
    int dk = HEAD_DIM;
#ifdef MISUSE_DOT_DV
    dk = dv;
#endif
    int voff = 0;  // where V starts in a latent K row
#ifdef MISUSE_V_TAIL
    voff = HEAD_DIM - dv;
#endif
    float4 q4[PER_LANE];
    for (int j = 0; j < PER_LANE; j++) {
        int d0 = 4 * (lane + LANES * j);
        q4[j] = d0 < dk ? *reinterpret_cast<const float4*>(q + row * HEAD_DIM + d0) : kt_zero4();
    }
    float mx = kt_neg_inf(), sum = 0.0f;
    float4 acc[PER_LANE];
    for (int j = 0; j < PER_LANE; j++) acc[j] = kt_zero4();
    for (int r = 0; r <= p && n > 0; r++) {
        const KV_T* kr = kt_kv_row(k, b, r, hk, kv_heads, capacity);
        // This lane's share of q·k, then one butterfly over the warp,
        // outside any lane-dependent branch.
        float dot = 0.0f;
        for (int j = 0; j < PER_LANE; j++) {
            int d0 = 4 * (lane + LANES * j);
            if (d0 < dk) {
                float4 k4 = kv_ld4(kr + d0);
                dot = fmaf(q4[j].w, k4.w, fmaf(q4[j].z, k4.z, fmaf(q4[j].y, k4.y, fmaf(q4[j].x, k4.x, dot))));
            }
        }
        for (int o = 16; o > 0; o >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, o);
        const float s = dot * scale;
        const float nmx = fmaxf(mx, s);
        const float corr = expf(mx - nmx), e = expf(s - nmx);
        sum = sum * corr + e;
        // V: dv channels of this row, from K's row (latent) or V's.
        const KV_T* vr = v ? v + (((size_t)b * capacity + r) * kv_heads + hk) * dv : kr + voff;
        for (int j = 0; j < PER_LANE; j++) {
            int d0 = 4 * (lane + LANES * j);
            if (d0 < dv) {
                float4 v4 = kv_ld4(vr + d0);
                acc[j] = make_float4(acc[j].x * corr + e * v4.x, acc[j].y * corr + e * v4.y,
                                     acc[j].z * corr + e * v4.z, acc[j].w * corr + e * v4.w);
            }
        }
        mx = nmx;
    }
    const float inv = sum > 0.0f ? 1.0f / sum : 0.0f;
    for (int j = 0; j < PER_LANE; j++) {
        int d0 = 4 * (lane + LANES * j);
        if (d0 < dv)
            *reinterpret_cast<float4*>(out + row * dv + d0) =
                make_float4(acc[j].x * inv, acc[j].y * inv, acc[j].z * inv, acc[j].w * inv);
    }
    if (lane == 0) lse[row] = sum > 0.0f ? mx + logf(sum) : kt_neg_inf();
}

// mla_attend computes every query token of head blockIdx.x, sequence
// blockIdx.z.
__device__ __forceinline__ void mla_attend(const float* __restrict__ q, const KV_T* __restrict__ k,
                                           const KV_T* __restrict__ v, const int* __restrict__ seqlens,
                                           float* __restrict__ out, float* __restrict__ lse, int heads, int kv_heads,
                                           int capacity, int q_len, int dv, float scale) {
    for (int t = 0; t < q_len; t++)
        mla_row(q, k, v, seqlens, out, lse, heads, kv_heads, capacity, q_len, dv, scale, blockIdx.z, t);
}

// attn_mla reads a latent cache: V is the first dv channels of K's rows.
extern "C" __global__ void attn_mla(const float* __restrict__ q, const KV_T* __restrict__ k,
                                    const int* __restrict__ seqlens, float* __restrict__ out,
                                    float* __restrict__ lse, int heads, int kv_heads, int capacity, int q_len, int dv,
                                    float scale) {
    mla_attend(q, k, nullptr, seqlens, out, lse, heads, kv_heads, capacity, q_len, dv, scale);
}

// attn_mla_split reads K and a V buffer of its own, dv wide.
extern "C" __global__ void attn_mla_split(const float* __restrict__ q, const KV_T* __restrict__ k,
                                          const KV_T* __restrict__ v, const int* __restrict__ seqlens,
                                          float* __restrict__ out, float* __restrict__ lse, int heads, int kv_heads,
                                          int capacity, int q_len, int dv, float scale) {
    mla_attend(q, k, v, seqlens, out, lse, heads, kv_heads, capacity, q_len, dv, scale);
}
