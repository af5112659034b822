// problem.h: kfront's test data. The device generators (hashed uniform
// values, NaN poison, f16 -> f32 copies, the read flush) compiled with NVRTC,
// the Problem (K/V, q, positions, partial and out of one batch, with host
// copies) and the float64 reference. Included by kfront.cu only: it relies on
// its includes, CK and the shape constants.
#pragma once

// Data generators, poison and the read flush, compiled once with NVRTC.
static const char* kUtilSrc = R"(
__device__ unsigned hash32(unsigned long long i, unsigned seed) {
    unsigned x = (unsigned)(i ^ (i >> 32)) * 0x9E3779B1u ^ seed;
    x ^= x >> 16; x *= 0x85EBCA6Bu; x ^= x >> 13; x *= 0xC2B2AE35u; x ^= x >> 16;
    return x;
}
__device__ float unif(unsigned long long i, unsigned seed) {  // [-1, 1)
    return (float)(hash32(i, seed) >> 8) * (2.0f / 16777216.0f) - 1.0f;
}
extern "C" __global__ void gen_f16(unsigned short* p, unsigned long long lo, unsigned long long hi, unsigned seed, float amp) {
    for (unsigned long long i = lo + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < hi;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        unsigned short h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(unif(i, seed) * amp));
        p[i] = h;
    }
}
extern "C" __global__ void gen_f32(float* p, unsigned long long n, unsigned seed, float amp) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = unif(i, seed) * amp;
}
extern "C" __global__ void fill_u16(unsigned short* p, unsigned long long lo, unsigned long long hi, unsigned short v) {
    for (unsigned long long i = lo + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < hi;
         i += (unsigned long long)gridDim.x * blockDim.x)
        p[i] = v;
}
extern "C" __global__ void h2f(const unsigned short* s, float* d, unsigned long long n) {
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(s[i]));
        d[i] = f;
    }
}
extern "C" __global__ void read_flush(const uint4* p, unsigned long long n, unsigned* sink) {
    unsigned acc = 0;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) {
        uint4 v = p[i];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) *sink = acc;
}
)";

struct Util {
    CUmodule mod;
    CUfunction genF16, genF32, fillU16, h2f, readFlush;
};

static void launch1d(CUfunction f, void** args) {
    CK(cuLaunchKernel(f, 132 * 8, 1, 1, 256, 1, 1, 0, 0, args, nullptr));
}

// ---------------------------------------------------------------- problem

// A Problem is one batch of sequences: device K/V (f16), q, host copies and
// the per-sequence lengths the reference was computed for.
struct Problem {
    int batch, cap;
    CUdeviceptr k, v, q, pos, partial, out;
    CUdeviceptr scratch;  // fused kernels' arrival counters, batch x KVH, zero between launches
    std::vector<uint16_t> hk, hv;
    std::vector<float> hq;
    size_t kvElems() const { return (size_t)batch * cap * KVH * HD; }
};

static void genProblem(Problem& P, const Util& U, int batch, int cap, unsigned seed) {
    P.batch = batch;
    P.cap = cap;
    const size_t n = P.kvElems();
    CK(cuMemAlloc(&P.k, n * 2));
    CK(cuMemAlloc(&P.v, n * 2));
    CK(cuMemAlloc(&P.q, (size_t)batch * HEADS * HD * 4));
    CK(cuMemAlloc(&P.pos, batch * 4));
    CK(cuMemAlloc(&P.partial, (size_t)batch * 256 * HEADS * PSTR * 4));
    CK(cuMemAlloc(&P.out, (size_t)batch * HEADS * HD * 4));
    CK(cuMemAlloc(&P.scratch, (size_t)batch * KVH * 4));
    CK(cuMemsetD32(P.scratch, 0, (size_t)batch * KVH));
    unsigned long long lo = 0, hi = n;
    float amp = 1.0f;
    unsigned sk = seed, sv = seed + 1;
    void* ak[] = {&P.k, &lo, &hi, &sk, &amp};
    launch1d(U.genF16, ak);
    void* av[] = {&P.v, &lo, &hi, &sv, &amp};
    launch1d(U.genF16, av);
    CK(cuCtxSynchronize());
    P.hk.resize(n);
    P.hv.resize(n);
    CK(cuMemcpyDtoH(P.hk.data(), P.k, n * 2));
    CK(cuMemcpyDtoH(P.hv.data(), P.v, n * 2));
}

static void setQ(Problem& P, const Util& U, float amp, unsigned seed) {
    unsigned long long n = (unsigned long long)P.batch * HEADS * HD;
    void* a[] = {&P.q, &n, &seed, &amp};
    launch1d(U.genF32, a);
    CK(cuCtxSynchronize());
    P.hq.resize(n);
    CK(cuMemcpyDtoH(P.hq.data(), P.q, n * 4));
}

// Rows [from, to) of sequence b set to NaN (poison) or regenerated.
static void rowsFill(Problem& P, const Util& U, int b, int from, int to, bool poison, unsigned seed, bool isV) {
    if (from >= to) return;
    unsigned long long lo = ((size_t)b * P.cap + from) * KVH * HD, hi = ((size_t)b * P.cap + to) * KVH * HD;
    CUdeviceptr p = isV ? P.v : P.k;
    if (poison) {
        unsigned short nan = 0x7e00;
        void* a[] = {&p, &lo, &hi, &nan};
        launch1d(U.fillU16, a);
    } else {
        float amp = 1.0f;
        unsigned s = isV ? seed + 1 : seed;
        void* a[] = {&p, &lo, &hi, &s, &amp};
        launch1d(U.genF16, a);
    }
}

// reference computes out[b][h][*] in float64 for the given lengths.
static std::vector<double> reference(const Problem& P, const std::vector<int>& lens) {
    static std::vector<float> lut;
    if (lut.empty()) {
        lut.resize(65536);
        for (int i = 0; i < 65536; i++) lut[i] = halfToFloat((uint16_t)i);
    }
    std::vector<double> out((size_t)P.batch * HEADS * HD);
    const int group = HEADS / KVH;
    const double scale = 1.0 / std::sqrt((double)HD);
    auto work = [&](int item) {
        const int b = item / HEADS, h = item % HEADS, kh = h / group, n = lens[b];
        const float* q = &P.hq[((size_t)b * HEADS + h) * HD];
        std::vector<double> s(n);
        double mx = -INFINITY;
        for (int r = 0; r < n; r++) {
            const uint16_t* kr = &P.hk[(((size_t)b * P.cap + r) * KVH + kh) * HD];
            double d = 0;
            for (int i = 0; i < HD; i++) d += (double)q[i] * lut[kr[i]];
            s[r] = d * scale;
            mx = std::max(mx, s[r]);
        }
        std::vector<double> acc(HD, 0.0);
        double sum = 0;
        for (int r = 0; r < n; r++) {
            const double w = std::exp(s[r] - mx);
            sum += w;
            const uint16_t* vr = &P.hv[(((size_t)b * P.cap + r) * KVH + kh) * HD];
            for (int i = 0; i < HD; i++) acc[i] += w * lut[vr[i]];
        }
        for (int i = 0; i < HD; i++) out[((size_t)b * HEADS + h) * HD + i] = acc[i] / sum;
    };
    const int items = P.batch * HEADS;
    const int nt = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> th;
    for (int t = 0; t < nt; t++)
        th.emplace_back([&, t] {
            for (int i = t; i < items; i += nt) work(i);
        });
    for (auto& x : th) x.join();
    return out;
}
