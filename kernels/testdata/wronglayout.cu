// wronglayout.cu: runs cleanly but writes the partial accumulator at
// p[2 + d] instead of p[4 + d] (the layout before the ABI's 16-byte
// alignment), for the bad input catalogue: nothing faults, and the gates
// must catch it (the written check finds p[4+126], p[4+127] never written;
// the oracle finds the output shifted).
//
// Mapping: as d2, one row at a time.
#include "abi.cuh"
#include "combine.cuh"

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
    kt_state st = kt_state_init();
    for (int row = r.lo; row < r.hi; row++) {
        const float4 k4 = live ? kv_ld4(kb + (size_t)row * rstride) : kt_zero4();
        const float4 v4 = live ? kv_ld4(vb + (size_t)row * rstride) : kt_zero4();
        float corr, e;
        kt_softmax_step(st, kt_row_dot(q4, k4), scale, corr, e);
        if (live) kt_accumulate(st, corr, e, v4);
    }
    float* dst = kt_partial_slot(partial, b, sp, h, heads);
    if (lane == 0) {
        dst[0] = st.mx;
        dst[1] = st.S;
    }
    if (live) {
        dst[2 + d0] = st.oc.x;
        dst[3 + d0] = st.oc.y;
        dst[4 + d0] = st.oc.z;
        dst[5 + d0] = st.oc.w;
    }
}
