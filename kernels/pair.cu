// pair.cu: d2's arithmetic with pair lookahead.
//
// Mapping: as d2.cu: grid (SPLITS, heads, batch), block 32; lane l owns dims
// 4l .. 4l+3. The warp walks rows two at a time and keeps one pair in
// flight: the K and V loads of rows base+2 and base+3 are issued before the
// softmax chain of rows base and base+1 starts, so each pair's load latency
// hides behind the previous pair's chain instead of a window's.
//
// Numerics: bitwise twin of d2: same rows, same order, same per-row
// operations (kt_softmax_step / kt_accumulate); only load timing differs.
//
// Dispatch: HEAD_DIM % 4 == 0 and HEAD_DIM <= 128.
//
// Seed lesson (D2's negative results): a rolling lookahead of 2 rows keeps
// fewer loads in flight than d2's 4-row window (4 LDGs vs 8) and measured
// slower on the seeds' GPU; it is here to be re-measured, since the balance
// of latency and in-flight capacity differs on other GPUs.
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

    // ld loads row `row` of K or V for this lane, zeros past the split.
    auto ld = [&](const KV_T* base, int row) {
        return (live && row < r.hi) ? kv_ld4(base + (size_t)row * rstride) : kt_zero4();
    };

    float4 k0 = ld(kb, r.lo), v0 = ld(vb, r.lo), k1 = ld(kb, r.lo + 1), v1 = ld(vb, r.lo + 1);
    kt_state st = kt_state_init();
    for (int base = r.lo; base < r.hi; base += 2) {
        // The next pair goes out before this pair's chain.
        const float4 nk0 = ld(kb, base + 2), nv0 = ld(vb, base + 2);
        const float4 nk1 = ld(kb, base + 3), nv1 = ld(vb, base + 3);
        float corr, e;
        kt_softmax_step(st, kt_row_dot(q4, k0), scale, corr, e);
        if (live) kt_accumulate(st, corr, e, v0);
        if (base + 1 < r.hi) {  // warp-uniform
            kt_softmax_step(st, kt_row_dot(q4, k1), scale, corr, e);
            if (live) kt_accumulate(st, corr, e, v1);
        }
        k0 = nk0;
        v0 = nv0;
        k1 = nk1;
        v1 = nv1;
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
