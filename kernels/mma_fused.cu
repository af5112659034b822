// mma_fused.cu: mma.cu in one launch. Each block computes its split
// exactly as mma.cu does (mma_core.cuh) and writes its partial slots; the
// last block to finish for a (KV head, sequence) then merges that group's
// live splits and writes out. No attn_combine is launched (kernels/ABI.md,
// "Fused kernels").
//
// Why: on the H200 the partial streams K/V at the read ceiling, and the
// separate combine still cost ~4.4 us at batch 1 and ~8.7 us at batch 16:
// its launch and three dependent L2 round trips
// (experiments/results/h200/FRONTIER.md). Here the merge follows the last
// partial store inside the same grid: no second launch, no launch gap.
//
// Mapping: grid (SPLITS, kv_heads, batch), block 32*WARPS, as mma.cu. After
// its slots, every thread fences its stores, and thread 0 counts the block
// in with an atomicAdd on scratch[b*kv_heads + hk]; the block that sees
// SPLITS - 1 is the last one of its group, re-arms the counter to 0 (so
// the next launch and every replay of a captured graph find it zero) and
// merges:
//   1. warp w takes heads w, w + WARPS, ... of the group; lane j loads the
//      (max, sum) headers of splits j + 32c (all in flight at once) and the
//      warp reduces the max, the number of live splits and the weighted
//      sum; the weights go to shared memory (the merge area mma_block has
//      finished with). The first MF_U accumulator loads of each thread go
//      out before the headers, as combine_wide's CW_EARLY.
//   2. thread (i, l) takes head i, dims 4l .. 4l+3 and folds the live
//      splits' accumulators, MF_U 16-byte loads in flight, then writes out.
// The slots of the other blocks are read with ld.global.cg (L2): their
// stores are ordered before the count by the writers' __threadfence, and
// the count before these loads by the last block's.
//
// Numerics: tolerance class, as mma. The merge is combine_wide.cuh's at
// CW = 2 operation for operation, in the same order: the maximum, the
// weights expf(m - gmax) (0 for an idle split), the per-thread products
// and the 5-step xor butterfly of the 4 warps of 32 that combine_wide uses
// for the sum of weights, and for the accumulator the 4 chains of splits
// sp = c mod 4 folded by fmaf in increasing sp and added chain 0 + 1 + 2 +
// 3. So out equals mma's (CW 2) byte for byte whenever SPLITS <= 64; above,
// combine_wide's padded loop can turn a -0 accumulator into +0, the one
// difference. tools/kfront compares the two.
//
// Measured on the H200 (tools/kfront/results/fused.csv): correct and
// byte-identical to mma at every gate length, but faster only with many
// small groups and few splits (batch 16, SPLITS 8, 4 warps: -1 to -4 us
// cold); with 33-64 live splits per group it is 4-6 us slower at batch 1
// and up to 34 us at batch 16, because one block per group does the whole
// merge after the group's last split (the combine spreads it over a block
// per query head). 128 registers (mma: 125), 8-24 bytes of local memory
// in two of the four tunings.
//
// SPLITS = 1 is the one-split form: one block per (KV head, sequence)
// streams the whole context and writes out itself, with no count and no
// merge (the way cuDNN runs decode at batch 16: 128 blocks of 4 warps for
// 16 sequences x 8 KV heads, one launch; experiments/results/h200/FRONTIER.md).
//
// Dispatch (variants/builtin_frontier.go): as mma (f16/bf16/fp8 K/V,
// group <= 8*GN, the merge area in static shared memory), HEAD_DIM 128
// unless SPLITS = 1 (then mma's 64, 128 or 256), plus SPLITS <= 128*WARPS
// so the weights fit the merge area, and the host's zeroed scratch of
// batch*kv_heads counters.
#include "mma_core.cuh"

// MF_U is the number of 16-byte accumulator loads a merging thread keeps in
// flight (a multiple of 4: split sp folds into chain sp mod 4, which the
// unrolled loop must know at compile time to keep the chains in registers).
#define MF_U 16
// MF_CP is combine_wide's CW_PER: headers per thread of its 128-thread block.
#define MF_CP ((SPLITS + HEAD_DIM - 1) / HEAD_DIM)

#if HEAD_DIM != 128 && SPLITS != 1
#error "mma_fused: HEAD_DIM must be 128 (its merge gives each lane 4 of 128 dims), or SPLITS 1 (no merge)"
#endif
#if SPLITS > HEAD_DIM * WROWS
#error "mma_fused: SPLITS must be <= 128*WARPS/WN (the merge's weights live in the merge area)"
#endif

__device__ __forceinline__ void mf_fold(float4& a, const float4& x, float w) {
    a.x = fmaf(x.x, w, a.x);
    a.y = fmaf(x.y, w, a.y);
    a.z = fmaf(x.z, w, a.z);
    a.w = fmaf(x.w, w, a.w);
}

// mf_acc is the accumulator (dims 4l .. 4l+3) of split sp, head h.
__device__ __forceinline__ float4 mf_acc(const float* partial, int b, int sp, int h, int heads, int l) {
    return __ldcg(reinterpret_cast<const float4*>(kt_partial_slot(partial, b, sp, h, heads) + 4 + 4 * l));
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
                 const int* __restrict__ positions, float* __restrict__ partial, int heads, int kv_heads,
                 int capacity, float scale, float* __restrict__ out, unsigned int* __restrict__ scratch
                     MMA_TAIL_PARAMS) {
    mma_merge_area;
    __shared__ float mf_s[GMAX];
    __shared__ int mf_n[GMAX];
    __shared__ int mf_last;

    mma_block(MMA_ARGS, sm_m, sm_l, sm_o);

#if SPLITS == 1
    // One split: the block is its group's only one and holds the whole
    // softmax state, so it normalises its own slots into out — no count,
    // no merge, any HEAD_DIM. Thread idx reads back the accumulator it
    // wrote in gq_merge_store (same idx -> (head, dim) mapping) and the sum
    // the head's d = 0 thread wrote, visible after the barrier. The result
    // is combine_wide's at one split (weight expf(0) = 1, S = L, o / S,
    // 0 when S = 0) but for the sign of a zero.
    __syncthreads();
    {
        const int b = blockIdx.z, group = heads / kv_heads, h0 = blockIdx.y * group;
        for (int idx = threadIdx.x; idx < QLEN * group * HEAD_DIM; idx += WARPS * 32) {
            const int h = gq_slot_head<QLEN>(idx / HEAD_DIM, h0, group, heads), d = idx % HEAD_DIM;
            const float* slot = kt_partial_slot(partial, b, 0, h, QLEN * heads);
            const float L = slot[1];
            out[((size_t)b * QLEN * heads + h) * HEAD_DIM + d] = L > 0.0f ? slot[4 + d] / L : 0.0f;
        }
    }
#else
    const unsigned full = 0xffffffffu;
    const int hk = blockIdx.y, b = blockIdx.z;
    const int group = heads / kv_heads;
    const int h0 = hk * group;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    // The merge runs over the group's columns, QLEN tokens of group heads
    // each; slot and out rows are those of QLEN*heads heads (mma_core.cuh).
    const int cols = QLEN * group, rows = QLEN * heads;

    // Arrival. Each thread's slot stores reach the device scope before the
    // barrier, so thread 0's count covers the whole block's slots.
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned int* ctr = scratch + (size_t)b * kv_heads + hk;
        const bool last = atomicAdd(ctr, 1u) == gridDim.x - 1;
        // Every block of the group has counted itself in: no other access
        // to this counter remains in this launch.
        if (last) *ctr = 0u;
        mf_last = last;
    }
    __syncthreads();
    if (!mf_last) return;  // block-uniform
    __threadfence();       // the other blocks' slots are read after the count

    const int items = cols * 32;  // (column, 4-dim quad)
    const int it0 = threadIdx.x;
    // This thread's first MF_U accumulators, issued before the headers are
    // known (slots past the last live split hold the neutral slot and are
    // loaded for nothing).
    float4 x0[MF_U];
#pragma unroll
    for (int u = 0; u < MF_U; u++)
        x0[u] = (it0 < items && u < SPLITS) ? mf_acc(partial, b, u, gq_slot_head<QLEN>(it0 >> 5, h0, group, heads), rows, it0 & 31) : kt_zero4();

    // 1. Headers, one warp per head. Lane j plays thread 32c + j of each of
    // combine_wide's 4 warps c, so the sums below add in its order.
    float* mf_w = &sm_o[0][0][0];  // [GMAX][SPLITS]; the block merge has read sm_o
    for (int i = warp; i < cols; i += WARPS) {
        const int h = gq_slot_head<QLEN>(i, h0, group, heads);
        float2 ml[4][MF_CP];
        float mx = kt_neg_inf();
        int last = 0;
#pragma unroll
        for (int c = 0; c < 4; c++) {
#pragma unroll
            for (int e = 0; e < MF_CP; e++) {
                const int sp = 32 * c + lane + HEAD_DIM * e;
                ml[c][e] = make_float2(kt_neg_inf(), 0.0f);
                if (sp < SPLITS) ml[c][e] = __ldcg(reinterpret_cast<const float2*>(kt_partial_slot(partial, b, sp, h, rows)));
            }
        }
#pragma unroll
        for (int c = 0; c < 4; c++) {
#pragma unroll
            for (int e = 0; e < MF_CP; e++) {
                mx = fmaxf(mx, ml[c][e].x);
                if (ml[c][e].x != kt_neg_inf()) last = max(last, 32 * c + lane + HEAD_DIM * e + 1);
            }
        }
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            mx = fmaxf(mx, __shfl_xor_sync(full, mx, o));
            last = max(last, __shfl_xor_sync(full, last, o));
        }
        float s[4];
#pragma unroll
        for (int c = 0; c < 4; c++) {
            s[c] = 0.0f;
#pragma unroll
            for (int e = 0; e < MF_CP; e++) {
                const int sp = 32 * c + lane + HEAD_DIM * e;
                if (sp < SPLITS) {
                    const float w = ml[c][e].x == kt_neg_inf() ? 0.0f : expf(ml[c][e].x - mx);
                    mf_w[i * SPLITS + sp] = w;
                    s[c] = fmaf(ml[c][e].y, w, s[c]);
                }
            }
#pragma unroll
            for (int o = 16; o > 0; o >>= 1) s[c] += __shfl_xor_sync(full, s[c], o);
        }
        if (lane == 0) {
            float S = s[0];
            S += s[1];
            S += s[2];
            S += s[3];
            mf_s[i] = S;
            mf_n[i] = last;
        }
    }
    __syncthreads();

    // 2. Accumulators of the live splits: chain c holds splits sp = c mod 4.
    for (int it = it0; it < items; it += WARPS * 32) {
        const int i = it >> 5, l = it & 31, h = gq_slot_head<QLEN>(i, h0, group, heads);
        const int n = mf_n[i];
        const float* w = mf_w + i * SPLITS;
        if (it != it0) {
#pragma unroll
            for (int u = 0; u < MF_U; u++) x0[u] = u < n ? mf_acc(partial, b, u, h, rows, l) : kt_zero4();
        }
        float4 a[4] = {kt_zero4(), kt_zero4(), kt_zero4(), kt_zero4()};
#pragma unroll
        for (int u = 0; u < MF_U; u++)
            if (u < n) mf_fold(a[u & 3], x0[u], w[u]);
        for (int s0 = MF_U; s0 < n; s0 += MF_U) {
            float4 x[MF_U];
#pragma unroll
            for (int u = 0; u < MF_U; u++) x[u] = s0 + u < n ? mf_acc(partial, b, s0 + u, h, rows, l) : kt_zero4();
#pragma unroll
            for (int u = 0; u < MF_U; u++)
                if (s0 + u < n) mf_fold(a[u & 3], x[u], w[s0 + u]);
        }
        const float S = mf_s[i];
        float4 o = a[0];
#pragma unroll
        for (int c = 1; c < 4; c++) {
            o.x += a[c].x;
            o.y += a[c].y;
            o.z += a[c].z;
            o.w += a[c].w;
        }
        const float4 r = S > 0.0f ? make_float4(o.x / S, o.y / S, o.z / S, o.w / S) : kt_zero4();
        *reinterpret_cast<float4*>(out + ((size_t)b * rows + h) * HEAD_DIM + 4 * l) = r;
    }
#endif
}
