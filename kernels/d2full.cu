// d2full.cu — D2 with its window loop split into unguarded full windows and
// one guarded tail window.
//
// Mapping: as d2 (lane owns 4 dims, d0 = lane·4; one warp per (split, head,
// sequence); NR-row windows with K and V staged into registers before the
// first softmax step).
//
// Numerics class: bitwise with d2 (and so with r4): the same rows in the same
// order through the same row step; only where the guards sit changes.
//
// Dispatch: HEAD_DIM % 4 == 0 and HEAD_DIM <= 128; block 32.
//
// Why: in d2 every staged load is guarded (`live && j < nr`). At
// HEAD_DIM = 128 the guard is a branch per row, and the f16→f32 conversions
// land inside it right after the row's loads, so the warp waits for each
// row's pair of loads before issuing the next pair: four memory round trips
// per 4-row window instead of one (H200 SASS; see
// experiments/results/h200/NOTES-d2-anchor.md). Full windows need no guard —
// every row exists — so here all 2·NR loads issue back to back and their
// conversions follow; only the last, partial window keeps the guards. This
// is the seeds' D2 lesson again one level down: loads "staged" in the source
// are not staged in the machine code until the SASS says so.
#include "abi.cuh"
#include "combine.cuh"

#ifndef NR
#define NR 4
#endif

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
    // Lanes past HEAD_DIM (head_dim < 128) read lane 0's dims instead of
    // going out of bounds, and contribute nothing: their q4 is zero and
    // their accumulator is never written.
    const int dl = live ? d0 : 0;
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + dl;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + dl;
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;

    kt_state st = kt_state_init();
    int base = r.lo;
    for (; base + NR <= r.hi; base += NR) {  // full windows: no guards
        float4 k4[NR], v4[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) {
            k4[j] = kv_ld4(kb + (size_t)(base + j) * rstride);
            v4[j] = kv_ld4(vb + (size_t)(base + j) * rstride);
        }
#pragma unroll
        for (int j = 0; j < NR; j++) {
            float corr, e;
            kt_softmax_step(st, kt_row_dot(q4, k4[j]), scale, corr, e);
            if (live) kt_accumulate(st, corr, e, v4[j]);
        }
    }
    if (base < r.hi) {  // the tail window, guarded as in d2
        const int nr = r.hi - base;  // warp-uniform, < NR
        float4 k4[NR], v4[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) {
            const bool ok = j < nr;
            k4[j] = ok ? kv_ld4(kb + (size_t)(base + j) * rstride) : kt_zero4();
            v4[j] = ok ? kv_ld4(vb + (size_t)(base + j) * rstride) : kt_zero4();
        }
#pragma unroll
        for (int j = 0; j < NR; j++) {
            if (j >= nr) break;  // warp-uniform
            float corr, e;
            kt_softmax_step(st, kt_row_dot(q4, k4[j]), scale, corr, e);
            if (live) kt_accumulate(st, corr, e, v4[j]);
        }
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
