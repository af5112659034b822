// longchunk.cu: a planted defect for ktune's gate check
// (experiments/defects.yaml). Each split scores its chunk into a shared
// buffer first and weighs V in a second pass, as a two-pass split kernel
// does; the buffer holds MAXCHUNK rows, sized for the chunks of the tuning
// it was written for, and a longer chunk is cut there: its rows past
// MAXCHUNK are never read. Every gate length of the spec (chunks of at
// most 52 rows at nkv 1641 over 32 splits) is right; nkv 32768 (1024-row
// chunks) drops half of every chunk. Expected gate: tolerance on the
// uniform rows tiled to the capacity (and at the point's own timed
// length).
//
// Mapping: the ABI default, one warp per (split, head, sequence); lane l
// owns dims 4l..4l+3 (HEAD_DIM <= 128); lane 0 writes the scores.
#include "abi.cuh"
#include "combine.cuh"

#define MAXCHUNK 512

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    __shared__ float sc[MAXCHUNK];
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31;
    const int d0 = lane * 4;
    const bool live = d0 < HEAD_DIM;
    const int hk = kt_kv_head(h, heads, kv_heads);
    const kt_range r = kt_split_range(positions, b, sp);
    const int hi = min(r.hi, r.lo + MAXCHUNK);  // the defect: the rest of a long chunk is dropped
    const float4 q4 = kt_load_q(q, b, h, heads, d0, live);
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + d0;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + d0;
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;
    float mx = kt_neg_inf();
    for (int row = r.lo; row < hi; row++) {
        const float4 k4 = live ? kv_ld4(kb + (size_t)row * rstride) : kt_zero4();
        const float s = __fmul_rn(kt_row_dot(q4, k4), scale);
        if (lane == 0) sc[row - r.lo] = s;
        mx = fmaxf(mx, s);
    }
    __syncwarp();
    kt_state st = kt_state_init();
    st.mx = mx;
    for (int row = r.lo; row < hi; row++) {
        const float4 v4 = live ? kv_ld4(vb + (size_t)row * rstride) : kt_zero4();
        const float e = expf(sc[row - r.lo] - mx);
        st.S += e;
        if (live) kt_accumulate(st, 1.0f, e, v4);
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
