// trap.cu: a fault kernel for ktune's fault-isolation check
// (experiments/faults.yaml). Every block executes __trap(), which aborts
// the launch with CUDA_ERROR_LAUNCH_FAILED (an unspecified launch
// failure): sticky, like an illegal address. Expected record: fault, and
// the next point runs in a fresh worker.
//
// Mapping: the ABI default, one warp per (split, head, sequence).
#include "abi.cuh"
#include "combine.cuh"

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    // Guarded by device data (always true: nkv - 1 >= 0) so that the
    // write below stays reachable code and the kernel reads as a real one.
    if (positions[blockIdx.z] >= 0) {
        __trap();
    }
    kt_partial_slot(partial, blockIdx.z, blockIdx.x, blockIdx.y, heads)[threadIdx.x] = 0.0f;
}
