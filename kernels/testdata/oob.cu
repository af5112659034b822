// oob.cu: a fault kernel for ktune's fault-isolation check
// (experiments/faults.yaml). It follows the ABI's signatures and nothing
// else: every thread stores one float 4 TiB past the partial buffer, far
// outside any allocation, so the launch ends with
// CUDA_ERROR_ILLEGAL_ADDRESS. That error is sticky: the context, and in
// practice the process, can run nothing more. Expected record: fault, and
// the next point runs in a fresh worker.
//
// Mapping: the ABI default, one warp per (split, head, sequence); no lane
// owns anything, since no result is produced.
#include "abi.cuh"
#include "combine.cuh"

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    // The offset is a run-time sum so the store cannot be proven out of
    // bounds (and dropped) at compile time; positions[b] >= 0 always.
    const size_t far = ((size_t)1 << 40) + (size_t)positions[blockIdx.z] + threadIdx.x;
    partial[far] = scale;
}
