// r4.cu: the R4 lane-owns-dims split-KV partial kernel (V loaded inline).
//
// Mapping: one warp per (split, head, sequence) = grid (SPLITS, heads,
// batch), block 32. Lane l owns dims d0 = 4l .. 4l+3 of q, of every K/V row
// and of the accumulator, which is therefore one float4 register. The warp
// walks its split's rows in windows of NR rows: the window's K rows are
// staged into registers first, then each row's dot is the lane's 4-dim
// partial plus a 5-step xor butterfly, so the softmax state is warp-uniform.
// V is loaded inline, at its use inside the row loop.
//
// Numerics: tolerance class (against the float64 oracle). d2, pair and
// cpasync run the same row step (kt_softmax_step / kt_accumulate in
// abi.cuh) over the same rows in the same order, so they are byte-identical
// to this kernel for every NR.
//
// Dispatch: HEAD_DIM % 4 == 0 and HEAD_DIM <= 128 (32 lanes x 4 dims).
// Lanes with d0 >= HEAD_DIM stay in the butterfly with zeros: no divergent
// branch around a shuffle.
//
// Seed lesson (R4): an accumulator must be compile-time sized to live in
// registers, and a 16-byte load per lane per row coalesces the whole row.
// The inline V load is what D2 later measured as exposed latency: its issue
// point is its consume point, behind the shuffle/exp chain. This kernel
// keeps that shape on purpose, as the baseline d2 is judged against.
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
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + d0;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + d0;
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;

    kt_state st = kt_state_init();
    for (int base = r.lo; base < r.hi; base += NR) {
        const int nr = min(NR, r.hi - base);  // warp-uniform
        float4 k4[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) k4[j] = (live && j < nr) ? kv_ld4(kb + (size_t)(base + j) * rstride) : kt_zero4();
#pragma unroll
        for (int j = 0; j < NR; j++) {
            if (j >= nr) break;  // warp-uniform: every lane leaves together
            float corr, e;
            kt_softmax_step(st, kt_row_dot(q4, k4[j]), scale, corr, e);
            if (live) kt_accumulate(st, corr, e, kv_ld4(vb + (size_t)(base + j) * rstride));
        }
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
