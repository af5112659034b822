// gqa.cu: the GQA-group kernel on CUDA cores. One block per (split, KV
// head, sequence) computes every query head that shares the KV head, so a
// K/V row is read from memory once, not once per query head (the seeds'
// per-head kernels read it group = heads/kv_heads times).
//
// Mapping: grid (SPLITS, kv_heads, batch), block 32*WARPS. A half-warp owns
// one row at a time: lane j (0..15) of half hw owns dims 8j .. 8j+7 and
// loads them with one 16-byte load (f16: 8 halves; f32: two loads), so a
// warp load instruction covers two whole rows. 16 lanes per row rather than
// 4 or 8 because a lane holds its dims' accumulator for every head of the
// group: 8 heads x 8 dims = 64 registers, where 4 lanes per row would need
// 8 x 32 = 256. Each half-warp keeps its own online-softmax state and takes
// NR rows per step (all 2*NR K and V loads of the warp go out before the
// step's first shuffle); the WARPS warps of a block interleave their steps
// over the split, and the 2*WARPS states meet at the end (shuffles between
// the halves, then shared memory between warps).
//
// The scores of a step: each lane has 8 heads x NR rows of 8-dim partial
// dots. Instead of reducing each over the 16 lanes (4 shuffles per value,
// 32 per row), every pair of rows (16 values) is reduced transposed: each
// xor step sends half of the values still held and keeps the other half,
// so 8+4+2+1 = 15 shuffles leave lane j with the full dot of head j/2 for
// row j%2 of the pair. The softmax then runs once per (head, row) on the
// lane that holds it (one ex2 each, not one per lane per head), and the
// weights and rescale factors go back to all lanes through a small
// double-buffered shared-memory slot of the warp (one __syncwarp a step).
//
// Cost: on the H200 this kernel is bound by instructions, not bytes (228
// registers; ~38 us of partial at batch 1, nkv 32768, against a 14.7 us
// memory floor): every row still costs 16 FMAs per head per lane on CUDA
// cores. mma.cu does the same products on tensor cores.
//
// Numerics: tolerance class. f32 q, K/V converted exactly to f32, f32
// accumulation; base-2 exponentials (ex2.approx, q pre-scaled by
// scale*log2 e); rows are summed in 2*WARPS interleaved streams and merged.
// Gated against the float64 oracle.
//
// Dispatch (variants/builtin_frontier.go checks it): HEAD_DIM == 128 (16
// lanes x 8 dims), group = heads/kv_heads <= 8 (GMAX), NR even (rows are
// reduced in pairs), WARPS <= 8 (the merge area is static shared memory).
// f16 and f32 K/V. The grid never depends on nkv: the split count in use
// follows nkv on the device (gq_range, MINROWS) and the other splits write
// the neutral slot.
#include "abi.cuh"
#include "gqa_block.cuh"

// CW = 1: the parallel combine of combine_wide.cuh (about three L2 round
// trips at any SPLITS); CW = 2: the same with the first accumulator loads
// issued together with the headers (one round trip fewer); CW = 0: the
// shared combine of combine.cuh (serial over SPLITS), kept for comparison.
#ifndef CW
#define CW 2
#endif
#if CW
#define CW_EARLY (CW == 2)
#include "combine_wide.cuh"
#else
#include "combine.cuh"
#endif

#ifndef NR
#define NR 4
#endif
#ifndef WARPS
#define WARPS 8
#endif
#define GMAX 8
#define NU (NR / 2)  // row pairs per half-warp step

#if KV_BF16 || KV_FP8
#error "gqa: f16 or f32 K/V only"
#endif
#if HEAD_DIM != 128
#error "gqa: HEAD_DIM must be 128 (16 lanes x 8 dims per row)"
#endif
#if NR % 2 != 0 || NR < 2
#error "gqa: NR must be even: rows are reduced in pairs"
#endif

// A gq_raw8 is the raw bits of one lane's 8 elements of a row, kept as
// loaded so that every load of a step issues before any conversion.
struct gq_raw8 {
    uint4 a;
#if !KV_F16
    uint4 b;
#endif
};

__device__ __forceinline__ gq_raw8 gq_load8(const KV_T* p, bool ok) {
    gq_raw8 r;
    const uint4 z = make_uint4(0u, 0u, 0u, 0u);
    r.a = ok ? gq_ld16(p) : z;
#if !KV_F16
    r.b = ok ? gq_ld16(p + 4) : z;
#endif
    return r;
}

__device__ __forceinline__ void gq_cvt8(const gq_raw8& r, float (&f)[8]) {
#if KV_F16
    gq_h2x2(r.a.x, f[0], f[1]);
    gq_h2x2(r.a.y, f[2], f[3]);
    gq_h2x2(r.a.z, f[4], f[5]);
    gq_h2x2(r.a.w, f[6], f[7]);
#else
    f[0] = __uint_as_float(r.a.x);
    f[1] = __uint_as_float(r.a.y);
    f[2] = __uint_as_float(r.a.z);
    f[3] = __uint_as_float(r.a.w);
    f[4] = __uint_as_float(r.b.x);
    f[5] = __uint_as_float(r.b.y);
    f[6] = __uint_as_float(r.b.z);
    f[7] = __uint_as_float(r.b.w);
#endif
}

// gq_reduce16 sums x[v] over the 16 lanes of a half-warp, transposed: lane
// j returns the full sum of value v = j. Step xor m keeps the values whose
// bit (of v) equals the lane's bit m and sends the others to the partner.
__device__ __forceinline__ float gq_reduce16(float (&x)[16], int j) {
    const unsigned full = 0xffffffffu;
    float y[8], z[4], w[2];
    const bool b3 = j & 8, b2 = j & 4, b1 = j & 2, b0 = j & 1;
#pragma unroll
    for (int i = 0; i < 8; i++) {
        const float send = b3 ? x[i] : x[i + 8];
        const float keep = b3 ? x[i + 8] : x[i];
        y[i] = keep + __shfl_xor_sync(full, send, 8);
    }
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const float send = b2 ? y[i] : y[i + 4];
        const float keep = b2 ? y[i + 4] : y[i];
        z[i] = keep + __shfl_xor_sync(full, send, 4);
    }
#pragma unroll
    for (int i = 0; i < 2; i++) {
        const float send = b1 ? z[i] : z[i + 2];
        const float keep = b1 ? z[i + 2] : z[i];
        w[i] = keep + __shfl_xor_sync(full, send, 2);
    }
    const float send = b0 ? w[0] : w[1];
    const float keep = b0 ? w[1] : w[0];
    return keep + __shfl_xor_sync(full, send, 1);
}

extern "C" __global__ void __launch_bounds__(WARPS * 32)
    attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k, const KV_T* __restrict__ v,
                 const int* __restrict__ positions, float* __restrict__ partial, int heads, int kv_heads,
                 int capacity, float scale) {
    // Weights and rescale factors of a step, per half-warp, double-buffered
    // by step parity so one __syncwarp per step orders write before read and
    // the previous step's reads before the next write.
    __shared__ __align__(16) float sm_p[2][WARPS][2][NU][16];
    __shared__ __align__(16) float sm_c[2][WARPS][2][GMAX];
    __shared__ float sm_m[WARPS][GMAX], sm_l[WARPS][GMAX];
    __shared__ __align__(16) float sm_o[WARPS][GMAX][HEAD_DIM];

    const unsigned full = 0xffffffffu;
    const int sp = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    const int group = heads / kv_heads;
    const int h0 = hk * group;  // first query head of the group
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int hw = lane >> 4, j = lane & 15;

    const kt_range r = gq_range<2 * NR>(positions, b, sp);
    if (r.lo >= r.hi) {  // block-uniform
        gq_store_idle<WARPS>(partial, b, sp, h0, group, heads);
        return;
    }

    // This lane's 8 dims of every head's query, pre-scaled for base-2.
    float qf[GMAX][8];
    const float qs = scale * GQ_LOG2E;
#pragma unroll
    for (int h = 0; h < GMAX; h++) {
        float4 a = kt_zero4(), c = kt_zero4();
        if (h < group) {
            const float4* qp = reinterpret_cast<const float4*>(q + ((size_t)b * heads + h0 + h) * HEAD_DIM + 8 * j);
            a = qp[0];
            c = qp[1];
        }
        qf[h][0] = a.x * qs, qf[h][1] = a.y * qs, qf[h][2] = a.z * qs, qf[h][3] = a.w * qs;
        qf[h][4] = c.x * qs, qf[h][5] = c.y * qs, qf[h][6] = c.z * qs, qf[h][7] = c.w * qs;
    }

    // Online-softmax state of this half-warp. m is the running max of head
    // j/2 (lanes j and j^1 agree); l is this lane's share of that head's sum
    // (rows of parity j%2), added to its pair at the end; acc[h][*] is this
    // lane's 8 dims of head h.
    float m = kt_neg_inf(), l = 0.0f;
    float acc[GMAX][8];
#pragma unroll
    for (int h = 0; h < GMAX; h++)
#pragma unroll
        for (int d = 0; d < 8; d++) acc[h][d] = 0.0f;

    const size_t rstride = (size_t)kv_heads * HEAD_DIM;
    const KV_T* kb = kt_kv_row(k, b, 0, hk, kv_heads, capacity) + 8 * j;
    const KV_T* vb = kt_kv_row(v, b, 0, hk, kv_heads, capacity) + 8 * j;

    int parity = 0;
    for (int base = r.lo + warp * 2 * NR; base < r.hi; base += WARPS * 2 * NR, parity ^= 1) {
        // Row i of this half-warp's step is base + 2*i + hw: a warp load
        // instruction covers two adjacent rows.
        gq_raw8 kr[NR], vr[NR];
#pragma unroll
        for (int i = 0; i < NR; i++) {
            const int row = base + 2 * i + hw;
            const bool ok = row < r.hi;
            kr[i] = gq_load8(kb + (size_t)row * rstride, ok);
            vr[i] = gq_load8(vb + (size_t)row * rstride, ok);
        }

        // Scores: lane j ends with head j/2 of row 2u + j%2, for each pair u.
        float s[NU];
#pragma unroll
        for (int u = 0; u < NU; u++) {
            float x[16];
#pragma unroll
            for (int rr = 0; rr < 2; rr++) {
                float kf[8];
                gq_cvt8(kr[2 * u + rr], kf);
#pragma unroll
                for (int h = 0; h < GMAX; h++) {
                    float d = qf[h][0] * kf[0];
#pragma unroll
                    for (int e = 1; e < 8; e++) d = fmaf(qf[h][e], kf[e], d);
                    x[2 * h + rr] = d;
                }
            }
            s[u] = gq_reduce16(x, j);
            const int row = base + 2 * (2 * u + (j & 1)) + hw;
            if (row >= r.hi) s[u] = kt_neg_inf();
        }

        // Softmax of head j/2 over this step's rows.
        float mx = s[0];
#pragma unroll
        for (int u = 1; u < NU; u++) mx = fmaxf(mx, s[u]);
        mx = fmaxf(mx, __shfl_xor_sync(full, mx, 1));
        const float mnew = fmaxf(m, mx);
        const float ms = mnew == kt_neg_inf() ? 0.0f : mnew;
        const float corr = gq_ex2(m - ms);
        m = mnew;
        l *= corr;
#pragma unroll
        for (int u = 0; u < NU; u++) {
            const float p = gq_ex2(s[u] - ms);
            l += p;
            sm_p[parity][warp][hw][u][j] = p;
        }
        if ((j & 1) == 0) sm_c[parity][warp][hw][j >> 1] = corr;
        __syncwarp();

        // Back to dims: every lane rescales and accumulates all heads.
        float cw[GMAX];
        {
            const float4* c4 = reinterpret_cast<const float4*>(sm_c[parity][warp][hw]);
            const float4 c0 = c4[0], c1 = c4[1];
            cw[0] = c0.x, cw[1] = c0.y, cw[2] = c0.z, cw[3] = c0.w;
            cw[4] = c1.x, cw[5] = c1.y, cw[6] = c1.z, cw[7] = c1.w;
        }
#pragma unroll
        for (int u = 0; u < NU; u++) {
            float pw[16];
            const float4* p4 = reinterpret_cast<const float4*>(sm_p[parity][warp][hw][u]);
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float4 t = p4[e];
                pw[4 * e] = t.x, pw[4 * e + 1] = t.y, pw[4 * e + 2] = t.z, pw[4 * e + 3] = t.w;
            }
            float v0[8], v1[8];  // converted pair by pair: fewer live registers
            gq_cvt8(vr[2 * u], v0);
            gq_cvt8(vr[2 * u + 1], v1);
#pragma unroll
            for (int h = 0; h < GMAX; h++) {
                if (h >= group) break;  // block-uniform
                const float c = u == 0 ? cw[h] : 1.0f;
#pragma unroll
                for (int d = 0; d < 8; d++) {
                    float a = u == 0 ? acc[h][d] * c : acc[h][d];
                    a = fmaf(pw[2 * h], v0[d], a);
                    acc[h][d] = fmaf(pw[2 * h + 1], v1[d], a);
                }
            }
        }
    }

    // Merge the two halves of the warp: half 1's state folds into half 0's.
    l += __shfl_xor_sync(full, l, 1);
    const float mo = __shfl_xor_sync(full, m, 16);
    const float lo = __shfl_xor_sync(full, l, 16);
    const float M = fmaxf(m, mo);
    const float Ms = M == kt_neg_inf() ? 0.0f : M;
    const float fs = gq_ex2(m - Ms), fo = gq_ex2(mo - Ms);
    const float L = l * fs + lo * fo;
#pragma unroll
    for (int h = 0; h < GMAX; h++) {
        // Head h's factors sit in lane 2h (half 0 holds both halves' max).
        const float fsh = __shfl_sync(full, fs, 2 * h);
        const float foh = __shfl_sync(full, fo, 2 * h);
#pragma unroll
        for (int d = 0; d < 8; d++) {
            const float other = __shfl_xor_sync(full, acc[h][d], 16);
            acc[h][d] = acc[h][d] * fsh + other * foh;
        }
    }
    if (hw == 0) {
#pragma unroll
        for (int h = 0; h < GMAX; h++) {
            if (h < group) {
                float4* o4 = reinterpret_cast<float4*>(&sm_o[warp][h][8 * j]);
                o4[0] = make_float4(acc[h][0], acc[h][1], acc[h][2], acc[h][3]);
                o4[1] = make_float4(acc[h][4], acc[h][5], acc[h][6], acc[h][7]);
            }
        }
        if ((j & 1) == 0) {
            sm_m[warp][j >> 1] = M;
            sm_l[warp][j >> 1] = L;
        }
    }
    __syncthreads();
    gq_merge_store<WARPS, GMAX>(sm_m, sm_l, sm_o, partial, b, sp, h0, group, heads);
}
