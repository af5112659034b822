// ref.cu: a small reference kernel that follows ktune's attention ABI, for
// the probe package's GPU tests. It favours plainness over speed.
//
// Mapping: one warp per (split, head, sequence); lane l owns dims l, l+32,
// l+64, l+96 (HEAD_DIM <= 128). The warp walks its split's rows one at a
// time: lane partial dot products, a xor butterfly, then the online
// softmax update of (max, sum, acc).
//
// Test switches: -DBUG=1 drops the last row of every split (fails the
// tolerance gate), -DSKIP_IDLE=1 leaves idle splits unwritten (fails the
// written gate), -DTWIN=n changes nothing (a bitwise twin).
#ifndef BUG
#define BUG 0
#endif
#ifndef SKIP_IDLE
#define SKIP_IDLE 0
#endif
#define PSTR (HEAD_DIM + 4)
#define PER_LANE ((HEAD_DIM + 31) / 32)

#if KV_F16
typedef unsigned short kv_t;
__device__ __forceinline__ float ld(const kv_t* p) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(*p));
    return f;
}
#else
typedef float kv_t;
__device__ __forceinline__ float ld(const kv_t* p) { return *p; }
#endif

extern "C" __global__ void attn_partial(const float* q, const kv_t* k, const kv_t* v, const int* positions,
                                        float* partial, int heads, int kv_heads, int capacity, float scale) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z, lane = threadIdx.x;
    const int nkv = positions[b] + 1;
    const int chunk = (nkv + SPLITS - 1) / SPLITS;
    const int lo = sp * chunk;
    int hi = min(nkv, lo + chunk);
    if (BUG && hi > lo) hi--;
    const int hk = h / (heads / kv_heads);
    float* dst = partial + (((size_t)b * SPLITS + sp) * heads + h) * PSTR;
    if (SKIP_IDLE && lo >= hi) return;

    float qv[PER_LANE], acc[PER_LANE];
    for (int j = 0; j < PER_LANE; j++) {
        const int d = lane + 32 * j;
        qv[j] = d < HEAD_DIM ? q[((size_t)b * heads + h) * HEAD_DIM + d] : 0.0f;
        acc[j] = 0.0f;
    }
    float mx = __int_as_float(0xff800000), sum = 0.0f;
    for (int r = lo; r < hi; r++) {
        const size_t row = (((size_t)b * capacity + r) * kv_heads + hk) * HEAD_DIM;
        float dot = 0.0f;
        for (int j = 0; j < PER_LANE; j++) {
            const int d = lane + 32 * j;
            if (d < HEAD_DIM) dot += qv[j] * ld(k + row + d);
        }
        for (int off = 16; off > 0; off >>= 1) dot += __shfl_xor_sync(0xffffffffu, dot, off);
        const float s = dot * scale;
        const float nmx = fmaxf(mx, s);
        const float corr = expf(mx - nmx);
        const float e = expf(s - nmx);
        sum = sum * corr + e;
        mx = nmx;
        for (int j = 0; j < PER_LANE; j++) {
            const int d = lane + 32 * j;
            if (d < HEAD_DIM) acc[j] = acc[j] * corr + e * ld(v + row + d);
        }
    }
    if (lane == 0) {
        dst[0] = mx;
        dst[1] = sum;
    }
    for (int j = 0; j < PER_LANE; j++) {
        const int d = lane + 32 * j;
        if (d < HEAD_DIM) dst[4 + d] = acc[j];
    }
}

extern "C" __global__ void attn_combine(const float* partial, float* out, int heads) {
    const int h = blockIdx.x, b = blockIdx.y, i = threadIdx.x;
    if (i >= HEAD_DIM) return;
    float gmx = __int_as_float(0xff800000);
    for (int sp = 0; sp < SPLITS; sp++) gmx = fmaxf(gmx, partial[(((size_t)b * SPLITS + sp) * heads + h) * PSTR]);
    float S = 0.0f, a = 0.0f;
    for (int sp = 0; sp < SPLITS; sp++) {
        const float* p = partial + (((size_t)b * SPLITS + sp) * heads + h) * PSTR;
        const float w = expf(p[0] - gmx);
        S += p[1] * w;
        a += p[4 + i] * w;
    }
    out[((size_t)b * heads + h) * HEAD_DIM + i] = S > 0.0f ? a / S : 0.0f;
}
