// race.cu: a planted defect for ktune's gate check
// (experiments/defects.yaml). Four warps share each split and merge their
// partial states with float atomicAdd into shared memory: the sum is right
// to rounding, but the order of the four adds, and so the last bits, is
// whatever order the warps reach the atomics in. A tolerance gate passes
// it; two launches at the same inputs need not agree byte for byte.
// Expected gate: determinism (the repeated launch on the uniform inputs),
// possibly fresh; whether a given run shows it is up to the scheduler.
//
// Mapping: block of 4 warps (block [128] in the spec) per (split, head,
// sequence); warp w walks rows lo+w, lo+w+4, ... with the seed row step,
// lane l owns dims 4l..4l+3 (HEAD_DIM <= 128). Warp 0 writes the slot.
#include "abi.cuh"
#include "combine.cuh"

#define WARPS 4

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    __shared__ float smx[WARPS];
    __shared__ float sS;
    __shared__ float sacc[HEAD_DIM];
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int d0 = lane * 4;
    const bool live = d0 < HEAD_DIM;
    const int hk = kt_kv_head(h, heads, kv_heads);
    const kt_range r = kt_split_range(positions, b, sp);
    const float4 q4 = kt_load_q(q, b, h, heads, d0, live);
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + d0;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + d0;
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;
    kt_state st = kt_state_init();
    for (int row = r.lo + warp; row < r.hi; row += WARPS) {
        const float4 k4 = live ? kv_ld4(kb + (size_t)row * rstride) : kt_zero4();
        const float4 v4 = live ? kv_ld4(vb + (size_t)row * rstride) : kt_zero4();
        float corr, e;
        kt_softmax_step(st, kt_row_dot(q4, k4), scale, corr, e);
        if (live) kt_accumulate(st, corr, e, v4);
    }
    for (int i = threadIdx.x; i < HEAD_DIM; i += blockDim.x) sacc[i] = 0.0f;
    if (threadIdx.x == 0) sS = 0.0f;
    if (lane == 0) smx[warp] = st.mx;
    __syncthreads();
    float m = smx[0];
    for (int w = 1; w < WARPS; w++) m = fmaxf(m, smx[w]);
    // A warp that saw no row (or an idle split) weighs 0.
    const float wt = st.mx == kt_neg_inf() ? 0.0f : expf(st.mx - m);
    if (lane == 0) atomicAdd(&sS, st.S * wt);
    if (live) {
        atomicAdd(&sacc[d0 + 0], st.oc.x * wt);  // the defect: the order of these
        atomicAdd(&sacc[d0 + 1], st.oc.y * wt);
        atomicAdd(&sacc[d0 + 2], st.oc.z * wt);
        atomicAdd(&sacc[d0 + 3], st.oc.w * wt);
    }
    __syncthreads();
    if (warp == 0) {
        float* dst = kt_partial_slot(partial, b, sp, h, heads);
        if (lane == 0) {
            dst[0] = m;
            dst[1] = sS;
            dst[2] = 0.0f;
            dst[3] = 0.0f;
        }
        if (live) *reinterpret_cast<float4*>(dst + 4 + d0) = make_float4(sacc[d0], sacc[d0 + 1], sacc[d0 + 2], sacc[d0 + 3]);
    }
}
