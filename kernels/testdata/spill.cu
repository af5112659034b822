// spill.cu: a kernel that spills registers to local memory, for ktune
// check's budgets (no_spills: true fails it, exit 3) and the sweep's
// over_budget status. Each thread keeps ACC accumulators live across its
// loop over the KV rows, while __launch_bounds__(128, 16) (16 blocks of
// 128 threads resident per SM: 65536 / 2048) caps ptxas at 32 registers a
// thread: what does not fit goes to the stack frame. The launch's block
// of 32 is within the bound. Its
// output is not attention (an idle split's header only, as regs.cu):
// the gates fail any point that runs.
//
// Mapping: one warp per (split, head, sequence); lane l folds rows
// l, l+32, … of its split into ACC running sums.
#include "abi.cuh"
#include "combine.cuh"

#ifndef ACC
#define ACC 64
#endif
extern "C" __global__ void __launch_bounds__(128, 16)
    attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
                 const int* __restrict__ positions, float* __restrict__ partial, int heads, int kv_heads,
                 int capacity, float scale) {
    float acc[ACC];
#pragma unroll
    for (int i = 0; i < ACC; i++) {
        acc[i] = q[i % HEAD_DIM];
    }
    const int rows = positions[blockIdx.z];
    for (int r = threadIdx.x; r < rows; r += 32) {
        const KV_T* row = k + (size_t)r * HEAD_DIM;
#pragma unroll
        for (int i = 0; i < ACC; i++) {
            acc[i] = acc[i] * scale + kv_ld4(row + (4 * i) % HEAD_DIM).x * acc[(i + 1) % ACC];
        }
    }
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < ACC; i++) {
        sum += acc[i];
    }
    float* slot = kt_partial_slot(partial, blockIdx.z, blockIdx.x, blockIdx.y, heads);
    if (threadIdx.x < 4) {
        slot[threadIdx.x] = threadIdx.x == 0 ? kt_neg_inf() : 0.0f * sum;
    }
}
