// abi.cuh: the kernel ABI every ktune attention kernel follows, and the
// shared device code of the seed family. kernels/ABI.md is the full text;
// this header is its executable half.
//
// Entry points (extern "C", so NVRTC and the driver find them unmangled):
//
//   __global__ void attn_partial(const float* __restrict__ q,
//       const KV_T* __restrict__ k, const KV_T* __restrict__ v,
//       const int* __restrict__ positions, float* __restrict__ partial,
//       int heads, int kv_heads, int capacity, float scale);
//   __global__ void attn_combine(const float* __restrict__ partial,
//       float* __restrict__ out, int heads);
//
// Defines always passed with -D: HEAD_DIM, KV_F16 (1: f16 K/V, 0: other),
// SPLITS; KV_BF16=1 for bf16 K/V, KV_FP8=1 for fp8 e4m3 K/V (with scales);
// plus each variant's own (NR, RING, ...).
//
// Layouts (row-major, innermost last):
//   q         [batch][heads][HEAD_DIM]               f32
//   k, v      [batch][capacity][kv_heads][HEAD_DIM]  KV_T
//   positions [batch]                                int32, nkv - 1 of each sequence
//   partial   [batch][SPLITS][heads][PSTR]           f32, PSTR = HEAD_DIM + 4:
//             p[0] running max, p[1] sum of exp weights, p[2..3] padding,
//             p[4 .. 4+HEAD_DIM) weighted V accumulator (16-byte aligned)
//   out       [batch][heads][HEAD_DIM]               f32
//
// nkv is read on the device (positions[blockIdx.z] + 1) and never shapes the
// grid, so a captured CUDA graph stays valid while the context grows. Split
// sp covers rows [sp*chunk, min(nkv, sp*chunk + chunk)) with chunk =
// ceil(nkv / SPLITS); a split with no rows writes max = -inf, sum = 0,
// acc = 0, which the combine weighs by exp(-inf) = 0. Query head h reads KV
// head h / (heads / kv_heads). scale = 1/sqrt(HEAD_DIM), passed by the host.
//
// The header needs no include file at all: NVRTC has no host headers, and
// the f16 -> f32 conversion is one PTX cvt, so the same text compiles under
// NVRTC and nvcc alike.
#pragma once

#ifndef HEAD_DIM
#error "HEAD_DIM must be defined (-DHEAD_DIM=128)"
#endif
#ifndef KV_F16
#error "KV_F16 must be defined (-DKV_F16=1 for f16 K/V, 0 for f32)"
#endif
#ifndef SPLITS
#error "SPLITS must be defined (-DSPLITS=32)"
#endif
// KV_BF16 and KV_FP8 are passed (as 1) only for bf16 and fp8e4m3 shapes,
// whose KV_F16 is 0; every other shape leaves them undefined.
#ifndef KV_BF16
#define KV_BF16 0
#endif
#ifndef KV_FP8
#define KV_FP8 0
#endif
#if KV_F16 + KV_BF16 + KV_FP8 > 1
#error "at most one of KV_F16, KV_BF16, KV_FP8 may be 1"
#endif
// QLEN is the number of query tokens per sequence (kernels/ABI.md, "Paged
// KV, several query tokens, ..."): 1 unless the shape has more.
#ifndef QLEN
#define QLEN 1
#endif
#if HEAD_DIM % 4 != 0
#error "HEAD_DIM must be a multiple of 4: every loader moves 4 dims"
#endif

// PSTR is the float stride of one partial slot: the HEAD_DIM accumulator
// after a 4-float header keeps every slot's accumulator 16-byte aligned, so a
// lane can store its 4 dims as one float4.
#ifndef PSTR
#define PSTR (HEAD_DIM + 4)
#endif

// KV_T is the element type of K and V. f16 and bf16 are carried as their
// raw 16 bits, fp8 (e4m3) as its raw byte: the kernels only ever convert
// them, and plain integer types keep the ABI free of cuda_fp16.h. An fp8
// element is scaled: its value is e4m3(bits) times the scale of its tensor
// (K or V) and KV head, read from the kv_scale argument, f32 [2][kv_heads]
// (K's scales, then V's), which kernels of fp8 shapes take last.
typedef unsigned short kt_half;
#if KV_F16 || KV_BF16
typedef kt_half KV_T;
#elif KV_FP8
typedef unsigned char KV_T;
#else
typedef float KV_T;
#endif

// kt_neg_inf is -infinity without <math.h> (NVRTC does not define INFINITY).
__device__ __forceinline__ float kt_neg_inf() { return __int_as_float(0xff800000); }

__device__ __forceinline__ float4 kt_zero4() { return make_float4(0.0f, 0.0f, 0.0f, 0.0f); }

// kt_h2f converts one IEEE binary16 to f32 (exact: every f16 is an f32).
__device__ __forceinline__ float kt_h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

// kt_e2f converts one 16-bit K/V element to f32, exactly: f16 by a cvt,
// bf16 (the top half of an f32) by a shift.
__device__ __forceinline__ float kt_e2f(unsigned short h) {
#if KV_BF16
    return __uint_as_float((unsigned int)h << 16);
#else
    return kt_h2f(h);
#endif
}

// kv_ld4 loads 4 consecutive K/V elements as a float4 in one load
// instruction: 16 bytes for f32, 8 bytes (two packed half2) for f16. The
// read-only path (ld.global.nc) is safe because K/V never change during a
// launch. p must be aligned to 4 elements.
__device__ __forceinline__ float4 kv_ld4(const float* p) {
    return __ldg(reinterpret_cast<const float4*>(p));
}
__device__ __forceinline__ float4 kv_ld4(const kt_half* p) {
    uint2 w = __ldg(reinterpret_cast<const uint2*>(p));
    return make_float4(kt_e2f((unsigned short)(w.x & 0xffffu)), kt_e2f((unsigned short)(w.x >> 16)),
                       kt_e2f((unsigned short)(w.y & 0xffffu)), kt_e2f((unsigned short)(w.y >> 16)));
}

// kv_ld2 loads 2 consecutive elements with one 4-byte (f16) or 8-byte (f32)
// load: the narrow access of the pre-R4 row walk, kept for that specimen.
__device__ __forceinline__ float2 kv_ld2(const float* p) {
    return __ldg(reinterpret_cast<const float2*>(p));
}
__device__ __forceinline__ float2 kv_ld2(const kt_half* p) {
    unsigned int w = __ldg(reinterpret_cast<const unsigned int*>(p));
    return make_float2(kt_e2f((unsigned short)(w & 0xffffu)), kt_e2f((unsigned short)(w >> 16)));
}

// A kt_range is the row range [lo, hi) of one split; lo >= hi means idle.
struct kt_range {
    int lo, hi;
};

// kt_split_range reads nkv of sequence b on the device and cuts it into
// SPLITS chunks of ceil(nkv / SPLITS) rows.
__device__ __forceinline__ kt_range kt_split_range(const int* __restrict__ positions, int b, int sp) {
    const int nkv = positions[b] + 1;
    const int chunk = (nkv + SPLITS - 1) / SPLITS;
    kt_range r;
    r.lo = sp * chunk;
    r.hi = min(nkv, r.lo + chunk);
    return r;
}

// kt_partial_slot is the PSTR-float slot of (sequence b, split sp, head h).
__device__ __forceinline__ float* kt_partial_slot(float* partial, int b, int sp, int h, int heads) {
    return partial + (((size_t)b * SPLITS + sp) * heads + h) * PSTR;
}
__device__ __forceinline__ const float* kt_partial_slot(const float* partial, int b, int sp, int h, int heads) {
    return partial + (((size_t)b * SPLITS + sp) * heads + h) * PSTR;
}

// kt_kv_row points at dim 0 of (sequence b, row, KV head hk) in K or V.
template <typename T>
__device__ __forceinline__ const T* kt_kv_row(const T* base, int b, int row, int hk, int kv_heads, int capacity) {
    return base + (((size_t)b * capacity + row) * kv_heads + hk) * HEAD_DIM;
}

// kt_kv_head is the KV head that query head h reads (GQA grouping).
__device__ __forceinline__ int kt_kv_head(int h, int heads, int kv_heads) {
    return h / (heads / kv_heads);
}

// ---------------------------------------------------------------------------
// The seed family's row step. r4, d2, pair and cpasync differ only in where
// their loads issue; they must stay byte-identical, so the arithmetic of one
// row lives here, once, and every one of them calls it. The fused
// multiply-adds are written out (fmaf) rather than left to the compiler's
// contraction so that neither a -fmad flag nor a different schedule can
// change a single bit between twins.

// A kt_state is the online-softmax state of one warp: running max mx, sum
// of exp weights S (both warp-uniform) and this lane's 4 accumulator dims.
struct kt_state {
    float mx, S;
    float4 oc;
};

__device__ __forceinline__ kt_state kt_state_init() {
    kt_state st;
    st.mx = kt_neg_inf();
    st.S = 0.0f;
    st.oc = kt_zero4();
    return st;
}

// kt_row_dot is the full-row dot product q.k: this lane's 4-dim partial,
// then a 5-step xor butterfly. Each butterfly step adds a pair whose order
// does not matter (a + b == b + a exactly), so every lane ends with the same
// bits and the softmax state stays warp-uniform. Idle lanes pass zeros.
__device__ __forceinline__ float kt_row_dot(float4 q4, float4 k4) {
    float d = fmaf(q4.w, k4.w, fmaf(q4.z, k4.z, fmaf(q4.y, k4.y, q4.x * k4.x)));
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) d += __shfl_xor_sync(0xffffffffu, d, off);
    return d;
}

// kt_softmax_step folds one row's score into (mx, S) in the seeds' order
// and returns the rescale factor corr and the row weight e that the V
// accumulation then applies. expf, not __expf: the accurate exp is what the
// oracle gate's tolerance was set for, and both twins must use the same one.
__device__ __forceinline__ void kt_softmax_step(kt_state& st, float dot, float scale, float& corr, float& e) {
    // __fmul_rn: never contracted into the exp arguments' subtractions.
    const float s = __fmul_rn(dot, scale);
    const float nmx = fmaxf(st.mx, s);
    corr = expf(st.mx - nmx);
    e = expf(s - nmx);
    st.S = fmaf(st.S, corr, e);
    st.mx = nmx;
}

// kt_accumulate rescales this lane's accumulator and adds e * v.
__device__ __forceinline__ void kt_accumulate(kt_state& st, float corr, float e, float4 v4) {
    st.oc.x = fmaf(e, v4.x, st.oc.x * corr);
    st.oc.y = fmaf(e, v4.y, st.oc.y * corr);
    st.oc.z = fmaf(e, v4.z, st.oc.z * corr);
    st.oc.w = fmaf(e, v4.w, st.oc.w * corr);
}

// kt_write_partial stores a warp's state dim-sliced: lane 0 writes the
// header, each live lane its own float4; no cross-lane traffic at all.
__device__ __forceinline__ void kt_write_partial(float* dst, const kt_state& st, int lane, bool live) {
    if (lane == 0) {
        dst[0] = st.mx;
        dst[1] = st.S;
        dst[2] = 0.0f;
        dst[3] = 0.0f;
    }
    if (live) *reinterpret_cast<float4*>(dst + 4 + lane * 4) = st.oc;
}

// kt_load_q loads this lane's 4 query dims (zeros for an idle lane, so it
// adds nothing to the butterfly).
__device__ __forceinline__ float4 kt_load_q(const float* __restrict__ q, int b, int h, int heads, int d0, bool live) {
    return live ? __ldg(reinterpret_cast<const float4*>(q + ((size_t)b * heads + h) * HEAD_DIM + d0)) : kt_zero4();
}

// ---------------------------------------------------------------------------
// The combine. Every kernel of a bitwise family must merge its partials with
// this exact code, or twins that agree on the partials would still differ in
// out. Launch: grid (heads, batch), block HEAD_DIM threads, thread i owns
// dim i. An idle split has max -inf and weight exp(-inf - gmx) = 0. Were
// every split idle (nkv >= 1 under the ABI, so only a corrupt positions
// entry could do it) w and S would be NaN, S > 0 fails and out is 0.
// S and acc use fmaf for the same reason as the row step: the bits must not
// depend on how a translation unit happens to contract a*b + c.
__device__ __forceinline__ void kt_combine(const float* __restrict__ partial, float* __restrict__ out, int heads) {
    const int h = blockIdx.x;
    const int b = blockIdx.y;
    const int i = threadIdx.x;
    if (i >= HEAD_DIM) return;
    float gmx = kt_neg_inf();
    for (int sp = 0; sp < SPLITS; sp++) gmx = fmaxf(gmx, kt_partial_slot(partial, b, sp, h, heads)[0]);
    float S = 0.0f, acc = 0.0f;
    for (int sp = 0; sp < SPLITS; sp++) {
        const float* p = kt_partial_slot(partial, b, sp, h, heads);
        const float w = expf(p[0] - gmx);
        S = fmaf(p[1], w, S);
        acc = fmaf(p[4 + i], w, acc);
    }
    out[((size_t)b * heads + h) * HEAD_DIM + i] = (S > 0.0f) ? acc / S : 0.0f;
}
