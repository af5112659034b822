// noentry.cu: compiles, but has no attn_partial entry point (a misspelt
// name), for the bad input catalogue: the point must be recorded as an
// error naming the missing entry point.
#include "abi.cuh"
#include "combine.cuh"

extern "C" __global__ void attn_partal(const float* q, const KV_T* k, const KV_T* v, const int* positions,
                                       float* partial, int heads, int kv_heads, int capacity, float scale) {}
