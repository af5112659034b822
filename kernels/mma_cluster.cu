// mma_cluster.cu: mma in one launch, the splits of each (KV head,
// sequence) merged inside a thread-block cluster. Launched with cluster
// dimensions (SPLITS, 1, 1) (the spec's `cluster: [SPLITS]`, with
// `cluster_nonportable: true` above 8), so the SPLITS blocks of one group
// are resident together and the cluster barrier is a barrier over exactly
// the blocks that must meet: no second launch, no counters.
//
// 1. Every block computes its split exactly as mma.cu does (mma_core.cuh)
//    and writes its partial slots, idle splits their neutral slot.
// 2. barrier.cluster arrive.release / wait.acquire: all slots of the group
//    are written and visible to every block of the cluster.
// 3. The group's group x HEAD_DIM outputs are cut into SPLITS slices, one
//    per block (by its rank, blockIdx.x): thread i of block r merges
//    output value r * per + i over all SPLITS slots, reading them through
//    L2 (ld.global.cg: the L1 of another SM may hold nothing of them, and
//    this one must not serve a stale line), and writes it. The merge is
//    combine_wide's arithmetic (max, expf weights, an idle split weighs 0,
//    S > 0 ? acc / S : 0) spread over the whole cluster instead of a
//    second launch, or one block as in mma_fused.cu.
//
// Against mma + combine: the combine's launch (or its programmatic
// overlap) and its three dependent L2 round trips become one barrier and
// one round trip (headers and accumulators load together). The price is
// parallelism: at most 16 splits per group, so at batch 1 on 28/4 only 64
// blocks run; whether 64 SMs with twice the loads in flight each (NR 2)
// stream as fast as 132 is what the measurement decides.
#include "abi.cuh"
#include "gqa_block.cuh"
#include "mma_core.cuh"

#if QLEN != 1
#error "mma_cluster: one query token per sequence (its merge slices the group's heads)"
#endif
#if !defined(CLUSTER_X) || CLUSTER_X != SPLITS || CLUSTER_Y != 1 || CLUSTER_Z != 1
#error "mma_cluster: launch with cluster: [SPLITS] (the spec's cluster key)"
#endif

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
                 const int* __restrict__ positions, float* __restrict__ partial, int heads, int kv_heads,
                 int capacity, float scale, float* __restrict__ out, unsigned int* __restrict__ scratch
                     MMA_TAIL_PARAMS) {
    mma_merge_area;

    mma_block(MMA_ARGS, sm_m, sm_l, sm_o);

    // Every thread's slot stores are released to the cluster and every
    // block's acquired: after the wait, the group's slots are all in L2.
    asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");

    const int sp = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    const int group = heads / kv_heads;
    const int h0 = hk * group;
    const int total = group * HEAD_DIM;
    const int per = (total + SPLITS - 1) / SPLITS;
    for (int idx = sp * per + (int)threadIdx.x; idx < min(total, (sp + 1) * per); idx += WARPS * 32) {
        const int i = idx / HEAD_DIM, d = idx % HEAD_DIM;
        float2 ml[SPLITS];
        float acc[SPLITS];
#pragma unroll
        for (int s = 0; s < SPLITS; s++) {
            const float* slot = kt_partial_slot(partial, b, s, h0 + i, heads);
            ml[s] = __ldcg(reinterpret_cast<const float2*>(slot));
            acc[s] = __ldcg(slot + 4 + d);
        }
        float gmx = kt_neg_inf();
#pragma unroll
        for (int s = 0; s < SPLITS; s++) gmx = fmaxf(gmx, ml[s].x);
        float S = 0.0f, o = 0.0f;
#pragma unroll
        for (int s = 0; s < SPLITS; s++) {
            const float w = ml[s].x == kt_neg_inf() ? 0.0f : expf(ml[s].x - gmx);
            S = fmaf(ml[s].y, w, S);
            o = fmaf(acc[s], w, o);
        }
        out[((size_t)b * heads + h0 + i) * HEAD_DIM + d] = S > 0.0f ? o / S : 0.0f;
    }
    (void)scratch;
}
