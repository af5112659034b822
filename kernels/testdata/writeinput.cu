// writeinput.cu: a planted defect for ktune's gate check
// (experiments/defects.yaml). The split that holds the newest row writes
// that row of K back after reading it, as an in-place rotary or
// requantisation step would: here it toggles the low bit of the first
// element of each 4-dim group. The launch that does it reads the row
// before writing it, so its own output is right; an engine's cache is not.
// Expected gate: readonly (buffer k, the newest row of sequence 0).
//
// Mapping: the ABI default, one warp per (split, head, sequence); lane l
// owns dims 4l..4l+3 (HEAD_DIM <= 128), the seed row step of abi.cuh. The
// first query head of each KV head's group does the write.
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
    const int nkv = positions[b] + 1;
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
    if (live && r.lo < nkv && nkv <= r.hi && h % (heads / kv_heads) == 0) {
        unsigned char* p = (unsigned char*)(kb + (size_t)(nkv - 1) * rstride);  // the defect
        p[0] ^= 1;
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
