// rows.cu: the pre-R4 "8d" specimen: lanes own rows, the accumulator lives
// in local memory.
//
// Mapping: one warp per (split, head, sequence) = grid (SPLITS, heads,
// batch), block 32. The warp walks its split in batches of 64 rows; lane l
// takes rows base+l and base+32+l (2 rows per lane per batch), computes each
// full dot product itself with 4-byte (f16) / 8-byte (f32) loads walking
// the row, and keeps a whole-HEAD_DIM accumulator float4 oc[HEAD_DIM/4] of
// its own. The batch max is reduced across the warp so the running max stays
// warp-uniform; the sums S and oc stay per lane until a cross-lane reduction
// at the end of the split, after which lane l writes accumulator float4s
// l, l+32, ... of the dim-sliced partial slot.
//
// Numerics: tolerance class. Each lane sums its own rows, and the end-of-
// split reduction adds lanes in butterfly order: the summation order differs
// from the row-serial family, so it is gated against the float64 oracle.
//
// Dispatch: HEAD_DIM % 4 == 0 (float4 accumulator), HEAD_DIM <= 1024 (the
// combine block). No lane/dim limit: a lane owns rows, not dims.
//
// Seed lesson (R4, inverted): this is the geometry R4 replaced, kept as the
// specimen a resource report must flag. The accumulator's bound is read at
// run time, so ptxas cannot fold oc[] into registers and gives it a stack
// frame (512 bytes per lane at HEAD_DIM 128); every batch rescales all of it
// through local memory, and each lane's narrow loads touch many sectors per
// row. Raising SPLITS only multiplies that cost. Do not "fix" the bound: the
// local bytes are the point of the specimen.
#include "abi.cuh"
#include "combine.cuh"

// kt_runtime_bound returns n through a volatile local so the compiler cannot
// see its value: the seeds' kernel got the same effect from a head_dim
// kernel parameter.
__device__ __forceinline__ int kt_runtime_bound(int n) {
    volatile int hidden = n;
    return hidden;
}

__device__ __forceinline__ float kt_warp_sum(float x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x += __shfl_xor_sync(0xffffffffu, x, off);
    return x;
}

__device__ __forceinline__ float kt_warp_max(float x) {
#pragma unroll
    for (int off = 16; off > 0; off >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
    return x;
}

// kt_rows_dot is one lane's full-row dot product, two elements per load.
__device__ __forceinline__ float kt_rows_dot(const float* __restrict__ qh, const KV_T* __restrict__ krow, int hd4) {
    float d = 0.0f;
    for (int i = 0; i < hd4; i++) {
        const float2 a = kv_ld2(krow + i * 4);
        const float2 c = kv_ld2(krow + i * 4 + 2);
        const float4 q4 = __ldg(reinterpret_cast<const float4*>(qh) + i);
        d += q4.x * a.x + q4.y * a.y + q4.z * c.x + q4.w * c.y;
    }
    return d;
}

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
    const int lane = threadIdx.x & 31;
    const int hk = kt_kv_head(h, heads, kv_heads);
    const kt_range r = kt_split_range(positions, b, sp);
    const float* qh = q + ((size_t)b * heads + h) * HEAD_DIM;
    const int hd4 = kt_runtime_bound(HEAD_DIM / 4);

    float mx = kt_neg_inf(), S = 0.0f;
    float4 oc[HEAD_DIM / 4];
    for (int i = 0; i < hd4; i++) oc[i] = kt_zero4();

    for (int base = r.lo; base < r.hi; base += 64) {
        const int kv0 = base + lane, kv1 = base + 32 + lane;
        const bool ok0 = kv0 < r.hi, ok1 = kv1 < r.hi;
        const float s0 = ok0 ? kt_rows_dot(qh, kt_kv_row(k, b, kv0, hk, kv_heads, capacity), hd4) * scale : kt_neg_inf();
        const float s1 = ok1 ? kt_rows_dot(qh, kt_kv_row(k, b, kv1, hk, kv_heads, capacity), hd4) * scale : kt_neg_inf();
        // base < hi, so lane 0's row kv0 = base is valid and bmx is finite.
        const float bmx = kt_warp_max(fmaxf(s0, s1));
        const float nmx = fmaxf(mx, bmx);
        const float corr = expf(mx - nmx);
        for (int i = 0; i < hd4; i++) {
            oc[i].x *= corr;
            oc[i].y *= corr;
            oc[i].z *= corr;
            oc[i].w *= corr;
        }
        S *= corr;
        const float e0 = ok0 ? expf(s0 - nmx) : 0.0f;
        const float e1 = ok1 ? expf(s1 - nmx) : 0.0f;
        S += e0 + e1;
        if (ok0) {
            const KV_T* vrow = kt_kv_row(v, b, kv0, hk, kv_heads, capacity);
            for (int i = 0; i < hd4; i++) {
                const float2 a = kv_ld2(vrow + i * 4);
                const float2 c = kv_ld2(vrow + i * 4 + 2);
                oc[i].x += e0 * a.x;
                oc[i].y += e0 * a.y;
                oc[i].z += e0 * c.x;
                oc[i].w += e0 * c.y;
            }
        }
        if (ok1) {
            const KV_T* vrow = kt_kv_row(v, b, kv1, hk, kv_heads, capacity);
            for (int i = 0; i < hd4; i++) {
                const float2 a = kv_ld2(vrow + i * 4);
                const float2 c = kv_ld2(vrow + i * 4 + 2);
                oc[i].x += e1 * a.x;
                oc[i].y += e1 * a.y;
                oc[i].z += e1 * c.x;
                oc[i].w += e1 * c.y;
            }
        }
        mx = nmx;
    }

    S = kt_warp_sum(S);
    for (int i = 0; i < hd4; i++) {
        oc[i].x = kt_warp_sum(oc[i].x);
        oc[i].y = kt_warp_sum(oc[i].y);
        oc[i].z = kt_warp_sum(oc[i].z);
        oc[i].w = kt_warp_sum(oc[i].w);
    }
    float* dst = kt_partial_slot(partial, b, sp, h, heads);
    if (lane == 0) {
        dst[0] = mx;
        dst[1] = S;
        dst[2] = 0.0f;
        dst[3] = 0.0f;
    }
    for (int i = lane; i < hd4; i += 32) *reinterpret_cast<float4*>(dst + 4 + i * 4) = oc[i];
}
