// d2.cu: the D2 kernel, R4 with explicit K+V register staging.
//
// Mapping: as r4.cu: grid (SPLITS, heads, batch), block 32; lane l owns dims
// 4l .. 4l+3; the warp walks rows in windows of NR rows. The difference is
// only where loads issue: K AND V of the whole window are loaded into
// registers before the window's first softmax step, so 2*NR row loads go
// out back-to-back and their latency overlaps the serial shuffle/exp chain
// (of this window and the tail of the previous one).
//
// Numerics: bitwise twin of r4 (and of pair and cpasync): same rows, same
// order, same per-row operations, the row step being literally the same
// code (kt_softmax_step / kt_accumulate in abi.cuh). Only load placement
// differs, so partial and out are byte-identical at every point.
//
// Dispatch: HEAD_DIM % 4 == 0 and HEAD_DIM <= 128; idle lanes (d0 >=
// HEAD_DIM) load nothing and feed zeros to the butterfly.
//
// Seed lesson (D2): a comment claimed the compiler hoists the inline V loads
// of r4 above the softmax chain; the SASS showed it does not, and writing
// the hoist into the source cut the kernel by ~43% on the seeds' GPU. Check
// the SASS (cuobjdump -sass): the window's LDGs should cluster before the
// first SHFL.BFLY. NR = 8 was measured slower than 4 (in-flight loads and
// registers hit a cap), which is why NR is a define to sweep, not a constant.
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
        float4 k4[NR], v4[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) {
            const bool ok = live && j < nr;
            k4[j] = ok ? kv_ld4(kb + (size_t)(base + j) * rstride) : kt_zero4();
            v4[j] = ok ? kv_ld4(vb + (size_t)(base + j) * rstride) : kt_zero4();
        }
#pragma unroll
        for (int j = 0; j < NR; j++) {
            if (j >= nr) break;  // warp-uniform: every lane leaves together
            float corr, e;
            kt_softmax_step(st, kt_row_dot(q4, k4[j]), scale, corr, e);
            if (live) kt_accumulate(st, corr, e, v4[j]);
        }
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
