// nkvgrid.cu: a kernel that is correct at every nkv when launched fresh but
// unsafe under CUDA-graph replay, because its grid is computed from nkv on
// the host (experiments/faults.yaml gives it grid [cdiv(nkv, 256), heads,
// batch]). A graph captured at one nkv keeps that grid; replayed after nkv
// grew, the rows past the captured grid are never read. Expected record:
// gate_failed on the replay gate, with the tolerance gates passing.
//
// Mapping: as d2 (lane owns 4 dims), but block x owns rows
// [256·x, 256·x + 256) instead of a SPLITS-th of nkv; SPLITS only sizes the
// partial buffer (it must cover cdiv(capacity, 256)). Block (0, h, b) also
// writes the neutral partials of the slots no block of this launch owns.
#include "abi.cuh"
#include "combine.cuh"

#define ROWS 256

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31;
    const int d0 = lane * 4;
    const bool live = d0 < HEAD_DIM;
    const int hk = kt_kv_head(h, heads, kv_heads);
    const int nkv = positions[b] + 1;
    const int lo = sp * ROWS, hi = min(nkv, lo + ROWS);
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
    if (sp == 0) {
        const kt_state idle = kt_state_init();
        for (int s = gridDim.x; s < SPLITS; s++) {
            kt_write_partial(kt_partial_slot(partial, b, s, h, heads), idle, lane, live);
        }
    }
}
