// mma_fusedw.cu: mma.cu in one launch, the merge shared by the group's
// blocks. Each block computes its split exactly as mma.cu does
// (mma_core.cuh) and writes its partial slots; then the blocks of a (KV
// head, sequence) that are still there once every split is in take the
// group's merge between them, one query head (column) at a time, and
// write out. No attn_combine is launched (kernels/ABI.md, "Fused kernels").
//
// Why: mma_fused.cu puts the whole merge of a group on its last block, 224
// threads folding 33-64 splits of 7 heads, four L2 round trips one after
// another, and loses 4-6 us to the two-launch form at batch 1
// (experiments/results/h200/FRONTIER.md), where there are only 4 groups.
// The combine kernel spreads the same merge over 28 blocks; here the
// group's own blocks do, without the second launch: each column's merge
// is one L2 round trip (its headers and every accumulator it needs in
// flight together) on a block of its own.
//
// Protocol: one 32-bit counter per group (scratch[b*kv_heads + hk], zero
// between launches), four 8-bit fields:
//   started  (bits 0-7)   each block adds 1 as it starts;
//   arrived  (bits 8-15)  each block adds 1 after its slots are stored
//                         and fenced;
//   claimed  (bits 16-23) a merging block adds 1 to take the next column;
//   departed (bits 24-31) each block adds 1 after its last access.
// At arrival a block reads the counter (the atomic's old value). The last
// to arrive merges. Another block merges too, once every split is in, but
// only if every block of its group had started when it arrived: then all
// of them are resident or done and reach their arrival without waiting on
// anyone, so its wait ends (a block never waits for a block that may not
// be scheduled: no deadlock, whatever the grid and the device). The
// merging blocks claim columns until none is left; the last arriver keeps
// claiming until then, so every column is merged exactly once even when
// nobody helps. The block whose departure makes the count SPLITS resets
// the counter to 0 (nothing touches it after), so the next launch and
// every replay of a captured graph find it zero.
//
// Fields of 8 bits: SPLITS <= 128, and claims <= columns + SPLITS <= 64 +
// 128 < 256.
//
// Merge of column i (one query head of one token) by a block of NT =
// 32*WARPS threads: thread (w, l) = (warp, lane) takes dims 4l .. 4l+3 of
// splits w, w + WARPS, ..., all MW_U loads in flight with the headers
// (thread t loads the header of split t), then block max and sum, the
// weights expf(m - max) (0 for an idle split) in shared memory, each
// thread folds its splits, the WARPS partial sums meet in shared memory
// and thread d < HEAD_DIM writes dim d.
//
// Numerics: tolerance class, as mma; the sums over splits run in another
// order than combine_wide's, so out is not byte-identical to mma's. The
// result does not depend on which block merges a column (the same
// operations in the same order), so a launch is deterministic.
//
// Dispatch (variants/builtin_frontier.go): as mmaf, SPLITS 2..128,
// HEAD_DIM 128, WARPS >= 4.
#include "mma_core.cuh"

#if SPLITS < 2 || SPLITS > 128
#error "mma_fusedw: SPLITS must be 2 to 128 (8-bit fields of the group's counter; one split needs no merge: mmaf)"
#endif
#if HEAD_DIM != 128 || WARPS < 4
#error "mma_fusedw: HEAD_DIM 128 (a lane holds 4 of 128 dims) and WARPS >= 4 (the last reduction takes one thread per dim)"
#endif

// MWW 0: only the last block to arrive merges (every column in turn), as
// mma_fused.cu but each column in one round trip: the measurement that
// tells the work sharing from the merge's own form.
#ifndef MWW
#define MWW 1
#endif

#define MW_NT (WARPS * 32)
// MW_U: splits per thread, all loaded at once (split w + WARPS*u).
#define MW_U ((SPLITS + WARPS - 1) / WARPS)
// MW_H: headers per thread (split t + MW_NT*c).
#define MW_H ((SPLITS + MW_NT - 1) / MW_NT)
#define MW_ARRIVED(x) (((x) >> 8) & 0xffu)
#define MW_CLAIMED(x) (((x) >> 16) & 0xffu)
#define MW_DEPARTED(x) ((x) >> 24)

__device__ __forceinline__ unsigned mw_load(const unsigned* p) {
    unsigned v;
    asm volatile("ld.volatile.global.u32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// mw_column merges column i of the group (slot and out row h) from the
// SPLITS slots. Called by every thread of the block; sw, red and sacc are
// the block's (the merge area, which mma_block has finished with).
__device__ __forceinline__ void mw_column(const float* __restrict__ partial, float* __restrict__ out, int b, int h,
                                          int rows, float* sw, float* red, float4* sacc) {
    const int tid = threadIdx.x, w = tid >> 5, l = tid & 31;
    // Every load of the column in flight at once: the accumulators of this
    // thread's splits (idle ones hold zeros and weigh 0) and the headers.
    float4 x[MW_U];
#pragma unroll
    for (int u = 0; u < MW_U; u++) {
        const int sp = w + WARPS * u;
        x[u] = sp < SPLITS ? __ldcg(reinterpret_cast<const float4*>(kt_partial_slot(partial, b, sp, h, rows) + 4 + 4 * l))
                           : kt_zero4();
    }
    float2 ml[MW_H];
#pragma unroll
    for (int c = 0; c < MW_H; c++) {
        const int sp = tid + MW_NT * c;
        ml[c] = make_float2(kt_neg_inf(), 0.0f);
        if (sp < SPLITS) ml[c] = __ldcg(reinterpret_cast<const float2*>(kt_partial_slot(partial, b, sp, h, rows)));
    }
    float mx = kt_neg_inf();
#pragma unroll
    for (int c = 0; c < MW_H; c++) mx = fmaxf(mx, ml[c].x);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    if (l == 0) red[w] = mx;
    __syncthreads();
    mx = red[0];
#pragma unroll
    for (int i = 1; i < WARPS; i++) mx = fmaxf(mx, red[i]);
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < MW_H; c++) {
        const int sp = tid + MW_NT * c;
        if (sp < SPLITS) {
            const float wt = ml[c].x == kt_neg_inf() ? 0.0f : expf(ml[c].x - mx);
            sw[sp] = wt;
            s = fmaf(ml[c].y, wt, s);
        }
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    __syncthreads();  // every thread has read red's maxima; sw is complete
    if (l == 0) red[w] = s;
    float4 a = kt_zero4();
#pragma unroll
    for (int u = 0; u < MW_U; u++) {
        const int sp = w + WARPS * u;
        if (sp < SPLITS) {
            const float wt = sw[sp];
            a.x = fmaf(x[u].x, wt, a.x);
            a.y = fmaf(x[u].y, wt, a.y);
            a.z = fmaf(x[u].z, wt, a.z);
            a.w = fmaf(x[u].w, wt, a.w);
        }
    }
    sacc[w * 32 + l] = a;
    __syncthreads();
    if (tid < HEAD_DIM) {
        float S = red[0];
#pragma unroll
        for (int i = 1; i < WARPS; i++) S += red[i];
        const float* sa = reinterpret_cast<const float*>(sacc);
        float o = sa[tid];
#pragma unroll
        for (int i = 1; i < WARPS; i++) o += sa[i * HEAD_DIM + tid];
        out[((size_t)b * rows + h) * HEAD_DIM + tid] = S > 0.0f ? o / S : 0.0f;
    }
    __syncthreads();  // red, sw and sacc are free for the next column
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
                 const int* __restrict__ positions, float* __restrict__ partial, int heads, int kv_heads,
                 int capacity, float scale, float* __restrict__ out, unsigned int* __restrict__ scratch
                     MMA_TAIL_PARAMS) {
    mma_merge_area;
    __shared__ unsigned mw_state;
    __shared__ int mw_col;

    const int hk = blockIdx.y, b = blockIdx.z;
    unsigned* ctr = scratch + (size_t)b * kv_heads + hk;
    if (threadIdx.x == 0) atomicAdd(ctr, 1u);  // started

    mma_block(MMA_ARGS, sm_m, sm_l, sm_o);

    const int group = heads / kv_heads, h0 = hk * group;
    const int cols = QLEN * group, rows = QLEN * heads;

    // Arrival: every thread's slot stores reach the device scope before
    // the barrier, so thread 0's count covers the block's slots.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        const unsigned old = atomicAdd(ctr, 1u << 8);
        const bool last = MW_ARRIVED(old) == SPLITS - 1;
        const bool all_started = (old & 0xffu) == SPLITS;
        unsigned merge = last;
        if (MWW && !last && all_started) {
            // Every block of the group is resident or done: wait for the
            // last arrival.
            while (MW_ARRIVED(mw_load(ctr)) < SPLITS) __nanosleep(32);
            merge = 1;
        }
        mw_state = merge;
    }
    __syncthreads();
    if (mw_state) {
        __threadfence();  // the other blocks' slots are read after their count
        float* sw = &sm_o[0][0][0];               // [SPLITS]
        float* red = sw + 128;                    // [WARPS]
        float4* sacc = reinterpret_cast<float4*>(sw + 256);  // [WARPS*32]
        for (;;) {
            if (threadIdx.x == 0) mw_col = (int)MW_CLAIMED(atomicAdd(ctr, 1u << 16));
            __syncthreads();
            const int i = mw_col;
            __syncthreads();  // every thread has read mw_col
            if (i >= cols) break;  // block-uniform
            mw_column(partial, out, b, gq_slot_head<QLEN>(i, h0, group, heads), rows, sw, red, sacc);
        }
    }
    // Departure: this block's last access to the counter.
    if (threadIdx.x == 0) {
        const unsigned old = atomicAdd(ctr, 1u << 24);
        if (MW_DEPARTED(old) == SPLITS - 1) atomicExch(ctr, 0u);
    }
}
