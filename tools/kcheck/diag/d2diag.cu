// d2diag.cu: a diagnostic D2 kernel for kcheck's timing mode (-time). It is
// not one of ktune's kernels: it exists to find out, on one GPU, which
// difference between kernels/d2.cu and the seed document's D2 code (seed
// 002, section 3.2 "after") costs the time. Three switches, each one
// difference, all defaulting to kernels/d2.cu's choice:
//
//   LOADER 0  abi.cuh's kv_ld4: one 8-byte __ldg (ld.global.nc.v2.u32) and
//             four inline-PTX cvt.f32.f16, inside the `ok ? load : 0`
//             condition (what d2.cu does).
//          1  the seed's kv_ld4: two __half2 loads through cuda_fp16.h and
//             __half22float2, inside the condition.
//          2  raw staging: the condition loads the 8 raw bytes into a uint2
//             and the conversion happens at the row step, after every load
//             of the window was issued.
//   ARITH  0  abi.cuh's row step (kt_row_dot / kt_softmax_step /
//             kt_accumulate: explicit fmaf and __fmul_rn).
//          1  the seed's expressions: q4.x*k4.x + ..., d * scale, expf,
//             S = S*corr + e, oc.x = oc.x*corr + e*vv.x, contracted however
//             the compiler likes.
//   LOOP   0  d2.cu's loop: every window guarded by nr = min(NR, hi - base)
//             and a `break` in the row loop.
//          1  full windows without any guard, then one guarded tail window.
//
// LOADER=0 ARITH=0 LOOP=0 is d2.cu (the control: it must time the same);
// LOADER=1 ARITH=1 LOOP=0 is the seed's D2. Mapping, layouts and launch are
// the ABI's (kernels/abi.cuh): grid (SPLITS, heads, batch), block 32, lane l
// owns dims 4l..4l+3. Only LOADER=2 and LOOP=1 keep d2's bits exactly
// (same rows, same order, same operations); ARITH=1 changes the rounding.
#include "abi.cuh"
#include "combine.cuh"

#ifndef NR
#define NR 4
#endif
#ifndef LOADER
#define LOADER 0
#endif
#ifndef ARITH
#define ARITH 0
#endif
#ifndef LOOP
#define LOOP 0
#endif

#if LOADER == 1
#include <cuda_fp16.h>
__device__ __forceinline__ float4 dg_ld4(const kt_half* p) {
    const __half2* p2 = reinterpret_cast<const __half2*>(p);
    const float2 a = __half22float2(p2[0]);
    const float2 b = __half22float2(p2[1]);
    return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ float4 dg_ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
#else
__device__ __forceinline__ float4 dg_ld4(const KV_T* p) { return kv_ld4(p); }
#endif

#if LOADER == 2
#if !KV_F16
#error "LOADER=2 (raw staging) is written for f16 K/V"
#endif
typedef uint2 dg_raw;
__device__ __forceinline__ dg_raw dg_load(const KV_T* p) { return __ldg(reinterpret_cast<const uint2*>(p)); }
__device__ __forceinline__ dg_raw dg_zero() { return make_uint2(0u, 0u); }
__device__ __forceinline__ float4 dg_cvt(dg_raw w) {
    return make_float4(kt_h2f((unsigned short)(w.x & 0xffffu)), kt_h2f((unsigned short)(w.x >> 16)),
                       kt_h2f((unsigned short)(w.y & 0xffffu)), kt_h2f((unsigned short)(w.y >> 16)));
}
#else
typedef float4 dg_raw;
__device__ __forceinline__ dg_raw dg_load(const KV_T* p) { return dg_ld4(p); }
__device__ __forceinline__ dg_raw dg_zero() { return kt_zero4(); }
__device__ __forceinline__ float4 dg_cvt(dg_raw w) { return w; }
#endif

// dg_row folds one row into the state with the selected arithmetic.
__device__ __forceinline__ void dg_row(kt_state& st, float4 q4, float4 k4, float4 v4, float scale, bool live) {
#if ARITH == 0
    float corr, e;
    kt_softmax_step(st, kt_row_dot(q4, k4), scale, corr, e);
    if (live) kt_accumulate(st, corr, e, v4);
#else
    float d = q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
    const float s = d * scale;
    const float nmx = fmaxf(st.mx, s);
    const float corr = expf(st.mx - nmx);
    const float e = expf(s - nmx);
    st.S = st.S * corr + e;
    st.mx = nmx;
    if (live) {
        st.oc.x = st.oc.x * corr + e * v4.x;
        st.oc.y = st.oc.y * corr + e * v4.y;
        st.oc.z = st.oc.z * corr + e * v4.z;
        st.oc.w = st.oc.w * corr + e * v4.w;
    }
#endif
}

// dg_window stages K and V of rows [base, base + nr) and folds them in.
// FULL: nr == NR is known, no guard at all.
template <bool FULL>
__device__ __forceinline__ void dg_window(kt_state& st, float4 q4, const KV_T* kb, const KV_T* vb, size_t rstride,
                                          int base, int nr, float scale, bool live) {
    dg_raw k4[NR], v4[NR];
#pragma unroll
    for (int j = 0; j < NR; j++) {
        const bool ok = FULL ? live : (live && j < nr);
        k4[j] = ok ? dg_load(kb + (size_t)(base + j) * rstride) : dg_zero();
        v4[j] = ok ? dg_load(vb + (size_t)(base + j) * rstride) : dg_zero();
    }
#pragma unroll
    for (int j = 0; j < NR; j++) {
        if (!FULL && j >= nr) break;
        dg_row(st, q4, dg_cvt(k4[j]), dg_cvt(v4[j]), scale, live);
    }
}

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31;
    const int d0 = lane * 4;
    const bool live = d0 < HEAD_DIM;
    const int hk = kt_kv_head(h, heads, kv_heads);
    const kt_range r = kt_split_range(positions, b, sp);
    const float4 q4 = kt_load_q(q, b, h, heads, d0, live);
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + d0;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + d0;
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;

    kt_state st = kt_state_init();
#if LOOP == 0
    for (int base = r.lo; base < r.hi; base += NR) dg_window<false>(st, q4, kb, vb, rstride, base, min(NR, r.hi - base), scale, live);
#else
    int base = r.lo;
    for (; base + NR <= r.hi; base += NR) dg_window<true>(st, q4, kb, vb, rstride, base, NR, scale, live);
    if (base < r.hi) dg_window<false>(st, q4, kb, vb, rstride, base, r.hi - base, scale, live);
#endif
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
