// ftz.cu: a planted defect for ktune's gate check
// (experiments/defects.yaml). K and V are decoded from f16 with subnormals
// flushed to zero, as a hand-written bit conversion that handles only
// normal numbers would. Values below 2^-14 barely move uniform data.
// Expected gate: tolerance on the subnormal inputs (V made of subnormals:
// the output collapses to zero, NMSE 1).
//
// Mapping: the ABI default, one warp per (split, head, sequence); lane l
// owns dims 4l..4l+3 (HEAD_DIM <= 128), the seed row step of abi.cuh.
#include "abi.cuh"
#include "combine.cuh"

// ftz_h2f is kt_h2f with exponent-0 halves (zero and subnormals) as 0.
__device__ __forceinline__ float ftz_h2f(unsigned short h) { return (h & 0x7c00u) == 0 ? 0.0f : kt_h2f(h); }
__device__ __forceinline__ float4 ftz_ld4(const kt_half* p) {
    uint2 w = __ldg(reinterpret_cast<const uint2*>(p));
    return make_float4(ftz_h2f((unsigned short)(w.x & 0xffffu)), ftz_h2f((unsigned short)(w.x >> 16)),
                       ftz_h2f((unsigned short)(w.y & 0xffffu)), ftz_h2f((unsigned short)(w.y >> 16)));
}
__device__ __forceinline__ float4 ftz_ld4(const float* p) { return kv_ld4(p); }

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
        const float4 k4 = live ? ftz_ld4(kb + (size_t)row * rstride) : kt_zero4();
        const float4 v4 = live ? ftz_ld4(vb + (size_t)row * rstride) : kt_zero4();
        float corr, e;
        kt_softmax_step(st, kt_row_dot(q4, k4), scale, corr, e);
        if (live) kt_accumulate(st, corr, e, v4);
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
