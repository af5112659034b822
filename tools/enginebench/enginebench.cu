// enginebench — times the engine-form D2 (experiments/engine/d2_engine.cuh)
// with CUDA events, outside ktune, so that ktune's cold number for the same
// kernel can be checked against an independent instrument.
//
// The method mirrors ktune's cold probe: the same shape and buffers (q f32,
// K and V f16 [capacity][kv_heads][head_dim] with random data over the
// whole capacity, positions[0] = nkv - 1), an L2 flush by reading a buffer
// twice the L2 size before every sample (a read, not a memset: a memset's
// dirty lines would be written back inside the timed kernels), then a
// short spin kernel so that the host has queued the timed launches before
// the start event is reached. A sample is the partial + combine pair
// between two events; the median of the samples is printed.
//
// Build and run (experiments/run-engine.sh does both):
//   nvcc -O3 -arch=sm_90 -DATTN_SPLITS=32 -I experiments/engine \
//        -o enginebench tools/enginebench/enginebench.cu
//   ./enginebench --nkv 32768 --samples 100
#include "d2_engine.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

// flush_read reads n float4s and stores only if their sum is exactly a
// value random data never gives, so the reads cannot be optimised away and
// no line is left dirty.
__global__ void flush_read(const float4* __restrict__ p, size_t n, float* sink) {
    float acc = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float4 x = p[i];
        acc += x.x + x.y + x.z + x.w;
    }
    if (acc == 1234.5678f) *sink = acc;
}

// spin holds the stream for about ns nanoseconds of %globaltimer time.
__global__ void spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (t - t0 < ns);
}

// lcg fills host memory with reproducible values in [-1, 1).
static float next(unsigned long long* s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)((*s >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
}

int main(int argc, char** argv) {
    int nkv = 32768, samples = 100, warmup = 5;
    const int heads = 28, kv_heads = 4, hd = 128;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--nkv")) nkv = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--samples")) samples = atoi(argv[i + 1]);
        else {
            fprintf(stderr, "usage: enginebench [--nkv N] [--samples N]\n");
            return 2;
        }
    }
    const int capacity = nkv, pstr = hd + 4;
    const size_t kvElems = (size_t)capacity * kv_heads * hd;

    int dev = 0, l2 = 0;
    CHECK(cudaGetDevice(&dev));
    CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
    cudaDeviceProp prop;
    CHECK(cudaGetDeviceProperties(&prop, dev));

    unsigned long long seed = 1;
    std::vector<float> hq((size_t)heads * hd);
    for (auto& x : hq) x = next(&seed);
    std::vector<__half> hkv(kvElems);
    float *q, *partial, *out, *sink;
    __half *k, *v;
    int* positions;
    CHECK(cudaMalloc(&q, hq.size() * 4));
    CHECK(cudaMalloc(&k, kvElems * 2));
    CHECK(cudaMalloc(&v, kvElems * 2));
    CHECK(cudaMalloc(&positions, 4));
    CHECK(cudaMalloc(&partial, (size_t)ATTN_SPLITS * heads * pstr * 4));
    CHECK(cudaMalloc(&out, (size_t)heads * hd * 4));
    CHECK(cudaMalloc(&sink, 4));
    CHECK(cudaMemcpy(q, hq.data(), hq.size() * 4, cudaMemcpyHostToDevice));
    for (__half* dst : {k, v}) {
        for (auto& x : hkv) x = __float2half(next(&seed));
        CHECK(cudaMemcpy(dst, hkv.data(), kvElems * 2, cudaMemcpyHostToDevice));
    }
    const int pos = nkv - 1;
    CHECK(cudaMemcpy(positions, &pos, 4, cudaMemcpyHostToDevice));

    const size_t flushBytes = 2 * (size_t)l2;
    float4* flush;
    CHECK(cudaMalloc(&flush, flushBytes));
    CHECK(cudaMemset(flush, 0, flushBytes));

    cudaStream_t s;
    CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    cudaEvent_t start, stop;
    CHECK(cudaEventCreate(&start));
    CHECK(cudaEventCreate(&stop));
    const float scale = 1.0f / sqrtf((float)hd);
    auto pair = [&]() {
        gqa_attn_split_partial<__half, 4><<<dim3(ATTN_SPLITS, heads, 1), 32, 0, s>>>(
            q, k, v, positions, partial, heads, kv_heads, hd, capacity, kv_heads * hd, pstr, scale);
        gqa_attn_split_combine<<<dim3(heads, 1), hd, 0, s>>>(partial, out, heads, hd, pstr);
    };

    std::vector<float> us;
    for (int i = 0; i < warmup + samples; i++) {
        flush_read<<<4 * prop.multiProcessorCount, 256, 0, s>>>(flush, flushBytes / 16, sink);
        spin<<<1, 1, 0, s>>>(20000);
        CHECK(cudaEventRecord(start, s));
        pair();
        CHECK(cudaEventRecord(stop, s));
        CHECK(cudaEventSynchronize(stop));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, start, stop));
        if (i >= warmup) us.push_back(ms * 1000.0f);
    }
    CHECK(cudaGetLastError());
    std::sort(us.begin(), us.end());
    const size_t n = us.size();
    const float med = n % 2 ? us[n / 2] : 0.5f * (us[n / 2 - 1] + us[n / 2]);
    printf("enginebench: %s, d2_engine<__half, 4> + combine, 28/4/128 f16, batch 1, SPLITS %d, nkv %d: "
           "median %.1f us over %zu samples (min %.1f, max %.1f; L2 %d MiB, flush %zu MiB)\n",
           prop.name, ATTN_SPLITS, nkv, med, n, us.front(), us.back(), l2 >> 20, flushBytes >> 20);
    return 0;
}
