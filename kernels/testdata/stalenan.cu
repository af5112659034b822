// stalenan.cu: a planted defect for ktune's gate check
// (experiments/defects.yaml). Each split walks its chunk in tiles of 16
// rows and loads the last tile whole, masking the rows past its end by a
// score of -inf, so their weight is exp(-inf) = 0 — and then adds 0 · v.
// On finite memory that adds exactly nothing; on a stale cache row holding
// NaN or Inf it adds NaN (0 · Inf = NaN too). The rows past an inner
// split's end are the next chunk's, finite: only the context's end
// matters. Expected gate: stale (the outputs are NaN where the launch over
// the finite fill was right).
//
// Mapping: the ABI default, one warp per (split, head, sequence); lane l
// owns dims 4l..4l+3 (HEAD_DIM <= 128), the seed row step of abi.cuh.
#include "abi.cuh"
#include "combine.cuh"

#define TILE 16

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31;
    const int d0 = lane * 4;
    const bool live = d0 < HEAD_DIM;
    const int hk = kt_kv_head(h, heads, kv_heads);
    const kt_range r = kt_split_range(positions, b, sp);
    const float4 q4 = kt_load_q(q, b, h, heads, d0, live);
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + d0;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + d0;
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;
    // The last tile is loaded whole (within the capacity).
    const int end = r.lo < r.hi ? min(capacity, r.lo + (r.hi - r.lo + TILE - 1) / TILE * TILE) : r.hi;
    kt_state st = kt_state_init();
    for (int row = r.lo; row < end; row++) {
        const float4 k4 = live ? kv_ld4(kb + (size_t)row * rstride) : kt_zero4();
        const float4 v4 = live ? kv_ld4(vb + (size_t)row * rstride) : kt_zero4();
        const float dot = kt_row_dot(q4, k4);
        float corr, e;
        kt_softmax_step(st, row < r.hi ? dot : kt_neg_inf(), scale, corr, e);
        if (live) kt_accumulate(st, corr, e, v4);  // the defect: 0 * v
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
