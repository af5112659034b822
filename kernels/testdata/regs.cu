// regs.cu: a launch-resource fault kernel for ktune's fault-isolation check
// (experiments/faults.yaml). The kernel itself is harmless; what fails is
// its launch, refused by the driver before anything runs, in one of two
// ways chosen by the spec:
//   - a dynamic shared memory size (the variant's shared expression) above
//     the device's per-block opt-in limit (227 KiB on sm_90): the opt-in
//     attribute or the launch fails with CUDA_ERROR_INVALID_VALUE;
//   - a block larger than the __launch_bounds__ below (MAX_THREADS, 32 by
//     default) promises the compiler: the launch fails with
//     CUDA_ERROR_INVALID_VALUE (or LAUNCH_OUT_OF_RESOURCES).
// Neither error is sticky: the context survives. Expected record: error,
// and the same worker runs the next point.
//
// Mapping: one warp per (split, head, sequence); dynamic shared memory,
// when any, is touched by lane 0 so that it is really requested.
#include "abi.cuh"
#include "combine.cuh"

#ifndef MAX_THREADS
#define MAX_THREADS 32
#endif

extern "C" __global__ void __launch_bounds__(MAX_THREADS)
    attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
                 const int* __restrict__ positions, float* __restrict__ partial, int heads, int kv_heads,
                 int capacity, float scale) {
    extern __shared__ float scratch[];
    if (threadIdx.x == 0) {
        scratch[0] = scale;
    }
    __syncwarp();
    float* slot = kt_partial_slot(partial, blockIdx.z, blockIdx.x, blockIdx.y, heads);
    if (threadIdx.x < 4) {
        // An idle split's header and nothing else: the gates fail this
        // point if a launch ever succeeds, which says so loudly.
        slot[threadIdx.x] = threadIdx.x == 0 ? kt_neg_inf() : 0.0f * scratch[0];
    }
}
