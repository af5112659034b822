// kfront: a standalone check-and-time harness for the frontier kernels
// (kernels/gqa.cu, kernels/mma.cu, and mma_fused.cu, the single-launch form
// of the fused ABI) on one NVIDIA GPU.
//
// It compiles each kernel configuration at run time with NVRTC, exactly as
// ktune does (same sources, same -D defines, sm_90 CUBIN), so one binary
// sweeps SPLITS/NR/WARPS/MINROWS/CW/LDH/PF without a rebuild. For every
// configuration it
//   - checks out against a float64 CPU reference at nkv in {1, 29, 52, 512,
//     1641, SPLITS-1, SPLITS+1, MINROWS*SPLITS +- 1, 32768, 131072} (batch 1)
//     and for a ragged batch of 16 sequences, with the K/V rows past each
//     sequence's end set to NaN (a kernel that reads them fails) and the
//     partial and out buffers pre-filled with NaN (a slot not written fails),
//     by the frontier spec's gate: every element within max_abs + max_rel *
//     |ref| (5e-3, 5e-2) and the normalised squared error under 1e-4;
//   - times partial+combine two ways (timing.h): cold (L2 flushed by a
//     read of 2 x L2 before each sample, as ktune's cold probe) and graph
//     (pairs replayed from a captured graph over warm caches).
//
// Mode "fused" checks and times mma_fused.cu against mma.cu at the best
// known tunings and compares the two byte for byte (fusedList()).
//
// Build and run: see run.sh. Usage: kfront KERNELS_DIR [quick|full|fused] [CSV]
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
// The gate of experiments/h200-frontier.yaml: element-wise |out - ref| <=
// GATE_ABS + GATE_REL * |ref|, and sum (out - ref)^2 / sum ref^2 <= GATE_NMSE.
static const double GATE_ABS = 5e-3, GATE_REL = 5e-2, GATE_NMSE = 1e-4;

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

// load loads a compiled CUBIN (empty: the compile failed, log says why).
// A fused module (ABI "Fused kernels") has no attn_combine.
static Module load(const std::vector<char>& cubin, const std::string& log, bool fused) {
    Module m;
    m.log = log;
    if (cubin.empty()) return m;
    CK(cuModuleLoadData(&m.mod, cubin.data()));
    CK(cuModuleGetFunction(&m.partial, m.mod, "attn_partial"));
    if (!fused) CK(cuModuleGetFunction(&m.combine, m.mod, "attn_combine"));
    CK(cuFuncGetAttribute(&m.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, m.partial));
    CK(cuFuncGetAttribute(&m.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, m.partial));
    CK(cuFuncGetAttribute(&m.sshared, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, m.partial));
    m.ok = true;
    return m;
}

#include "problem.h"

// ---------------------------------------------------------------- configs

// A Config is one compiled kernel: the source file and its defines.
struct Config {
    std::string file;
    int splits, nr, warps, minrows;
    int pf = 0;   // mma.cu: register double buffering
    int cw = 1;   // 1: combine_wide.cuh, 0: the shared combine.cuh
    int ldh = 0;  // 1: L1::no_allocate.L2::256B hints on the K/V loads
    int kvf16 = 1;
    int pdl = 0;  // 1: combine launched as a programmatic dependent (KF_PDL builds)
    bool fused() const { return file == "mma_fused.cu"; }
    std::string name() const {
        char b[160];
        snprintf(b, sizeof b, "%s S=%d NR=%d W=%d MIN=%d%s%s%s%s",
                 file == "mma.cu" ? "mma" : fused() ? "mmaf" : "gqa", splits, nr, warps,
                 minrows, pf ? " PF" : "", cw == 1 ? "" : cw == 2 ? " CW2" : " CW0", ldh ? " LDH" : "",
                 kvf16 ? (pdl ? " PDL" : "") : " f32");
        return b;
    }
    Defines defines() const {
        return {{"HEAD_DIM", "128"},
                {"KV_F16", std::to_string(kvf16)},
                {"SPLITS", std::to_string(splits)},
                {"NR", std::to_string(nr)},
                {"WARPS", std::to_string(warps)},
                {"MINROWS", std::to_string(minrows)},
                {"PF", std::to_string(pf)},
                {"CW", std::to_string(cw)},
                {"LDH", std::to_string(ldh)},
                {"PDL", std::to_string(pdl)}};
    }
};

static void launchPartial(const Module& m, const Config& c, const Problem& P, CUdeviceptr k, CUdeviceptr v, int cap,
                          CUstream st) {
    int heads = HEADS, kvh = KVH;
    float scale = 1.0f / std::sqrt((float)HD);
    CUdeviceptr q = P.q, pos = P.pos, part = P.partial, out = P.out, scratch = P.scratch;
    void* a[] = {&q, &k, &v, &pos, &part, &heads, &kvh, &cap, &scale, &out, &scratch};
    CK(cuLaunchKernel(m.partial, c.splits, KVH, P.batch, 32 * c.warps, 1, 1, 0, st, a, nullptr));
}

// launchCombine launches the combine; with c.pdl, as a programmatic
// dependent of the partial launched just before it on the same stream.
static void launchCombine(const Module& m, const Config& c, const Problem& P, CUstream st) {
    if (c.fused()) return;  // the partial kernel wrote out
    int heads = HEADS;
    CUdeviceptr part = P.partial, out = P.out;
    void* b[] = {&part, &out, &heads};
#if KF_PDL
    if (c.pdl) {
        CUlaunchAttribute attr;
        memset(&attr, 0, sizeof attr);
        attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attr.value.programmaticStreamSerializationAllowed = 1;
        CUlaunchConfig lc;
        memset(&lc, 0, sizeof lc);
        lc.gridDimX = HEADS;
        lc.gridDimY = P.batch;
        lc.gridDimZ = 1;
        lc.blockDimX = HD;
        lc.blockDimY = 1;
        lc.blockDimZ = 1;
        lc.sharedMemBytes = 0;
        lc.hStream = st;
        lc.attrs = &attr;
        lc.numAttrs = 1;
        CK(cuLaunchKernelEx(&lc, m.combine, b, nullptr));
        return;
    }
#else
    (void)c;
#endif
    CK(cuLaunchKernel(m.combine, HEADS, P.batch, 1, HD, 1, 1, 0, st, b, nullptr));
}

static void launchPair(const Module& m, const Config& c, const Problem& P, CUdeviceptr k, CUdeviceptr v, int cap,
                       CUstream st) {
    launchPartial(m, c, P, k, v, cap, st);
    launchCombine(m, c, P, st);
}

#include "timing.h"

// An Err is the worst error of one or more checks against the reference.
struct Err {
    double abs = 0, rel = 0, nmse = 0;
    long nan = 0, over = 0;  // nonfinite outputs; elements outside the gate
    int shown = 0;
    bool bad() const { return nan > 0 || over > 0 || nmse > GATE_NMSE; }
    void fold(const Err& e) {
        abs = std::max(abs, e.abs);
        rel = std::max(rel, e.rel);
        nmse = std::max(nmse, e.nmse);
        nan += e.nan;
        over += e.over;
    }
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
    double se = 0, sr = 0;
    for (int bh = 0; bh < P.batch * HEADS; bh++) {
        double mref = 0;
        for (int i = 0; i < HD; i++) mref = std::max(mref, std::fabs(ref[(size_t)bh * HD + i]));
        for (int i = 0; i < HD; i++) {
            const size_t x = (size_t)bh * HD + i;
            const double d = std::fabs(out[x] - ref[x]);
            const bool over = !(d <= GATE_ABS + GATE_REL * std::fabs(ref[x]));  // NaN counts
            if (over && e.shown < 6) {
                // where it goes wrong says which mapping is off
                printf("      b %d head %d dim %d: got %g want %g\n", bh / HEADS, bh % HEADS, i, out[x], ref[x]);
                e.shown++;
            }
            if (!std::isfinite(out[x])) {
                e.nan++;
                continue;
            }
            if (over) e.over++;
            se += d * d;
            sr += ref[x] * ref[x];
            e.abs = std::max(e.abs, d);
            // relative to the element where it is not tiny against its row,
            // else to the row's largest magnitude
            e.rel = std::max(e.rel, d / std::max(std::fabs(ref[x]), 0.05 * mref));
        }
    }
    e.nmse = sr > 0 ? se / sr : se;
    return e;
}

static double kvBytes(const std::vector<int>& lens) {
    double n = 0;
    for (int l : lens) n += l;
    return n * 2.0 * KVH * HD * 2.0;
}

// configList is the sweep. Each entry says what it is there to show. The
// first pass (NOTES-frontier.md) settled WARPS = 8, NR = 1, PF = 0, LDH = 0
// and SPLITS <= 66; this one measures the early-load combine (CW = 2), the
// programmatic dependent launch, and fewer splits for batch 16.
static std::vector<Config> configList() {
    std::vector<Config> v;
    auto mma = [&](int s, int w, int mn, int cw) {
        Config c{"mma.cu", s, 1, w, mn};
        c.cw = cw;
        return c;
    };
    Config c;
    v.push_back(mma(64, 8, 256, 0));  // the state before: shared combine
    v.push_back(mma(64, 8, 256, 1));  // first pass's best at long nkv, again: run-to-run spread
    v.push_back(mma(64, 8, 256, 2));
    v.push_back(mma(64, 8, 128, 2));
    v.push_back(mma(33, 8, 256, 2));
    v.push_back(mma(33, 8, 128, 2));
    v.push_back(mma(16, 8, 1024, 2));  // batch 16: the first pass's best there
    v.push_back(mma(16, 8, 512, 2));
    v.push_back(mma(8, 8, 2048, 2));
    v.push_back(mma(8, 8, 1024, 2));
    v.push_back(mma(16, 4, 1024, 2));
    Config g{"gqa.cu", 32, 4, 8, 256};
    g.cw = 2;
    v.push_back(g);
    // Last: a launch path this harness has not used before.
    c = mma(64, 8, 256, 2), c.pdl = 1, v.push_back(c);
    c = mma(33, 8, 256, 2), c.pdl = 1, v.push_back(c);
    return v;
}

// fusedList pairs each best known mma tuning with its fused form: batch 1
// short (S33 MIN128) and long (S64) contexts, batch 16 short (S8 MIN256
// W4) and long (S8 MIN1024). mma first, mmaf at index + half.
static std::vector<Config> fusedList() {
    std::vector<Config> v;
    for (const char* f : {"mma.cu", "mma_fused.cu"}) {
        for (auto t : std::vector<std::vector<int>>{{33, 8, 128}, {64, 8, 128}, {8, 4, 256}, {8, 8, 1024}}) {
            Config c{f, t[0], 1, t[1], t[2]};
            c.cw = 2;
            v.push_back(c);
        }
    }
    return v;
}

// sameBytes launches mma (a) and mmaf (b) on identical inputs and counts
// the bytes of partial and out that differ. mmaf runs twice over poison:
// the second launch only merges if the first re-armed its counters.
static long sameBytes(const Module& ma, const Config& a, const Module& mb, const Config& b, Problem& P,
                      const std::vector<int>& lens, long* partialDiff) {
    std::vector<int> pos(P.batch);
    for (int i = 0; i < P.batch; i++) pos[i] = lens[i] - 1;
    CK(cuMemcpyHtoD(P.pos, pos.data(), P.batch * 4));
    const size_t np = (size_t)P.batch * a.splits * HEADS * PSTR, no = (size_t)P.batch * HEADS * HD;
    std::vector<uint32_t> pa(np), pb(np), oa(no), ob(no);
    CK(cuMemsetD32(P.partial, 0xffffffffu, np));
    CK(cuMemsetD32(P.out, 0xffffffffu, no));
    launchPair(ma, a, P, P.k, P.v, P.cap, 0);
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(pa.data(), P.partial, np * 4));
    CK(cuMemcpyDtoH(oa.data(), P.out, no * 4));
    for (int rep = 0; rep < 2; rep++) {
        CK(cuMemsetD32(P.partial, 0xffffffffu, np));
        CK(cuMemsetD32(P.out, 0xffffffffu, no));
        launchPair(mb, b, P, P.k, P.v, P.cap, 0);
        CK(cuCtxSynchronize());
    }
    CK(cuMemcpyDtoH(pb.data(), P.partial, np * 4));
    CK(cuMemcpyDtoH(ob.data(), P.out, no * 4));
    long dp = 0, dout = 0;
    for (size_t i = 0; i < np; i++) dp += pa[i] != pb[i];
    for (size_t i = 0; i < no; i++) dout += oa[i] != ob[i];
    *partialDiff = dp;
    return dout;
}

// ---------------------------------------------------------------- main

int main(int argc, char** argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: kfront KERNELS_DIR [quick|full|fused] [CSV]\n");
        return 2;
    }
    const std::string dir = argv[1];
    const bool quick = argc > 2 && std::string(argv[2]) == "quick";
    const bool fusedMode = argc > 2 && std::string(argv[2]) == "fused";
    const std::string csvPath = argc > 3 ? argv[3] : "";
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

    std::vector<Config> configs = fusedMode ? fusedList() : configList();
    if (quick) configs.resize(2);
    std::vector<Config> all = configs;
    if (!quick && !fusedMode) all.push_back({"gqa.cu", 64, 4, 4, 128, 0, 1, 0, 0});  // f32 K/V path: checked, not timed

    // NVRTC compiles on one other thread (one program at a time) while the
    // data is generated below; the modules are loaded afterwards here.
    std::vector<std::string> logs(all.size());
    std::vector<std::vector<char>> cubins(all.size());
    std::thread compiler([&] {
        for (size_t i = 0; i < all.size(); i++)
            cubins[i] = nvrtcCompile(readFile(dir + "/" + all[i].file), all[i].file, dir, all[i].defines(), logs[i]);
    });

    const unsigned seed = 1234;
    Problem P1, P16;
    genProblem(P1, U, 1, 131072, seed);
    genProblem(P16, U, 16, 131072, seed + 10);
    // Ragged lengths: the check values, split boundaries of the common
    // SPLITS, and both extremes.
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
    CUstream gs;
    CK(cuStreamCreate(&gs, CU_STREAM_NON_BLOCKING));

    // The read-bandwidth ceiling, measured here: the flush kernel over the
    // 2.1 GB of batch-16 K (median of 5).
    double readBW = 0;
    {
        CUevent a, b;
        CK(cuEventCreate(&a, 0));
        CK(cuEventCreate(&b, 0));
        const size_t bytes = P16.kvElems() * 2;
        std::vector<double> bw;
        for (int i = 0; i < 6; i++) {
            CK(cuEventRecord(a, 0));
            readFlush(U, P16.k, bytes, sink, 0);
            CK(cuEventRecord(b, 0));
            CK(cuEventSynchronize(b));
            float ms;
            CK(cuEventElapsedTime(&ms, a, b));
            if (i) bw.push_back(bytes / (ms * 1e-3));
        }
        readBW = median(bw);
        printf("read bandwidth (%.2f GB streamed, float4 loads): %.2f TB/s\n", bytes / 1e9, readBW / 1e12);
    }

    compiler.join();
    std::map<std::string, Module> mods;  // by config name
    for (size_t i = 0; i < all.size(); i++) mods[all[i].name()] = load(cubins[i], logs[i], all[i].fused());

    std::vector<std::string> failures;
    for (float qamp : {4.0f, 16.0f}) {
        setQ(P1, U, qamp, seed + 100);
        setQ(P16, U, qamp, seed + 200);
        printf("\n== correctness, q ~ U(-%g, %g), k, v ~ U(-1, 1) (scores' std ~ %.1f)\n", qamp, qamp,
               qamp * std::sqrt(128.0 / 9.0) / std::sqrt(128.0));
        std::map<int, std::vector<double>> refs1;
        const std::vector<double> ref16 = reference(P16, rag);
        for (const Config& c : all) {
            const Module& m = mods[c.name()];
            if (!m.ok) {
                if (qamp == 4.0f) {
                    printf("%-34s COMPILE FAILED\n%s\n", c.name().c_str(), m.log.c_str());
                    failures.push_back(c.name() + ": compile");
                }
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
            Err worst;
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
                worst.fold(e);
                if (e.bad()) {
                    printf("   b1 nkv %6d  max abs %.3e  rel %.3e  nmse %.2e  nonfinite %ld  outside gate %ld  FAIL\n", n,
                           e.abs, e.rel, e.nmse, e.nan, e.over);
                    failures.push_back(c.name() + " nkv " + std::to_string(n));
                }
            }
            if (c.kvf16) {
                Err e = runCheck(m, c, P16, rag, ref16, P16.k, P16.v, P16.cap);
                if (e.bad()) {
                    printf("   b16 ragged  max abs %.3e  rel %.3e  nmse %.2e  nonfinite %ld  outside gate %ld  FAIL\n",
                           e.abs, e.rel, e.nmse, e.nan, e.over);
                    failures.push_back(c.name() + " b16 ragged");
                }
                worst.fold(e);
            }
            printf("   worst over all nkv: abs %.3e rel %.3e nmse %.2e%s\n", worst.abs, worst.rel, worst.nmse,
                   worst.bad() ? "  FAIL" : "");
        }
        if (fusedMode) {
            // mmaf against mma at the same tuning: same inputs, bytes that differ.
            const size_t half = configs.size() / 2;
            for (size_t i = 0; i < half; i++) {
                const Config &a = configs[i], &b = configs[i + half];
                const Module &ma = mods[a.name()], &mb = mods[b.name()];
                if (!ma.ok || !mb.ok) continue;
                long dOut = 0, dPart = 0;
                for (int n : {1, 29, 52, 512, 1641, a.splits - 1, a.splits + 1, a.minrows * a.splits - 1,
                              a.minrows * a.splits + 1, 32768, 131072}) {
                    if (n < 1 || n > P1.cap) continue;
                    long dp = 0;
                    dOut += sameBytes(ma, a, mb, b, P1, {n}, &dp);
                    dPart += dp;
                }
                long dp = 0;
                dOut += sameBytes(ma, a, mb, b, P16, rag, &dp);
                dPart += dp;
                printf("%-34s vs %s: %ld partial and %ld out words differ (b1 gate lengths + b16 ragged)%s\n",
                       b.name().c_str(), a.name().c_str(), dPart, dOut, dPart || dOut ? "  DIFFERENT" : "  identical");
                if (dPart || dOut) failures.push_back(b.name() + " not byte-identical to " + a.name());
            }
        }
    }

    // Timing (q amplitude does not matter for time).
    struct Case {
        int batch, nkv;
    };
    const std::vector<Case> cases =
        fusedMode ? std::vector<Case>{{1, 2048}, {1, 8192}, {1, 32768}, {1, 131072}, {16, 2048}, {16, 8192}, {16, 32768},
                                      {16, 131072}}
                  : std::vector<Case>{{1, 1}, {1, 2048}, {1, 8192}, {1, 32768}, {1, 131072}, {16, 8192}, {16, 32768},
                                      {16, 131072}};
    // Restore the batch-16 tails for timing at uniform lengths.
    for (int b = 0; b < 16; b++) {
        rowsFill(P16, U, b, rag[b], P16.cap, false, seed + 10, false);
        rowsFill(P16, U, b, rag[b], P16.cap, false, seed + 10, true);
    }
    CK(cuCtxSynchronize());
    FILE* csv = csvPath.empty() ? nullptr : fopen(csvPath.c_str(), "w");
    if (csv) fprintf(csv, "config,batch,nkv,cold_us,cold_split_us,partial_us,graph_us,pct_bw_cold\n");
    std::vector<std::vector<Timing>> tab(configs.size());
    printf("\n== timing: cold = read flush + events around the pair, median of 30; partial: its share (an event "
           "between the launches); graph = %d pairs per replay, median of 10\n",
           GRAPH_PAIRS);
    for (size_t ci = 0; ci < configs.size(); ci++) {
        const Config& c = configs[ci];
        const Module& m = mods[c.name()];
        if (!m.ok) continue;
        for (const Case& cs : cases) {
            Problem& P = cs.batch == 1 ? P1 : P16;
            std::vector<int> lens(cs.batch, cs.nkv);
            Timing t = runTime(m, c, P, lens, flush, flushBytes, U, sink, gs);
            tab[ci].push_back(t);
            const double bw = kvBytes(lens) / (t.cold * 1e-6) / readBW * 100;
            if (csv)
                fprintf(csv, "%s,%d,%d,%.2f,%.2f,%.2f,%.2f,%.1f\n", c.name().c_str(), cs.batch, cs.nkv, t.cold,
                        t.split, t.part, t.graph, bw);
        }
        if (csv) fflush(csv);
        printf("%-30s", c.name().c_str());  // as it goes, should the run be cut short
        for (const Timing& t : tab[ci]) printf(" %5.1f/%5.1f/%5.1f", t.cold, t.part, t.graph);
        printf("\n");
        fflush(stdout);
    }
    if (csv) fclose(csv);

    // The table last: the reply carries the end of the output.
    printf("\nfloor (K+V bytes / %.2f TB/s):", readBW / 1e12);
    for (const Case& cs : cases)
        printf(" b%d/%d %.1f", cs.batch, cs.nkv, kvBytes(std::vector<int>(cs.batch, cs.nkv)) / readBW * 1e6);
    printf("\ncold total / partial / graph, us\n%-30s", "config");
    for (const Case& cs : cases) printf(" %17s", (std::string("b") + std::to_string(cs.batch) + "/" + std::to_string(cs.nkv)).c_str());
    printf("\n");
    for (size_t ci = 0; ci < configs.size(); ci++) {
        if (tab[ci].empty()) continue;
        printf("%-30s", configs[ci].name().c_str());
        for (const Timing& t : tab[ci]) printf(" %5.1f/%5.1f/%5.1f", t.cold, t.part, t.graph);
        printf("\n");
    }
    if (fusedMode) {
        // mma against mmaf per tuning and case: cold / graph, us; %BW of cold.
        printf("\nfused vs two launches (cold / graph us, %%BW cold)\n");
        const size_t half = configs.size() / 2;
        for (size_t i = 0; i < half; i++) {
            if (tab[i].empty() || tab[i + half].empty()) continue;
            for (size_t j = 0; j < cases.size(); j++) {
                const Case& cs = cases[j];
                const double by = kvBytes(std::vector<int>(cs.batch, cs.nkv));
                const Timing &a = tab[i][j], &b = tab[i + half][j];
                printf("%-22s b%-2d nkv %6d  mma %7.1f / %7.1f (%5.1f%%)  mmaf %7.1f / %7.1f (%5.1f%%)  delta %+6.1f / %+6.1f\n",
                       configs[i].name().c_str() + 4, cs.batch, cs.nkv, a.cold, a.graph, by / (a.cold * 1e-6) / readBW * 100,
                       b.cold, b.graph, by / (b.cold * 1e-6) / readBW * 100, b.cold - a.cold, b.graph - a.graph);
            }
        }
    }
    printf("\n%s: %zu failures\n", failures.empty() ? "PASS" : "FAIL", failures.size());
    for (auto& f : failures) printf("  %s\n", f.c_str());
    return failures.empty() ? 0 : 1;
}
