// xqa_tma.cu: a single-pass decode over a paged K/V cache that takes its
// arguments the way TensorRT-LLM's XQA kernels do: plain arguments (the
// KV head count, the q scale, the output, q, the sinks), a 32-byte
// cache-list struct by value (the K and V page pools, the page list
// [batch][max pages] and the sequence lengths), the batch size, the fp8
// cache scale (null: f16), a CUtensorMap over the K pool as a
// __grid_constant__ parameter, and the multi-block semaphores and scratch
// (null: one block per head). Its dynamic shared memory is the module
// variable smemSize, which the host reads before the launch, as XQA's
// launcher does.
//
// Layout: NHD pages [num_pages][PAGE_SIZE][kv_heads][HEAD_DIM]; sequence
// b's token t lies in page pageList[b][t / PAGE_SIZE], row t % PAGE_SIZE.
// The tensor map is 4-D over the K pool, innermost first (HEAD_DIM,
// kv_heads, PAGE_SIZE, pages), with a box of (HEAD_DIM, 1, PAGE_SIZE, 1):
// one KV head's rows of one page, PAGE_SIZE × HEAD_DIM f16.
//
// Mapping: grid (heads, batch), one warp per block; lane l owns dims l,
// l+32, l+64, l+96 (HEAD_DIM ≤ 128). Per page, lane 0 starts the tensor
// copy of its K tile into shared memory (cp.async.bulk.tensor, completed on
// an mbarrier), every lane waits on the barrier's phase and reads K from
// shared memory; V is read from its pool directly. Built by an NVRTC older
// than 12 (PTX ISA 8.0 brings the bulk tensor copy), the kernel reads K from
// the pool instead and the tensor map is passed but unread. Numerics: an
// online softmax in f32 over f16 K/V (expf, running max), out in f16
// divided once by the sum: the tolerance class.

#ifndef HEAD_DIM
#error HEAD_DIM is passed by ktune
#endif
#ifndef PAGE_SIZE
#error PAGE_SIZE is a define of the spec
#endif
#if defined(__CUDACC_VER_MAJOR__) && __CUDACC_VER_MAJOR__ >= 12 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define XQA_TMA 1
#else
#define XQA_TMA 0
#endif

// CUtensorMap as cuda.h declares it: 128 opaque bytes, 64-aligned. NVRTC
// has no cuda.h, so the type is spelled here.
struct alignas(64) CUtensorMap {
    unsigned long long opaque[16];
};

// The 32-byte cache list.
struct KVCacheList {
    const unsigned short *kPool, *vPool;
    const int *pageList; // [batch][maxNbPagesPerSeq]
    const int *seqLen;   // [batch]
};

__device__ unsigned smemSize = PAGE_SIZE * HEAD_DIM * 2;

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

#if XQA_TMA
__device__ __forceinline__ unsigned smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

// waitParity spins until the barrier's phase of the given parity completes.
__device__ __forceinline__ void waitParity(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
#endif

extern "C" __global__ void __launch_bounds__(32) kernel_mha(
    const unsigned nbKHeads, const float qScale, unsigned short *__restrict__ output,
    const unsigned short *__restrict__ q, const float *attentionSinks, const KVCacheList cacheList,
    const unsigned batchSize, const float *kvCacheScale, const __grid_constant__ CUtensorMap tensorMap,
    const unsigned maxNbPagesPerSeq, unsigned *semaphores, void *scratch) {
    constexpr int PER = (HEAD_DIM + 31) / 32;
    extern __shared__ __align__(128) unsigned short kTile[]; // [PAGE_SIZE][HEAD_DIM]
    const int h = blockIdx.x, b = blockIdx.y, lane = threadIdx.x, heads = gridDim.x;
    const int kvh = h / (heads / (int)nbKHeads);
    const int seqLen = cacheList.seqLen[b];
    const int *pages = cacheList.pageList + (long long)b * maxNbPagesPerSeq;
    const long long rowStride = (long long)nbKHeads * HEAD_DIM, pageStride = PAGE_SIZE * rowStride;
    float qr[PER], acc[PER];
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        qr[i] = d < HEAD_DIM ? h2f(q[((long long)b * heads + h) * HEAD_DIM + d]) * qScale : 0.f;
        acc[i] = 0.f;
    }
#if XQA_TMA
    __shared__ __align__(8) unsigned long long bar;
    if (lane == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem(&bar)) : "memory");
        asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    }
    __syncwarp();
#endif
    float m = __int_as_float(0xff800000), l = 0.f;
    const int nPages = (seqLen + PAGE_SIZE - 1) / PAGE_SIZE;
    for (int pi = 0; pi < nPages; pi++) {
        const int page = pages[pi];
        const int rows = min(PAGE_SIZE, seqLen - pi * PAGE_SIZE);
#if XQA_TMA
        if (lane == 0) {
            // Order this warp's earlier reads of the tile before the copy
            // that overwrites it (the generic and async proxies).
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem(&bar)), "r"(PAGE_SIZE * HEAD_DIM * 2) : "memory");
            asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                         ::"r"(smem(kTile)), "l"((unsigned long long)&tensorMap), "r"(0), "r"(kvh), "r"(0), "r"(page), "r"(smem(&bar))
                         : "memory");
        }
        waitParity(smem(&bar), pi & 1);
        const unsigned short *kp = kTile;
        const long long kRow = HEAD_DIM;
#else
        const unsigned short *kp = cacheList.kPool + page * pageStride + (long long)kvh * HEAD_DIM;
        const long long kRow = rowStride;
#endif
        const unsigned short *vp = cacheList.vPool + page * pageStride + (long long)kvh * HEAD_DIM;
        for (int r = 0; r < rows; r++) {
            float s = 0.f;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int d = lane + 32 * i;
                if (d < HEAD_DIM) s += qr[i] * h2f(kp[r * kRow + d]);
            }
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            const float mn = fmaxf(m, s), c = expf(m - mn), e = expf(s - mn);
            l = l * c + e;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int d = lane + 32 * i;
                acc[i] = acc[i] * c + e * (d < HEAD_DIM ? h2f(vp[r * rowStride + d]) : 0.f);
            }
            m = mn;
        }
        __syncwarp(); // every lane is done with the tile before lane 0 refills it
    }
    if (attentionSinks) l += expf(attentionSinks[h] - m);
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        if (d < HEAD_DIM) output[((long long)b * heads + h) * HEAD_DIM + d] = f2h(acc[i] / l);
    }
}
