// badcompile.cu: a user kernel with a syntax error on line 9, for the bad
// input catalogue: the point must be recorded as compile_failed with
// NVRTC's log, which names this file and the line.
#include "abi.cuh"
#include "combine.cuh"

extern "C" __global__ void attn_partial(const float* q, const KV_T* k, const KV_T* v, const int* positions,
                                        float* partial, int heads, int kv_heads, int capacity, float scale) {
    int x = ;
}
