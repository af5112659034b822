// hang.cu: a fault kernel for ktune's fault-isolation check
// (experiments/faults.yaml). Every warp spins until positions[b] becomes
// negative, which never happens (it holds nkv - 1 >= 0). The read is
// volatile, so the compiler must reload it on every iteration and cannot
// fold the loop away or prove it infinite. The host cannot stop a running
// kernel: the sweep kills the worker process when the point's timeout (plus
// a few seconds of grace) passes, and the driver tears the kernel down with
// the context. Expected record: timeout, and the next point runs in a
// fresh worker.
//
// Mapping: the ABI default, one warp per (split, head, sequence).
#include "abi.cuh"
#include "combine.cuh"

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    const volatile int* pos = positions;
    while (pos[blockIdx.z] >= 0) {
        // Sleep between polls (sm_70+) so that the hang does not also
        // heat the GPU; inline PTX needs no header under NVRTC.
        asm volatile("nanosleep.u32 1000;");
    }
    kt_partial_slot(partial, blockIdx.z, blockIdx.x, blockIdx.y, heads)[threadIdx.x] = 0.0f;
}
