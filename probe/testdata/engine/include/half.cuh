// half.cuh — f16 conversions without <cuda_fp16.h> (a PTX cvt), for the
// test kernel steps.cu; found through the variant's include directory.
#pragma once

#if KV_F16
typedef unsigned short KV;
#else
typedef float KV;
#endif

__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ unsigned short f2h(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
__device__ __forceinline__ float kv(unsigned short x) { return h2f(x); }
__device__ __forceinline__ float kv(float x) { return x; }
__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }
