// kfront: a standalone check-and-time harness for the frontier kernels
// (kernels/gqa.cu, kernels/mma.cu) on one NVIDIA GPU.
//
// It compiles each kernel configuration at run time with NVRTC, exactly as
// ktune does (same sources, same -D defines, sm_90 CUBIN), so one binary
// sweeps SPLITS/NR/WARPS/MINROWS without a rebuild. For every configuration
// it
//   - checks out against a float64 CPU reference at nkv in {1, 29, 52, 512,
//     1641, SPLITS-1, SPLITS+1, MINROWS*SPLITS +- 1, 32768, 131072} (batch 1)
//     and for a ragged batch of 16 sequences, with the K/V rows past each
//     sequence's end set to NaN (a kernel that reads them fails) and the
//     partial and out buffers pre-filled with NaN (a slot not written fails);
//   - times partial+combine with CUDA events, L2 flushed before each sample
//     (a 2 x L2 memset, as ktune's cold probe does; and, for comparison, a
//     2 x L2 read, which leaves L2 clean instead of dirty), median of 30.
//
// Build and run: see run.sh. Usage: kfront KERNELS_DIR [quick]
// (problem.h holds the data generators and the float64 reference.)
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define CK(x)                                                                   \
    do {                                                                        \
        CUresult r_ = (x);                                                      \
        if (r_ != CUDA_SUCCESS) {                                               \
            const char* s_ = "?";                                               \
            cuGetErrorString(r_, &s_);                                          \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x, s_);     \
            exit(1);                                                            \
        }                                                                       \
    } while (0)

static const int HEADS = 28, KVH = 4, HD = 128, PSTR = HD + 4;
static const double READ_BW = 4.56e12;  // measured streaming read, H200.md

// ---------------------------------------------------------------- utilities

static std::string readFile(const std::string& path) {
    std::ifstream f(path);
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path.c_str());
        exit(1);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

static float halfToFloat(uint16_t h) {
    const uint32_t s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0)
        v = std::ldexp((float)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = std::ldexp((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}

typedef std::vector<std::pair<std::string, std::string>> Defines;

struct Module {
    bool ok = false;
    std::string log;
    CUmodule mod = nullptr;
    CUfunction partial = nullptr, combine = nullptr;
    int regs = 0, local = 0, sshared = 0;
};

static std::vector<char> nvrtcCompile(const std::string& src, const std::string& name, const std::string& incDir,
                                      const Defines& defs, std::string& log) {
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
        log = "nvrtcCreateProgram failed";
        return {};
    }
    std::vector<std::string> opts = {"--gpu-architecture=sm_90", "-lineinfo", "--std=c++17", "-I" + incDir};
    for (auto& d : defs) opts.push_back("-D" + d.first + "=" + d.second);
    std::vector<const char*> cops;
    for (auto& o : opts) cops.push_back(o.c_str());
    nvrtcResult rc = nvrtcCompileProgram(prog, (int)cops.size(), cops.data());
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    log.assign(n, '\0');
    if (n) nvrtcGetProgramLog(prog, &log[0]);
    std::vector<char> cubin;
    if (rc == NVRTC_SUCCESS) {
        nvrtcGetCUBINSize(prog, &n);
        cubin.resize(n);
        nvrtcGetCUBIN(prog, cubin.data());
    }
    nvrtcDestroyProgram(&prog);
    return cubin;
}

static Module build(const std::string& dir, const std::string& file, const Defines& defs) {
    Module m;
    std::vector<char> cubin = nvrtcCompile(readFile(dir + "/" + file), file, dir, defs, m.log);
    if (cubin.empty()) return m;
    CK(cuModuleLoadData(&m.mod, cubin.data()));
    CK(cuModuleGetFunction(&m.partial, m.mod, "attn_partial"));
    CK(cuModuleGetFunction(&m.combine, m.mod, "attn_combine"));
    CK(cuFuncGetAttribute(&m.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, m.partial));
    CK(cuFuncGetAttribute(&m.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, m.partial));
    CK(cuFuncGetAttribute(&m.sshared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, m.partial));
    m.ok = true;
    return m;
}

#include "problem.h"

// ---------------------------------------------------------------- configs

struct Config {
    std::string file;
    int splits, nr, warps, minrows;
    int pf = 1;  // mma.cu only
    int kvf16 = 1;
    std::string name() const {
        char b[128];
        snprintf(b, sizeof b, "%s S=%d NR=%d W=%d MIN=%d%s%s", file.c_str(), splits, nr, warps, minrows,
                 file == "mma.cu" ? (pf ? " PF" : " noPF") : "", kvf16 ? "" : " f32");
        return b;
    }
    Defines defines() const {
        return {{"HEAD_DIM", "128"},
                {"KV_F16", std::to_string(kvf16)},
                {"SPLITS", std::to_string(splits)},
                {"NR", std::to_string(nr)},
                {"WARPS", std::to_string(warps)},
                {"MINROWS", std::to_string(minrows)},
                {"PF", std::to_string(pf)}};
    }
};

static void launchPair(const Module& m, const Config& c, const Problem& P, CUdeviceptr k, CUdeviceptr v, int cap,
                       CUstream st) {
    int heads = HEADS, kvh = KVH;
    float scale = 1.0f / std::sqrt((float)HD);
    CUdeviceptr q = P.q, pos = P.pos, part = P.partial, out = P.out;
    void* a[] = {&q, &k, &v, &pos, &part, &heads, &kvh, &cap, &scale};
    CK(cuLaunchKernel(m.partial, c.splits, KVH, P.batch, 32 * c.warps, 1, 1, 0, st, a, nullptr));
    void* b[] = {&part, &out, &heads};
    CK(cuLaunchKernel(m.combine, HEADS, P.batch, 1, HD, 1, 1, 0, st, b, nullptr));
}

struct Err {
    double abs = 0, rel = 0;
    long nan = 0;
    int shown = 0;
};

// runCheck launches once with NaN-filled partial/out and compares to ref.
static Err runCheck(const Module& m, const Config& c, Problem& P, const std::vector<int>& lens,
                    const std::vector<double>& ref, CUdeviceptr k, CUdeviceptr v, int cap) {
    std::vector<int> pos(P.batch);
    for (int b = 0; b < P.batch; b++) pos[b] = lens[b] - 1;
    CK(cuMemcpyHtoD(P.pos, pos.data(), P.batch * 4));
    CK(cuMemsetD32(P.partial, 0xffffffffu, (size_t)P.batch * c.splits * HEADS * PSTR));
    CK(cuMemsetD32(P.out, 0xffffffffu, (size_t)P.batch * HEADS * HD));
    launchPair(m, c, P, k, v, cap, 0);
    CK(cuCtxSynchronize());
    std::vector<float> out((size_t)P.batch * HEADS * HD);
    CK(cuMemcpyDtoH(out.data(), P.out, out.size() * 4));
    Err e;
    for (int bh = 0; bh < P.batch * HEADS; bh++) {
        double mref = 0;
        for (int i = 0; i < HD; i++) mref = std::max(mref, std::fabs(ref[(size_t)bh * HD + i]));
        for (int i = 0; i < HD; i++) {
            const size_t x = (size_t)bh * HD + i;
            const double d = std::fabs(out[x] - ref[x]);
            if ((!std::isfinite(out[x]) || d > 2e-2) && e.shown < 6) {
                // where it goes wrong says which mapping is off
                printf("      b %d head %d dim %d: got %g want %g\n", bh / HEADS, bh % HEADS, i, out[x], ref[x]);
                e.shown++;
            }
            if (!std::isfinite(out[x])) {
                e.nan++;
                continue;
            }
            e.abs = std::max(e.abs, d);
            // relative to the element where it is not tiny against its row,
            // else to the row's largest magnitude
            e.rel = std::max(e.rel, d / std::max(std::fabs(ref[x]), 0.05 * mref));
        }
    }
    return e;
}

struct Timing {
    double total = 0, part = 0;
};

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static Timing runTime(const Module& m, const Config& c, Problem& P, const std::vector<int>& lens, CUdeviceptr flush,
                      size_t flushBytes, bool readFlush, const Util& U, CUdeviceptr sink) {
    std::vector<int> pos(P.batch);
    for (int b = 0; b < P.batch; b++) pos[b] = lens[b] - 1;
    CK(cuMemcpyHtoD(P.pos, pos.data(), P.batch * 4));
    CUevent e0, e1, e2;
    CK(cuEventCreate(&e0, 0));
    CK(cuEventCreate(&e1, 0));
    CK(cuEventCreate(&e2, 0));
    for (int i = 0; i < 3; i++) launchPair(m, c, P, P.k, P.v, P.cap, 0);
    std::vector<double> tt, tp;
    for (int s = 0; s < 30; s++) {
        if (readFlush) {
            unsigned long long n = flushBytes / 16;
            void* a[] = {&flush, &n, &sink};
            CK(cuLaunchKernel(U.readFlush, 132 * 16, 1, 1, 512, 1, 1, 0, 0, a, nullptr));
        } else {
            CK(cuMemsetD8Async(flush, (unsigned char)s, flushBytes, 0));
        }
        CK(cuEventRecord(e0, 0));
        int heads = HEADS, kvh = KVH, cap = P.cap;
        float scale = 1.0f / std::sqrt((float)HD);
        CUdeviceptr q = P.q, k = P.k, v = P.v, ps = P.pos, part = P.partial, out = P.out;
        void* a[] = {&q, &k, &v, &ps, &part, &heads, &kvh, &cap, &scale};
        CK(cuLaunchKernel(m.partial, c.splits, KVH, P.batch, 32 * c.warps, 1, 1, 0, 0, a, nullptr));
        CK(cuEventRecord(e1, 0));
        void* b[] = {&part, &out, &heads};
        CK(cuLaunchKernel(m.combine, HEADS, P.batch, 1, HD, 1, 1, 0, 0, b, nullptr));
        CK(cuEventRecord(e2, 0));
        CK(cuEventSynchronize(e2));
        float a01, a02;
        CK(cuEventElapsedTime(&a01, e0, e1));
        CK(cuEventElapsedTime(&a02, e0, e2));
        tp.push_back(a01 * 1e3);
        tt.push_back(a02 * 1e3);
    }
    cuEventDestroy(e0);
    cuEventDestroy(e1);
    cuEventDestroy(e2);
    return {median(tt), median(tp)};
}

static double kvBytes(const std::vector<int>& lens) {
    double n = 0;
    for (int l : lens) n += l;
    return n * 2.0 * KVH * HD * 2.0;
}

// ---------------------------------------------------------------- main

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: kfront KERNELS_DIR [quick]\n");
        return 2;
    }
    const std::string dir = argv[1];
    const bool quick = argc > 2 && std::string(argv[2]) == "quick";
    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    char devName[256];
    CK(cuDeviceGetName(devName, sizeof devName, dev));
    int l2 = 0, sms = 0;
    CK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
    CK(cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev));
    printf("device %s, %d SMs, L2 %d MB\n", devName, sms, l2 >> 20);

    Util U;
    {
        std::string log;
        std::vector<char> cubin = nvrtcCompile(kUtilSrc, "util", dir, {}, log);
        if (cubin.empty()) {
            fprintf(stderr, "util compile failed:\n%s\n", log.c_str());
            return 1;
        }
        CK(cuModuleLoadData(&U.mod, cubin.data()));
        CK(cuModuleGetFunction(&U.genF16, U.mod, "gen_f16"));
        CK(cuModuleGetFunction(&U.genF32, U.mod, "gen_f32"));
        CK(cuModuleGetFunction(&U.fillU16, U.mod, "fill_u16"));
        CK(cuModuleGetFunction(&U.h2f, U.mod, "h2f"));
        CK(cuModuleGetFunction(&U.readFlush, U.mod, "read_flush"));
    }

    std::vector<Config> configs = {
        // The first sweep (no prefetch) measured NR=2 and SPLITS >= 128
        // slower everywhere (more registers, a costlier combine); this one
        // compares prefetch against the best of those and sweeps SPLITS
        // where the block count meets the 132 SMs. It found PF=1 no faster
        // at batch 1 and 16% slower at batch 16, hence mma's PF=0 default.
        {"gqa.cu", 64, 4, 4, 128},   {"gqa.cu", 32, 4, 8, 256},   {"gqa.cu", 16, 4, 8, 512},
        {"mma.cu", 66, 1, 8, 256, 0}, {"mma.cu", 64, 1, 4, 128, 0},
        {"mma.cu", 64, 1, 4, 128},   {"mma.cu", 66, 1, 8, 256},   {"mma.cu", 33, 1, 8, 256},
        {"mma.cu", 32, 1, 8, 256},   {"mma.cu", 32, 1, 4, 512},   {"mma.cu", 16, 1, 4, 512},
        {"mma.cu", 16, 1, 8, 512},   {"mma.cu", 128, 1, 4, 128},
    };
    if (quick) configs.resize(1);

    const unsigned seed = 1234;
    Problem P1, P16;
    genProblem(P1, U, 1, 131072, seed);
    genProblem(P16, U, 16, 131072, seed + 10);
    // Ragged lengths: the check values of the brief, split boundaries of
    // the common SPLITS, and both extremes.
    const std::vector<int> rag = {1, 29, 52, 512, 1641, 63, 65, 127, 129, 8191, 16385, 32768, 131072, 7777, 255, 4097};
    for (int b = 0; b < 16; b++) {
        rowsFill(P16, U, b, rag[b], P16.cap, true, 0, false);
        rowsFill(P16, U, b, rag[b], P16.cap, true, 0, true);
    }
    CK(cuCtxSynchronize());
    // An f32 copy of the batch-1 K/V for gqa's KV_F16=0 path (first 4096 rows).
    const int cap32 = 4096;
    CUdeviceptr k32, v32;
    {
        unsigned long long n = (unsigned long long)cap32 * KVH * HD;
        CK(cuMemAlloc(&k32, n * 4));
        CK(cuMemAlloc(&v32, n * 4));
        void* a[] = {&P1.k, &k32, &n};
        launch1d(U.h2f, a);
        void* b[] = {&P1.v, &v32, &n};
        launch1d(U.h2f, b);
        CK(cuCtxSynchronize());
    }
    const size_t flushBytes = 2 * (size_t)l2;
    CUdeviceptr flush, sink;
    CK(cuMemAlloc(&flush, flushBytes));
    CK(cuMemAlloc(&sink, 4));
    CK(cuMemsetD8(flush, 1, flushBytes));

    std::vector<std::string> failures;
    std::map<std::string, Module> mods;  // compiled once, by config name

    for (float qamp : {4.0f, 16.0f}) {
        setQ(P1, U, qamp, seed + 100);
        setQ(P16, U, qamp, seed + 200);
        printf("\n== correctness, q ~ U(-%g, %g), k, v ~ U(-1, 1) (scores' std ~ %.1f)\n", qamp, qamp,
               qamp * std::sqrt(128.0 / 9.0) / std::sqrt(128.0));
        std::map<int, std::vector<double>> refs1;
        const std::vector<double> ref16 = reference(P16, rag);
        std::vector<Config> all = configs;
        if (!quick) all.push_back({"gqa.cu", 64, 4, 4, 128, 1, 0});
        for (const Config& c : all) {
            if (!mods.count(c.name())) mods[c.name()] = build(dir, c.file, c.defines());
            const Module& m = mods[c.name()];
            if (!m.ok) {
                printf("%-34s COMPILE FAILED\n%s\n", c.name().c_str(), m.log.c_str());
                failures.push_back(c.name() + ": compile");
                continue;
            }
            printf("%-34s regs %d local %d static-smem %d\n", c.name().c_str(), m.regs, m.local, m.sshared);
            std::vector<int> nkvs = {1, 29, 52, 512, 1641, c.splits - 1, c.splits + 1};
            if (c.kvf16) {
                for (int x : {c.minrows * c.splits - 1, c.minrows * c.splits + 1, 32768, 131072})
                    if (x <= P1.cap) nkvs.push_back(x);
            } else {
                nkvs.push_back(cap32);
            }
            double worstAbs = 0, worstRel = 0;
            for (int n : nkvs) {
                if (n < 1) continue;
                if (!refs1.count(n)) refs1[n] = reference(P1, {n});
                CUdeviceptr k = P1.k, v = P1.v;
                if (!c.kvf16) {
                    k = k32;
                    v = v32;
                }
                const int pend = std::min(P1.cap, n + 64);
                if (c.kvf16) {
                    rowsFill(P1, U, 0, n, pend, true, seed, false);
                    rowsFill(P1, U, 0, n, pend, true, seed, true);
                }
                Err e = runCheck(m, c, P1, {n}, refs1[n], k, v, c.kvf16 ? P1.cap : cap32);
                if (c.kvf16) {
                    rowsFill(P1, U, 0, n, pend, false, seed, false);
                    rowsFill(P1, U, 0, n, pend, false, seed, true);
                    CK(cuCtxSynchronize());
                }
                worstAbs = std::max(worstAbs, e.abs);
                worstRel = std::max(worstRel, e.rel);
                const bool bad = e.nan > 0 || e.abs > 2e-2;
                if (bad || n == 32768 || n == 1) printf("   b1 nkv %6d  max abs %.3e  rel %.3e  nonfinite %ld%s\n", n, e.abs, e.rel, e.nan, bad ? "  FAIL" : "");
                if (bad) failures.push_back(c.name() + " nkv " + std::to_string(n));
            }
            if (c.kvf16) {
                Err e = runCheck(m, c, P16, rag, ref16, P16.k, P16.v, P16.cap);
                const bool bad = e.nan > 0 || e.abs > 2e-2;
                printf("   b16 ragged    max abs %.3e  rel %.3e  nonfinite %ld%s\n", e.abs, e.rel, e.nan, bad ? "  FAIL" : "");
                if (bad) failures.push_back(c.name() + " b16 ragged");
                worstAbs = std::max(worstAbs, e.abs);
                worstRel = std::max(worstRel, e.rel);
            }
            printf("   worst over all nkv: abs %.3e rel %.3e\n", worstAbs, worstRel);
        }
    }

    // Timing (q amplitude does not matter for time).
    printf("\n== timing: partial+combine, CUDA events, L2 flushed by a 2xL2 memset before each sample, median of 30\n");
    printf("%-34s %8s %5s %10s %10s %7s %10s\n", "config", "nkv", "batch", "total us", "partial us", "%BW", "readflush");
    struct Case {
        int batch, nkv;
    };
    std::vector<Case> cases = {{1, 2048}, {1, 8192}, {1, 32768}, {1, 131072}, {16, 8192}, {16, 32768}};
    // Restore the batch-16 tails for timing at uniform length 32768.
    for (int b = 0; b < 16; b++) {
        rowsFill(P16, U, b, rag[b], P16.cap, false, seed + 10, false);
        rowsFill(P16, U, b, rag[b], P16.cap, false, seed + 10, true);
    }
    CK(cuCtxSynchronize());
    for (const Config& c : configs) {
        const Module& m = mods[c.name()];
        if (!m.ok) continue;
        for (const Case& cs : cases) {
            Problem& P = cs.batch == 1 ? P1 : P16;
            std::vector<int> lens(cs.batch, cs.nkv);
            Timing t = runTime(m, c, P, lens, flush, flushBytes, false, U, sink);
            Timing tr = runTime(m, c, P, lens, flush, flushBytes, true, U, sink);
            const double bw = kvBytes(lens) / (t.total * 1e-6) / READ_BW * 100;
            printf("%-34s %8d %5d %10.1f %10.1f %6.0f%% %10.1f\n", c.name().c_str(), cs.nkv, cs.batch, t.total,
                   t.part, bw, tr.total);
        }
    }
    printf("\nfloor (K+V bytes / 4.56 TB/s):");
    for (const Case& cs : cases)
        printf("  b%d/%d %.1f us", cs.batch, cs.nkv, kvBytes(std::vector<int>(cs.batch, cs.nkv)) / READ_BW * 1e6);
    printf("\n\n%s: %zu failures\n", failures.empty() ? "PASS" : "FAIL", failures.size());
    for (auto& f : failures) printf("  %s\n", f.c_str());
    return failures.empty() ? 0 : 1;
}
