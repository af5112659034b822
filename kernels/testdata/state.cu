// state.cu: a planted defect for ktune's gate check (experiments/defects.yaml).
// The kernel keeps the longest context it has seen in __device__ memory and
// walks that many rows: right on a freshly loaded module whose lengths only
// grow, wrong ever after (a shorter nkv reads stale rows past its end).
// Expected gate: fresh (a fresh module disagrees with the one that ran the
// gates), tolerance on an input set walked in descending order, and the
// replay gate against the oracle after the replay at the capacity.
//
// Mapping: the ABI default, one warp per (split, head, sequence); lane l
// owns dims 4l..4l+3 (HEAD_DIM <= 128), the seed row step of abi.cuh.
#include "abi.cuh"
#include "combine.cuh"

// The longest nkv seen, per sequence (batch <= 64).
__device__ int kt_longest[64];

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31;
    const int d0 = lane * 4;
    const bool live = d0 < HEAD_DIM;
    const int hk = kt_kv_head(h, heads, kv_heads);
    int nkv = positions[b] + 1;
    int seen = 0;
    if (lane == 0) seen = atomicMax(&kt_longest[b & 63], nkv);
    nkv = max(nkv, __shfl_sync(0xffffffffu, seen, 0));  // the defect
    const int chunk = (nkv + SPLITS - 1) / SPLITS;
    const int lo = sp * chunk, hi = min(nkv, lo + chunk);
    const float4 q4 = kt_load_q(q, b, h, heads, d0, live);
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + d0;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + d0;
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;
    kt_state st = kt_state_init();
    for (int row = lo; row < hi; row++) {
        const float4 k4 = live ? kv_ld4(kb + (size_t)row * rstride) : kt_zero4();
        const float4 v4 = live ? kv_ld4(vb + (size_t)row * rstride) : kt_zero4();
        float corr, e;
        kt_softmax_step(st, kt_row_dot(q4, k4), scale, corr, e);
        if (live) kt_accumulate(st, corr, e, v4);
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
