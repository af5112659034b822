// cpasync.cu: d2's arithmetic fed by a cp.async shared-memory ring.
//
// Mapping: as d2.cu: grid (SPLITS, heads, batch), block 32; lane l owns dims
// 4l .. 4l+3; the warp walks rows in windows of NR rows. K and V of each
// window are copied global -> shared with cp.async into one of RING ring
// stages (RING - 1 windows ahead of the one being consumed); each lane
// copies its own 4 dims of each row (16 bytes f32 with .cg, 8 bytes f16 with
// .ca: .cg only takes 16) and one commit_group closes a window. The consumer
// then moves the window from shared memory into registers and runs the
// d2 row loop on it.
//
// Numerics: bitwise twin of d2: same rows, same order, same per-row
// operations (kt_softmax_step / kt_accumulate), only the loads' path and
// timing differ; f16 is converted by the same cvt after the shared hop.
//
// Dispatch: HEAD_DIM % 4 == 0, HEAD_DIM <= 128, and the static ring
// RING * NR * 2 * HEAD_DIM * sizeof(KV_T) bytes within 48 KiB.
//
// Seed lessons (D2's negative results): at 8 bytes per lane per row (f16)
// the LDGSTS path is too narrow to pay for its shared-memory round trip, and
// all three ring depths measured slower than d2 on the seeds' GPU; keep
// them measurable, not landed. The seeds' first probe of this idea reported
// false divergences because it always waited with wait_group RING-1: that
// only guarantees the oldest window when RING groups are in flight. The
// tail of a runtime trip count has fewer, so the wait below counts the
// groups actually pending.
#include "abi.cuh"
#include "combine.cuh"

#ifndef NR
#define NR 4
#endif
#ifndef RING
#define RING 2
#endif
#if RING < 2 || RING > 4
#error "RING must be 2, 3 or 4"
#endif

__device__ __forceinline__ unsigned kt_smem_addr(const void* p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}

// kt_cp_async4 copies 4 elements (one lane's dims of one row) to shared.
__device__ __forceinline__ void kt_cp_async4(float* dst, const float* src) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(kt_smem_addr(dst)), "l"(src) : "memory");
}
__device__ __forceinline__ void kt_cp_async4(kt_half* dst, const kt_half* src) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(kt_smem_addr(dst)), "l"(src) : "memory");
}

__device__ __forceinline__ void kt_cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

// kt_cp_async_wait leaves at most `pending` of this thread's newest groups
// in flight, so every older group has landed. wait_group takes an
// immediate, hence the branches; pending >= RING-1 only occurs with a full
// ring, and the tail falls through to the smaller counts down to 0.
__device__ __forceinline__ void kt_cp_async_wait(int pending) {
    if (pending >= 3)
        asm volatile("cp.async.wait_group 3;" ::: "memory");
    else if (pending == 2)
        asm volatile("cp.async.wait_group 2;" ::: "memory");
    else if (pending == 1)
        asm volatile("cp.async.wait_group 1;" ::: "memory");
    else
        asm volatile("cp.async.wait_group 0;" ::: "memory");
}

// kt_sm_ld4 reads a lane's 4 staged elements back as a float4.
__device__ __forceinline__ float4 kt_sm_ld4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ float4 kt_sm_ld4(const kt_half* p) {
    const uint2 w = *reinterpret_cast<const uint2*>(p);
    return make_float4(kt_e2f((unsigned short)(w.x & 0xffffu)), kt_e2f((unsigned short)(w.x >> 16)),
                       kt_e2f((unsigned short)(w.y & 0xffffu)), kt_e2f((unsigned short)(w.y >> 16)));
}

extern "C" __global__ void attn_partial(const float* __restrict__ q, const KV_T* __restrict__ k,
                                        const KV_T* __restrict__ v, const int* __restrict__ positions,
                                        float* __restrict__ partial, int heads, int kv_heads, int capacity,
                                        float scale) {
    __shared__ __align__(16) KV_T ring_k[RING][NR][HEAD_DIM];
    __shared__ __align__(16) KV_T ring_v[RING][NR][HEAD_DIM];

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
    const int nwin = r.hi > r.lo ? (r.hi - r.lo + NR - 1) / NR : 0;

    // issue copies window w into ring stage w % RING and closes its group.
    auto issue = [&](int w) {
        const int base = r.lo + w * NR;
        const int nr = min(NR, r.hi - base);
        const int slot = w % RING;
#pragma unroll
        for (int j = 0; j < NR; j++) {
            if (live && j < nr) {
                kt_cp_async4(&ring_k[slot][j][d0], kb + (size_t)(base + j) * rstride);
                kt_cp_async4(&ring_v[slot][j][d0], vb + (size_t)(base + j) * rstride);
            }
        }
        kt_cp_async_commit();
    };

    int issued = 0;
    for (; issued < RING - 1 && issued < nwin; issued++) issue(issued);

    kt_state st = kt_state_init();
    for (int w = 0; w < nwin; w++) {
        // Refill the stage consumed in the previous iteration: its values
        // are already in registers and used, so nothing reads it any more.
        if (issued < nwin) issue(issued++);
        kt_cp_async_wait(issued - w - 1);
        // Each lane reads back only the bytes it copied, which the wait
        // alone makes visible; the warp barrier keeps the ring's reuse
        // ordered for the whole warp should the copy mapping ever differ
        // from the read mapping.
        __syncwarp();
        const int base = r.lo + w * NR;
        const int nr = min(NR, r.hi - base);  // warp-uniform
        const int slot = w % RING;
        float4 k4[NR], v4[NR];
#pragma unroll
        for (int j = 0; j < NR; j++) {
            const bool ok = live && j < nr;
            k4[j] = ok ? kt_sm_ld4(&ring_k[slot][j][d0]) : kt_zero4();
            v4[j] = ok ? kt_sm_ld4(&ring_v[slot][j][d0]) : kt_zero4();
        }
        __syncwarp();
#pragma unroll
        for (int j = 0; j < NR; j++) {
            if (j >= nr) break;  // warp-uniform: every lane leaves together
            float corr, e;
            kt_softmax_step(st, kt_row_dot(q4, k4[j]), scale, corr, e);
            if (live) kt_accumulate(st, corr, e, v4[j]);
        }
    }
    kt_write_partial(kt_partial_slot(partial, b, sp, h, heads), st, lane, live);
}
