// ktime.cu: kcheck's timing mode (kcheck -time). It times partial+combine
// of a list of kernel configurations side by side at the H200 anchor shape
// (batch 1, 28 query heads, 4 KV heads, head_dim 128, f16 K/V, capacity
// 32768) and, for a few of them, under several measurement methods, so that
// a difference between two timings can be pinned either on the kernel or on
// the method.
//
// Methods (each sample is one partial+combine pair unless stated):
//   memset   2 x L2 of cuMemsetD32Async before the sample, CUDA events
//            around the pair, the host enqueuing as the device runs (how
//            the seeds' anchors were taken);
//   blocked  memset flush, then a spin kernel holds the stream until the
//            host has enqueued the events and the pair (ktune's cold probe);
//   clean    blocked, but the flush reads 2 x L2 instead of writing it, so
//            L2 holds clean lines and no write-back overlaps the kernels;
//   hot      no flush, 20 pairs back to back, time per pair;
//   zeros    blocked, over K/V buffers of zeros instead of random halves;
//   partial  blocked, attn_partial alone.
// Every figure is the median of 30 samples after 3 warm-up samples.
//
// Each configuration is also run once at every timed point and its out is
// compared with the first configuration's (max abs difference and the
// number of differing words), so a diagnostic kernel that computes
// something else is caught, and a claimed bitwise twin is checked.
//
// Usage: kcheck -time [-kernels DIR] [-diag DIR] [-cubins DIR] [-quick]
// -cubins keeps every CUBIN as <label>.cubin for cuobjdump.
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define TK(call)                                                                         \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            const char* s_ = nullptr;                                                    \
            cuGetErrorString(r_, &s_);                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

namespace {

const int kHeads = 28, kKVHeads = 4, kHD = 128, kCap = 32768;
const int kSamples = 30, kWarm = 3, kHotBatch = 20;

// The measurement kernels: the stream blocker (ktune_block's loop) and a
// read-only flush whose sum is stored only under a condition the host
// never makes true, so every load stays.
const char* kUtil = R"(
extern "C" __global__ void tk_block(const volatile int* flag) { while (*flag == 0) { } }
extern "C" __global__ void tk_read(const float4* __restrict__ p, unsigned long long n, float* sink) {
    float a = 0.0f;
    for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
         i += (unsigned long long)gridDim.x * blockDim.x) { float4 x = p[i]; a += x.x + x.y + x.z + x.w; }
    if (a == -1.0f) sink[0] = a;
}
)";

std::string slurp(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) return "";
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Cfg {
    std::string label, path;                          // path: the .cu file
    std::vector<std::pair<std::string, int>> defines;  // beyond HEAD_DIM, KV_F16, SPLITS
    bool methods;                                     // also time every method
};

// compile returns the CUBIN of src with the ABI defines, or "" and a log.
std::string compile(const std::string& src, const std::string& name, const std::string& kdir,
                    const std::vector<std::string>& extra, std::string* log) {
    std::vector<std::string> hn = {"abi.cuh", "combine.cuh"}, ht;
    for (auto& h : hn) ht.push_back(slurp(kdir + "/" + h));
    std::vector<const char*> hnp, htp;
    for (size_t i = 0; i < hn.size(); i++) {
        hnp.push_back(hn[i].c_str());
        htp.push_back(ht[i].c_str());
    }
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), name.c_str(), (int)hn.size(), htp.data(), hnp.data()) !=
        NVRTC_SUCCESS) {
        *log = "nvrtcCreateProgram failed";
        return "";
    }
    // The options ktune passes (probe.compileOptions), plus the toolkit's
    // include directory for cuda_fp16.h (only the seed loader includes it).
    std::vector<std::string> opts = {"-arch=sm_90", "-lineinfo", "--std=c++17"};
    const char* home = getenv("CUDA_HOME");
    opts.push_back(std::string("--include-path=") + (home ? home : "/usr/local/cuda") + "/include");
    for (auto& e : extra) opts.push_back(e);
    std::vector<const char*> o;
    for (auto& s : opts) o.push_back(s.c_str());
    nvrtcResult r = nvrtcCompileProgram(prog, (int)o.size(), o.data());
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    log->assign(n, '\0');
    if (n) nvrtcGetProgramLog(prog, &(*log)[0]);
    std::string cubin;
    if (r == NVRTC_SUCCESS) {
        nvrtcGetCUBINSize(prog, &n);
        cubin.resize(n);
        nvrtcGetCUBIN(prog, &cubin[0]);
    } else if (log->empty()) {
        *log = nvrtcGetErrorString(r);
    }
    nvrtcDestroyProgram(&prog);
    return cubin;
}

uint64_t rng = 0x243f6a8885a308d3ull;
uint64_t next64() {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}
// A random exact half k/1024, k in [-1024, 1024): sign, exponent, mantissa
// built directly (every such value is a normal half or zero).
uint16_t rand_half() {
    int k = (int)(next64() % 2048) - 1024;
    if (k == 0) return 0;
    uint16_t sign = k < 0 ? 0x8000 : 0;
    int a = k < 0 ? -k : k;  // value a / 1024, 1 <= a <= 1024
    int e = 0;
    while ((a >> e) > 1) e++;  // a = 1.m * 2^e
    int mant = ((a << (10 - e)) & 0x3ff);
    int exp = e - 10 + 15;  // a / 1024 = 1.m * 2^(e - 10)
    return (uint16_t)(sign | (exp << 10) | mant);
}

struct Bufs {
    CUdeviceptr q, k, v, kz, vz, pos, part, out, flush, sink;
    size_t flush_bytes;
    int* hflag;
    CUdeviceptr dflag;
};

struct Mod {
    CUmodule mod = nullptr;
    CUfunction partial = nullptr, combine = nullptr;
    int regs = 0, local = 0;
};

struct Timer {
    CUstream s;
    CUevent a, b;
    CUfunction block, read;
    Bufs* B;
    int l2;
};

enum Method { kMemset, kBlocked, kClean, kHot, kZeros, kPartial, kMethods };
const char* kMethodName[kMethods] = {"memset", "blocked", "clean", "hot", "zeros", "partial"};

void launch(const Mod& m, Timer& t, int splits, bool zeros, bool combine) {
    CUdeviceptr q = t.B->q, k = zeros ? t.B->kz : t.B->k, v = zeros ? t.B->vz : t.B->v;
    CUdeviceptr pos = t.B->pos, part = t.B->part, out = t.B->out;
    int heads = kHeads, kvh = kKVHeads, cap = kCap;
    float scale = 1.0f / std::sqrt((float)kHD);
    void* pa[] = {&q, &k, &v, &pos, &part, &heads, &kvh, &cap, &scale};
    TK(cuLaunchKernel(m.partial, splits, kHeads, 1, 32, 1, 1, 0, t.s, pa, nullptr));
    if (!combine) return;
    void* ca[] = {&part, &out, &heads};
    TK(cuLaunchKernel(m.combine, kHeads, 1, 1, kHD, 1, 1, 0, t.s, ca, nullptr));
}

void flush(Timer& t, bool clean) {
    if (!clean) {
        TK(cuMemsetD32Async(t.B->flush, 0, t.B->flush_bytes / 4, t.s));
        return;
    }
    CUdeviceptr p = t.B->flush, sink = t.B->sink;
    unsigned long long n = t.B->flush_bytes / 16;
    void* a[] = {&p, &n, &sink};
    TK(cuLaunchKernel(t.read, 132 * 8, 1, 1, 256, 1, 1, 0, t.s, a, nullptr));
}

// sample returns one sample in microseconds per pair.
double sample(const Mod& m, Timer& t, int splits, Method how) {
    const bool blocked = how != kMemset;
    const int reps = how == kHot ? kHotBatch : 1;
    if (how != kHot) flush(t, how == kClean);
    if (blocked) {
        *(volatile int*)t.B->hflag = 0;
        CUdeviceptr f = t.B->dflag;
        void* a[] = {&f};
        TK(cuLaunchKernel(t.block, 1, 1, 1, 1, 1, 1, 0, t.s, a, nullptr));
    }
    TK(cuEventRecord(t.a, t.s));
    for (int i = 0; i < reps; i++) launch(m, t, splits, how == kZeros, how != kPartial);
    TK(cuEventRecord(t.b, t.s));
    if (blocked) *(volatile int*)t.B->hflag = 1;
    TK(cuEventSynchronize(t.b));
    float ms = 0;
    TK(cuEventElapsedTime(&ms, t.a, t.b));
    return 1000.0 * ms / reps;
}

double median_of(const Mod& m, Timer& t, int splits, Method how, double* lo) {
    std::vector<double> v;
    for (int i = 0; i < kWarm + kSamples; i++) {
        double x = sample(m, t, splits, how);
        if (i >= kWarm) v.push_back(x);
    }
    std::sort(v.begin(), v.end());
    *lo = v.front();
    return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

void set_nkv(Bufs& B, int nkv) {
    int p = nkv - 1;
    TK(cuMemcpyHtoD(B.pos, &p, 4));
}

std::vector<float> run_out(const Mod& m, Timer& t, int splits) {
    TK(cuMemsetD8(t.B->out, 0xff, (size_t)kHeads * kHD * 4));
    launch(m, t, splits, false, true);
    TK(cuStreamSynchronize(t.s));
    std::vector<float> o((size_t)kHeads * kHD);
    TK(cuMemcpyDtoH(o.data(), t.B->out, o.size() * 4));
    return o;
}

}  // namespace

int time_main(int argc, char** argv) {
    std::string kdir = "../../kernels", ddir = "diag", cubins;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-time") continue;
        if (a == "-kernels" && i + 1 < argc)
            kdir = argv[++i];
        else if (a == "-diag" && i + 1 < argc)
            ddir = argv[++i];
        else if (a == "-cubins" && i + 1 < argc)
            cubins = argv[++i];
        else if (a == "-quick")
            quick = true;
        else {
            fprintf(stderr, "usage: kcheck -time [-kernels DIR] [-diag DIR] [-cubins DIR] [-quick]\n");
            return 2;
        }
    }
    const std::string diag = ddir + "/d2diag.cu";
    auto dg = [&](const char* label, int loader, int arith, int loop, int nr, bool methods) {
        return Cfg{label, diag, {{"NR", nr}, {"LOADER", loader}, {"ARITH", arith}, {"LOOP", loop}}, methods};
    };
    // d2 first: every out is compared with its out.
    std::vector<Cfg> cfgs = {
        {"d2", kdir + "/d2.cu", {{"NR", 4}}, true},
        dg("diag.ctl", 0, 0, 0, 4, false),   // = d2.cu through the diag file
        dg("diag.seed", 1, 1, 0, 4, true),   // the seed's D2
        dg("diag.ld=seed", 1, 0, 0, 4, false),
        dg("diag.arith=seed", 0, 1, 0, 4, false),
        dg("diag.ld=raw", 2, 0, 0, 4, true),
        dg("diag.loop=full", 0, 0, 1, 4, false),
        dg("diag.raw+full", 2, 0, 1, 4, false),
        dg("diag.seed+full", 1, 1, 1, 4, false),
        {"r4", kdir + "/r4.cu", {{"NR", 4}}, false},
        {"d2.nr8", kdir + "/d2.cu", {{"NR", 8}}, false},
        dg("diag.ld=raw.nr8", 2, 0, 0, 8, false),
    };
    if (quick) cfgs.resize(3);
    const std::vector<int> splits_list = {32, 64}, nkvs = {8192, 32768};

    TK(cuInit(0));
    CUdevice dev;
    TK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    TK(cuDevicePrimaryCtxRetain(&ctx, dev));
    TK(cuCtxSetCurrent(ctx));
    char name[256];
    TK(cuDeviceGetName(name, sizeof name, dev));
    int l2 = 0;
    TK(cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, dev));
    printf("device: %s, L2 %d MiB; shape B=1 H=28 KVH=4 HD=128 f16 capacity %d; median of %d (min)\n", name,
           l2 >> 20, kCap, kSamples);

    // Compile everything: one program per (configuration, SPLITS).
    struct Job {
        size_t cfg;
        int splits;
        Mod m;
        bool ok = false;
    };
    std::vector<Job> jobs;
    for (size_t c = 0; c < cfgs.size(); c++)
        for (int sp : splits_list) {
            Job j;
            j.cfg = c;
            j.splits = sp;
            std::string src = slurp(cfgs[c].path), log;
            if (src.empty()) {
                printf("SKIP %s: cannot read %s\n", cfgs[c].label.c_str(), cfgs[c].path.c_str());
                jobs.push_back(j);
                continue;
            }
            std::vector<std::string> defs = {"-DHEAD_DIM=128", "-DKV_F16=1", "-DSPLITS=" + std::to_string(sp)};
            for (auto& d : cfgs[c].defines) defs.push_back("-D" + d.first + "=" + std::to_string(d.second));
            std::string fname = cfgs[c].path.substr(cfgs[c].path.find_last_of('/') + 1);
            std::string cubin = compile(src, fname, kdir, defs, &log);
            if (cubin.empty()) {
                printf("COMPILE FAILED %s SPLITS=%d:\n%s\n", cfgs[c].label.c_str(), sp, log.c_str());
                jobs.push_back(j);
                continue;
            }
            if (!cubins.empty()) {
                std::string p = cubins + "/" + cfgs[c].label + ".s" + std::to_string(sp) + ".cubin";
                FILE* f = fopen(p.c_str(), "wb");
                if (f) {
                    fwrite(cubin.data(), 1, cubin.size(), f);
                    fclose(f);
                }
            }
            TK(cuModuleLoadData(&j.m.mod, cubin.data()));
            TK(cuModuleGetFunction(&j.m.partial, j.m.mod, "attn_partial"));
            TK(cuModuleGetFunction(&j.m.combine, j.m.mod, "attn_combine"));
            TK(cuFuncGetAttribute(&j.m.regs, CU_FUNC_ATTRIBUTE_NUM_REGS, j.m.partial));
            TK(cuFuncGetAttribute(&j.m.local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, j.m.partial));
            j.ok = true;
            jobs.push_back(j);
        }

    // Buffers: random halves over the whole capacity, plus a zero pair.
    Bufs B;
    const size_t nkv_elts = (size_t)kCap * kKVHeads * kHD;
    std::vector<uint16_t> h(nkv_elts);
    TK(cuMemAlloc(&B.k, nkv_elts * 2));
    TK(cuMemAlloc(&B.v, nkv_elts * 2));
    TK(cuMemAlloc(&B.kz, nkv_elts * 2));
    TK(cuMemAlloc(&B.vz, nkv_elts * 2));
    for (auto& x : h) x = rand_half();
    TK(cuMemcpyHtoD(B.k, h.data(), nkv_elts * 2));
    for (auto& x : h) x = rand_half();
    TK(cuMemcpyHtoD(B.v, h.data(), nkv_elts * 2));
    TK(cuMemsetD8(B.kz, 0, nkv_elts * 2));
    TK(cuMemsetD8(B.vz, 0, nkv_elts * 2));
    std::vector<float> q((size_t)kHeads * kHD);
    for (auto& x : q) x = (float)((int)(next64() % 2048) - 1024) / 1024.0f;
    TK(cuMemAlloc(&B.q, q.size() * 4));
    TK(cuMemcpyHtoD(B.q, q.data(), q.size() * 4));
    TK(cuMemAlloc(&B.pos, 16));
    TK(cuMemAlloc(&B.part, (size_t)64 * kHeads * (kHD + 4) * 4));
    TK(cuMemAlloc(&B.out, (size_t)kHeads * kHD * 4));
    B.flush_bytes = (size_t)2 * l2;
    TK(cuMemAlloc(&B.flush, B.flush_bytes));
    TK(cuMemsetD8(B.flush, 0, B.flush_bytes));
    TK(cuMemAlloc(&B.sink, 16));
    void* hp = nullptr;
    TK(cuMemHostAlloc(&hp, 16, CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE));
    B.hflag = (int*)hp;
    TK(cuMemHostGetDevicePointer(&B.dflag, hp, 0));

    Timer t;
    t.B = &B;
    t.l2 = l2;
    TK(cuStreamCreate(&t.s, CU_STREAM_NON_BLOCKING));
    TK(cuEventCreate(&t.a, CU_EVENT_DEFAULT));
    TK(cuEventCreate(&t.b, CU_EVENT_DEFAULT));
    {
        std::string log;
        nvrtcProgram prog;
        nvrtcCreateProgram(&prog, kUtil, "tk_util.cu", 0, nullptr, nullptr);
        const char* o[] = {"-arch=sm_90"};
        if (nvrtcCompileProgram(prog, 1, o) != NVRTC_SUCCESS) {
            fprintf(stderr, "the measurement kernels do not compile\n");
            return 2;
        }
        size_t n;
        nvrtcGetCUBINSize(prog, &n);
        std::string cubin(n, '\0');
        nvrtcGetCUBIN(prog, &cubin[0]);
        nvrtcDestroyProgram(&prog);
        CUmodule um;
        TK(cuModuleLoadData(&um, cubin.data()));
        TK(cuModuleGetFunction(&t.block, um, "tk_block"));
        TK(cuModuleGetFunction(&t.read, um, "tk_read"));
    }

    printf("\n%-18s %4s %4s %5s %6s | %-28s | out vs d2\n", "kernel", "regs", "lmem", "SPLIT", "nkv",
           "memset median (min) us");
    std::vector<std::string> method_lines;
    for (int sp : splits_list)
        for (int nkv : nkvs) {
            set_nkv(B, nkv);
            std::vector<float> ref;
            for (auto& j : jobs) {
                if (j.splits != sp) continue;
                const Cfg& c = cfgs[j.cfg];
                if (!j.ok) {
                    printf("%-18s %4s %4s %5d %6d | %-28s |\n", c.label.c_str(), "-", "-", sp, nkv, "not compiled");
                    continue;
                }
                std::vector<float> o = run_out(j.m, t, sp);
                char cmp[96] = "(reference)";
                if (ref.empty() && c.label == "d2") {
                    ref = o;
                } else if (!ref.empty()) {
                    double mx = 0;
                    size_t nd = 0;
                    for (size_t i = 0; i < o.size(); i++) {
                        nd += memcmp(&o[i], &ref[i], 4) != 0;
                        double e = std::fabs((double)o[i] - ref[i]);
                        if (!(e <= mx)) mx = std::isnan(e) ? INFINITY : e;
                    }
                    snprintf(cmp, sizeof cmp, "max|diff| %.2e, %zu words differ%s", mx, nd,
                             nd == 0 ? " (bitwise)" : "");
                }
                double lo, med = median_of(j.m, t, sp, kMemset, &lo);
                printf("%-18s %4d %4d %5d %6d | %9.1f (%9.1f)          | %s\n", c.label.c_str(), j.m.regs, j.m.local,
                       sp, nkv, med, lo, cmp);
                fflush(stdout);
                if (!c.methods) continue;
                std::string line;
                char buf[64];
                snprintf(buf, sizeof buf, "%-12s %5d %6d |", c.label.c_str(), sp, nkv);
                line = buf;
                for (int mth = 0; mth < kMethods; mth++) {
                    double l2lo, m2 = median_of(j.m, t, sp, (Method)mth, &l2lo);
                    snprintf(buf, sizeof buf, " %8.1f", m2);
                    line += buf;
                }
                method_lines.push_back(line);
            }
        }
    printf("\nmethods (median us per pair): memset = no blocker, blocked = ktune cold, clean = read flush,\n"
           "hot = %d back-to-back pairs, zeros = zero K/V, partial = attn_partial alone (blocked)\n",
           kHotBatch);
    printf("%-12s %5s %6s |", "kernel", "SPLIT", "nkv");
    for (int mth = 0; mth < kMethods; mth++) printf(" %8s", kMethodName[mth]);
    printf("\n");
    for (auto& l : method_lines) printf("%s\n", l.c_str());
    return 0;
}
