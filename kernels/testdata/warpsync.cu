// warpsync.cu: a planted defect for ktune's gate check
// (experiments/defects.yaml). The row's dot product is reduced through
// shared memory in the pre-Volta warp-synchronous style: each lane stores
// its partial, then reads its butterfly partner's, with volatile accesses
// and no __syncwarp between the store and the load, nor before the next
// step's store overwrites a slot the partner may still read. It assumes
// the warp's 32 lanes run in step; since Volta's independent thread
// scheduling nothing promises that, and the result is the scheduler's
// luck. A converged warp issues the store before the load, so on today's
// hardware the sums come out right, and equal to the shuffle butterfly's
// bits: every gate that compares results passes it.
// Expected gate: sanitizer, racecheck, which reports the lanes' hazards at
// warning level ("Warning: Race reported between ..."); nothing without
// --sanitize=racecheck.
//
// Mapping: the ABI default, one warp per (split, head, sequence); lane l
// owns dims 4l..4l+3 (HEAD_DIM <= 128), the seed row step of abi.cuh.
#include "abi.cuh"
#include "combine.cuh"

// warp_dot is kt_row_dot's butterfly through shared memory: lane l adds
// the partial of lane l ^ off, five times.
__device__ __forceinline__ float warp_dot(volatile float* sd, int lane, float4 q4, float4 k4) {
    float d = fmaf(q4.w, k4.w, fmaf(q4.z, k4.z, fmaf(q4.y, k4.y, q4.x * k4.x)));
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) {
        sd[lane] = d;           // the defect: no __syncwarp() after this store
        d += sd[lane ^ off];    // nor after this load
    }
    return d;
}

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    __shared__ float sd[32];
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
        kt_softmax_step(st, warp_dot(sd, lane, q4, k4), scale, corr, e);
        if (live) kt_accumulate(st, corr, e, v4);
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
