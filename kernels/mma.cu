// mma.cu: the GQA-group kernel on tensor cores (mma.sync m16n8k16, f16
// operands, f32 accumulate). One block per (split, KV head, sequence)
// computes every query head of the group, reading each K/V row once.
//
// Mapping: grid (SPLITS, kv_heads, batch), block 32*WARPS. A warp takes
// tiles of 16 rows, NR tiles per step, all their K and V loads issued
// before the first mma; with PF = 1 the loads of its next step also go out
// before the mma work of the current one (register double buffering). The
// block's warps interleave their steps over the split and merge in shared
// memory at the end. Lane = (g, t) = (lane/4, lane%4) as in the PTX
// fragment layouts.
//
// The seed design (001) put the query heads in the M rows of S = Q.K^T and
// padded 16 - group of them with zeros. Here the product is transposed:
// S^T = K.Q^T with the 16 tile rows in M and the group's heads in N (8 per
// n-tile, GN n-tiles), and O^T = V^T.P^T with 16 dims per m-tile. Nothing
// is padded but heads group..8*GN-1, which halves the mma count and the
// accumulator registers of the seed layout at group 7 (32 f32 for O^T, not
// 64), and every operand comes straight from registers:
//   - A of S^T is K: thread (g,t) loads rows g and g+8 of the tile, 16
//     bytes at dims 32c+8t for c = 0..3 (64 contiguous bytes per row per
//     instruction). The dims are assigned to the k slots of the 8 k-steps by
//     a permutation (k-step 2c+e, slots 2t,2t+1 / 2t+8,2t+9 <- dims
//     32c+8t+4e + 0,1 / 2,3); q, the B operand, uses the same permutation,
//     so the dot products are unchanged.
//   - C of S^T holds, per thread, rows g and g+8 for heads 2t, 2t+1: the
//     per-head max is a max over g (3 xor shuffles), and that is where the
//     online softmax runs (base 2, one ex2 per score).
//   - B of O^T is P^T: the f16-packed weights of rows 0..7 and 8..15 are
//     one 8x8 matrix each; movmatrix.trans turns the C layout into exactly
//     the B layout (rows 2t,2t+1 of head g).
//   - A of O^T is V^T, whose register pairs must hold two rows of one dim,
//     while memory holds a row's dims together. Thread (g,t) loads rows
//     2t, 2t+1, 2t+8, 2t+9 at dims 8g..8g+7 and 64+8g..64+8g+7 (128
//     contiguous bytes per row per instruction) and pairs the rows with one
//     PRMT per register; m-tile mt then covers dims 8g+mt (M row g) and
//     64+8g+mt (M row g+8), and the output lands in that order.
//
// Numerics: tolerance class, and looser than the f32 kernels: q (times
// scale*log2 e) and the softmax weights P are rounded to f16 (relative
// 2^-11); K and V are f16 already; both products accumulate in f32, the
// running max and sums are f32, and the sum of weights adds the same
// f16-rounded weights that multiply V, so the normalisation matches the
// numerator. tools/kfront measures the error against a float64 reference.
//
// Dispatch (variants/builtin_frontier.go): f16 K/V only (KV_F16 = 1),
// HEAD_DIM == 128, group = heads/kv_heads <= 8*GN, WARPS*GN <= 8 (the
// merge area is static shared memory). The grid never depends on nkv: the
// split count in use follows nkv on the device (gq_range, MINROWS, chunks
// of whole 16-row tiles) and the other splits write the neutral slot.
//
// Tuning on the H200 (experiments/results/h200/NOTES-frontier.md): 8 warps
// (2 blocks of 125 registers per SM, so SPLITS = 64 at batch 1 is one wave
// of 256 blocks), PF = 0, no load hints; SPLITS 33 with MINROWS 128 at
// short contexts, 64 at long ones, 8 with MINROWS 1024 at batch 16.
#include "abi.cuh"
#include "gqa_block.cuh"

// CW = 1: the parallel combine of combine_wide.cuh (about three L2 round
// trips at any SPLITS); CW = 2: the same with the first accumulator loads
// issued together with the headers (one round trip fewer); CW = 0: the
// shared combine of combine.cuh (serial over SPLITS), kept for comparison.
#ifndef CW
#define CW 2
#endif
#if !CW && QLEN != 1
#error "mma: CW 0's combine (combine.cuh) merges one query token; QLEN > 1 needs CW 1 or 2"
#endif
#if CW
#define CW_EARLY (CW == 2)
#include "combine_wide.cuh"
#else
#include "combine.cuh"
#endif

// The per-split computation (tile loads, the two mma products, the
// online softmax, the block merge) is mma_core.cuh's, shared with the
// fused form in mma_fused.cu.
#include "mma_core.cuh"

// PDLEND (with PDL): where the block lets the combine launch, 0 at its
// start, 1 after its slots.
#ifndef PDLEND
#define PDLEND 0
#endif

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
                 const int* __restrict__ positions, float* __restrict__ partial, int heads, int kv_heads,
                 int capacity, float scale
                     MMA_TAIL_PARAMS) {
    mma_merge_area;
#if PDL && !PDLEND
    // Let a programmatic dependent (the combine) launch now: its blocks wait
    // for this grid's completion on the device, and their launch latency
    // hides behind this kernel instead of following it.
    asm volatile("griddepcontrol.launch_dependents;");
#endif
    mma_block(MMA_ARGS, sm_m, sm_l, sm_o);
#if PDL && PDLEND
    // PDLEND = 1: the dependent may launch once every block has stored its
    // slots. At 64 splits (two waves of partial blocks) launching it at the
    // start cost 0.3-1.3 us (h200-pdl.jsonl), the likely mechanism being
    // combine blocks resident in griddepcontrol.wait taking SM slots the
    // second wave needs; here none is resident before the last block ends.
    asm volatile("griddepcontrol.launch_dependents;");
#endif
}
