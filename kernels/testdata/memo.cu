// memo.cu: a planted defect for ktune's gate check
// (experiments/defects.yaml). The kernel counts, in __device__ memory, how
// many launches in a row came with the same positions, and from the ninth
// on skips its work: the partial slots still hold the previous launch's,
// and the combine makes out from them. Right, and fast, for a benchmark
// that repeats one launch; wrong in an engine, whose query changes every
// step at the same lengths. The gates never repeat a launch more than a
// few times in a row; the timed probes repeat it hundreds of times.
// Expected gate: timed (the outputs were poisoned before the sample and
// the skipped launch left them so).
//
// Mapping: the ABI default, one warp per (split, head, sequence); lane l
// owns dims 4l..4l+3 (HEAD_DIM <= 128), the seed row step of abi.cuh. The
// last block to finish (an arrival count) updates the run length for the
// next launch, which every block reads at its start.
#include "abi.cuh"
#include "combine.cuh"

#define MEMO_AFTER 8

__device__ int kt_seen[64];       // the positions of the current run (batch <= 64)
__device__ int kt_run;            // its length in launches
__device__ unsigned int kt_done;  // blocks of this launch finished

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31;
    if (*(volatile int*)&kt_run <= MEMO_AFTER) {  // the defect: skip a repeated launch
        const int d0 = lane * 4;
        const bool live = d0 < HEAD_DIM;
        const int hk = kt_kv_head(h, heads, kv_heads);
        const kt_range r = kt_split_range(positions, b, sp);
        const float4 q4 = kt_load_q(q, b, h, heads, d0, live);
        const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + d0;
        const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + d0;
        const size_t rstride = (size_t)kv_heads * HEAD_DIM;
        kt_state st = kt_state_init();
        for (int row = r.lo; row < r.hi; row++) {
            const float4 k4 = live ? kv_ld4(kb + (size_t)row * rstride) : kt_zero4();
            const float4 v4 = live ? kv_ld4(vb + (size_t)row * rstride) : kt_zero4();
            float corr, e;
            kt_softmax_step(st, kt_row_dot(q4, k4), scale, corr, e);
            if (live) kt_accumulate(st, corr, e, v4);
        }
        kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
    }
    __syncwarp();
    if (lane == 0) {
        __threadfence();
        const unsigned int blocks = gridDim.x * gridDim.y * gridDim.z;
        if (atomicAdd(&kt_done, 1u) == blocks - 1) {
            bool same = kt_run > 0;
            for (int s = 0; s < (int)gridDim.z && s < 64; s++) {
                same = same && kt_seen[s] == positions[s];
                kt_seen[s] = positions[s];
            }
            kt_run = same ? kt_run + 1 : 1;
            kt_done = 0;
            __threadfence();
        }
    }
}
