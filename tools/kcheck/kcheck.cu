// kcheck: a standalone correctness harness for the seed kernel family.
//
// It compiles every kernel of kernels/ with NVRTC (the same path ktune takes:
// each configuration is its own program, the kernels/*.cuh files passed as
// headers), fills random q/K/V, runs attn_partial + attn_combine over a set
// of context lengths chosen to hit the split boundaries, and checks
//   - out against a float64 CPU reference (max abs error, and the max abs
//     error relative to the largest reference magnitude),
//   - that every partial slot was written (the buffers start as NaN bytes),
//   - for each bitwise kernel, partial and out byte for byte against its twin.
//
// Usage: kcheck [-kernels DIR] [-quick] [-full FILE]
// It exits 1 when any check fails. See README.md for the build line.
// kcheck -time ... is the timing mode instead (ktime.cu).
#include <cuda.h>
#include <nvrtc.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#define CU(call)                                                                         \
    do {                                                                                 \
        CUresult r_ = (call);                                                            \
        if (r_ != CUDA_SUCCESS) {                                                        \
            const char* s_ = nullptr;                                                    \
            cuGetErrorString(r_, &s_);                                                   \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, s_ ? s_ : "?"); \
            exit(2);                                                                     \
        }                                                                                \
    } while (0)

// ---- problem shape ---------------------------------------------------------

// The H200 anchors' shape (28 query heads over 4 KV heads), batch 2 so that
// blockIdx.z and per-sequence lengths are exercised.
static const int kHeads = 28, kKVHeads = 4, kBatch = 2;

// ---- kernel configurations -------------------------------------------------

struct Config {
    std::string kernel;  // file stem in kernels/
    std::vector<std::pair<std::string, int>> defines;
    int block;
    std::string twin;  // label of the twin configuration; empty: tolerance class
    std::string label() const {
        std::string s = kernel;
        if (!defines.empty()) {
            s += "[";
            for (size_t i = 0; i < defines.size(); i++) {
                if (i) s += ",";
                s += defines[i].first + "=" + std::to_string(defines[i].second);
            }
            s += "]";
        }
        return s;
    }
};

static std::vector<Config> configs() {
    std::vector<Config> c;
    for (int nr : {4, 8}) c.push_back({"r4", {{"NR", nr}}, 32, ""});
    for (int nr : {4, 8}) c.push_back({"d2", {{"NR", nr}}, 32, "r4[NR=" + std::to_string(nr) + "]"});
    c.push_back({"pair", {}, 32, "d2[NR=4]"});
    for (int ring : {2, 3, 4}) c.push_back({"cpasync", {{"RING", ring}, {"NR", 4}}, 32, "d2[NR=4]"});
    c.push_back({"cpasync", {{"RING", 3}, {"NR", 8}}, 32, "d2[NR=8]"});
    c.push_back({"rows", {}, 32, ""});
    c.push_back({"warp4", {}, 128, ""});
    return c;
}

// ---- host data -------------------------------------------------------------

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t next_u64() {
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}
// uniform in [-1, 1)
static float uniform() { return (float)((double)(next_u64() >> 11) / (double)(1ull << 53) * 2.0 - 1.0); }

// f16 data are multiples of 2^-10 in [-1, 1]: exactly representable in both
// formats, so the reference sees exactly what the kernel sees.
static float quantized() { return (float)((int)(next_u64() % 2049) - 1024) / 1024.0f; }
static uint16_t exact_half(float f) {
    if (f == 0.0f) return 0;
    uint32_t b;
    memcpy(&b, &f, 4);
    uint32_t sign = b >> 31;
    int e = (int)((b >> 23) & 0xff) - 127 + 15;
    uint32_t m = (b >> 13) & 0x3ff;
    if ((b & 0x1fff) != 0 || e <= 0 || e >= 31) {
        fprintf(stderr, "value %g is not an exact normal half\n", f);
        exit(2);
    }
    return (uint16_t)((sign << 15) | ((uint32_t)e << 10) | m);
}

struct Data {
    int hd, f16, capacity;
    std::vector<float> q, k, v;  // the values as the kernel sees them
    CUdeviceptr dq = 0, dk = 0, dv = 0;
};

static void make_data(Data& d, int hd, int f16, int capacity) {
    d.hd = hd;
    d.f16 = f16;
    d.capacity = capacity;
    size_t nq = (size_t)kBatch * kHeads * hd, nkv = (size_t)kBatch * capacity * kKVHeads * hd;
    d.q.resize(nq);
    d.k.resize(nkv);
    d.v.resize(nkv);
    for (auto& x : d.q) x = uniform();
    for (auto& x : d.k) x = f16 ? quantized() : uniform();
    for (auto& x : d.v) x = f16 ? quantized() : uniform();
    CU(cuMemAlloc(&d.dq, nq * 4));
    CU(cuMemcpyHtoD(d.dq, d.q.data(), nq * 4));
    size_t esz = f16 ? 2 : 4;
    CU(cuMemAlloc(&d.dk, nkv * esz));
    CU(cuMemAlloc(&d.dv, nkv * esz));
    if (f16) {
        std::vector<uint16_t> h(nkv);
        for (size_t i = 0; i < nkv; i++) h[i] = exact_half(d.k[i]);
        CU(cuMemcpyHtoD(d.dk, h.data(), nkv * 2));
        for (size_t i = 0; i < nkv; i++) h[i] = exact_half(d.v[i]);
        CU(cuMemcpyHtoD(d.dv, h.data(), nkv * 2));
    } else {
        CU(cuMemcpyHtoD(d.dk, d.k.data(), nkv * 4));
        CU(cuMemcpyHtoD(d.dv, d.v.data(), nkv * 4));
    }
}

static void free_data(Data& d) {
    cuMemFree(d.dq);
    cuMemFree(d.dk);
    cuMemFree(d.dv);
}

// reference computes out[b][h][:] in float64 for the given lengths.
static std::vector<double> reference(const Data& d, const int* nkv) {
    const int hd = d.hd;
    std::vector<double> out((size_t)kBatch * kHeads * hd);
    const double scale = 1.0 / std::sqrt((double)hd);
    auto work = [&](int bh) {
        int b = bh / kHeads, h = bh % kHeads, hk = h / (kHeads / kKVHeads);
        const float* q = &d.q[((size_t)b * kHeads + h) * hd];
        std::vector<double> s(nkv[b]);
        double m = -INFINITY;
        for (int j = 0; j < nkv[b]; j++) {
            const float* kr = &d.k[(((size_t)b * d.capacity + j) * kKVHeads + hk) * hd];
            double dot = 0;
            for (int i = 0; i < hd; i++) dot += (double)q[i] * kr[i];
            s[j] = dot * scale;
            m = std::max(m, s[j]);
        }
        std::vector<double> acc(hd, 0.0);
        double S = 0;
        for (int j = 0; j < nkv[b]; j++) {
            double w = std::exp(s[j] - m);
            S += w;
            const float* vr = &d.v[(((size_t)b * d.capacity + j) * kKVHeads + hk) * hd];
            for (int i = 0; i < hd; i++) acc[i] += w * vr[i];
        }
        for (int i = 0; i < hd; i++) out[(size_t)bh * hd + i] = acc[i] / S;
    };
    std::atomic<int> next(0);
    std::vector<std::thread> pool;
    unsigned n = std::max(1u, std::thread::hardware_concurrency());
    for (unsigned t = 0; t < n; t++)
        pool.emplace_back([&] {
            for (int bh; (bh = next++) < kBatch * kHeads;) work(bh);
        });
    for (auto& t : pool) t.join();
    return out;
}

// ---- compilation -----------------------------------------------------------

static std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        fprintf(stderr, "cannot read %s\n", path.c_str());
        exit(2);
    }
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

struct Headers {
    std::vector<std::string> names, texts;
};

static std::string compile(const std::string& dir, const Headers& hdr, const Config& c, int hd, int f16, int splits,
                           std::string* log) {
    std::string src = read_file(dir + "/" + c.kernel + ".cu");
    std::vector<const char*> hn, ht;
    for (size_t i = 0; i < hdr.names.size(); i++) {
        hn.push_back(hdr.names[i].c_str());
        ht.push_back(hdr.texts[i].c_str());
    }
    nvrtcProgram prog;
    if (nvrtcCreateProgram(&prog, src.c_str(), (c.kernel + ".cu").c_str(), (int)hn.size(), ht.data(), hn.data()) !=
        NVRTC_SUCCESS) {
        *log = "nvrtcCreateProgram failed";
        return "";
    }
    std::vector<std::string> opts = {"--gpu-architecture=sm_90", "--std=c++17",
                                     "-DHEAD_DIM=" + std::to_string(hd), "-DKV_F16=" + std::to_string(f16),
                                     "-DSPLITS=" + std::to_string(splits)};
    for (auto& d : c.defines) opts.push_back("-D" + d.first + "=" + std::to_string(d.second));
    std::vector<const char*> o;
    for (auto& s : opts) o.push_back(s.c_str());
    nvrtcResult r = nvrtcCompileProgram(prog, (int)o.size(), o.data());
    size_t n = 0;
    nvrtcGetProgramLogSize(prog, &n);
    log->assign(n, '\0');
    nvrtcGetProgramLog(prog, &(*log)[0]);
    std::string cubin;
    if (r == NVRTC_SUCCESS) {
        nvrtcGetCUBINSize(prog, &n);
        cubin.resize(n);
        nvrtcGetCUBIN(prog, &cubin[0]);
    }
    nvrtcDestroyProgram(&prog);
    return cubin;
}

// ---- running ---------------------------------------------------------------

struct Output {
    std::vector<float> partial, out;
};

struct Loaded {
    CUmodule mod = nullptr;
    CUfunction partial = nullptr, combine = nullptr;
};

static Output run(const Loaded& m, const Config& c, const Data& d, int splits, CUdeviceptr dpos, CUdeviceptr dpart,
                  CUdeviceptr dout) {
    const int pstr = d.hd + 4;
    size_t npart = (size_t)kBatch * splits * kHeads * pstr, nout = (size_t)kBatch * kHeads * d.hd;
    // NaN bytes: a slot the kernel forgets to write poisons out.
    CU(cuMemsetD8(dpart, 0xff, npart * 4));
    CU(cuMemsetD8(dout, 0xff, nout * 4));
    int heads = kHeads, kvh = kKVHeads, cap = d.capacity;
    float scale = 1.0f / std::sqrt((float)d.hd);
    CUdeviceptr dq = d.dq, dk = d.dk, dv = d.dv;
    void* pa[] = {&dq, &dk, &dv, &dpos, &dpart, &heads, &kvh, &cap, &scale};
    CU(cuLaunchKernel(m.partial, splits, kHeads, kBatch, c.block, 1, 1, 0, nullptr, pa, nullptr));
    void* ca[] = {&dpart, &dout, &heads};
    CU(cuLaunchKernel(m.combine, kHeads, kBatch, 1, d.hd, 1, 1, 0, nullptr, ca, nullptr));
    CU(cuCtxSynchronize());
    Output o;
    o.partial.resize(npart);
    o.out.resize(nout);
    CU(cuMemcpyDtoH(o.partial.data(), dpart, npart * 4));
    CU(cuMemcpyDtoH(o.out.data(), dout, nout * 4));
    return o;
}

static size_t word_diff(const std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) return std::max(a.size(), b.size());
    size_t n = 0;
    for (size_t i = 0; i < a.size(); i++) n += memcmp(&a[i], &b[i], 4) != 0;
    return n;
}

struct Summary {
    double max_abs = 0, max_nrel = 0;
    int points = 0, failed = 0, twin_points = 0;
    size_t twin_diff = 0;
    std::string twin;
};

int time_main(int argc, char** argv);  // ktime.cu

int main(int argc, char** argv) {
    for (int i = 1; i < argc; i++)
        if (std::string(argv[i]) == "-time") return time_main(argc, argv);
    std::string dir = "../../kernels", full_path;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "-kernels" && i + 1 < argc)
            dir = argv[++i];
        else if (a == "-full" && i + 1 < argc)
            full_path = argv[++i];
        else if (a == "-quick")
            quick = true;
        else {
            fprintf(stderr, "usage: kcheck [-kernels DIR] [-quick] [-full FILE]\n");
            return 2;
        }
    }
    const double kMaxAbs = 2e-3, kMaxNRel = 2e-2;  // ktune's default oracle gates

    Headers hdr;
    for (const char* n : {"abi.cuh", "combine.cuh"}) {
        hdr.names.push_back(n);
        hdr.texts.push_back(read_file(dir + "/" + n));
    }

    std::vector<int> head_dims = quick ? std::vector<int>{128} : std::vector<int>{128, 64};
    std::vector<int> splits_list = quick ? std::vector<int>{32} : std::vector<int>{8, 32, 64};
    std::vector<Config> cfgs = configs();

    // Compile every (config, hd, dtype, splits) up front, in parallel.
    struct Job {
        size_t cfg;
        int hd, f16, splits;
        std::string cubin, log;
    };
    std::vector<Job> jobs;
    for (int hd : head_dims)
        for (int f16 : {1, 0})
            for (int sp : splits_list)
                for (size_t ci = 0; ci < cfgs.size(); ci++) jobs.push_back({ci, hd, f16, sp, "", ""});
    {
        std::atomic<size_t> next(0);
        std::vector<std::thread> pool;
        unsigned n = std::max(1u, std::thread::hardware_concurrency());
        for (unsigned t = 0; t < n; t++)
            pool.emplace_back([&] {
                for (size_t j; (j = next++) < jobs.size();)
                    jobs[j].cubin = compile(dir, hdr, cfgs[jobs[j].cfg], jobs[j].hd, jobs[j].f16, jobs[j].splits,
                                            &jobs[j].log);
            });
        for (auto& t : pool) t.join();
    }
    int compile_failures = 0;
    for (auto& j : jobs)
        if (j.cubin.empty()) {
            compile_failures++;
            fprintf(stderr, "compile %s hd=%d f16=%d SPLITS=%d failed:\n%s\n", cfgs[j.cfg].label().c_str(), j.hd,
                    j.f16, j.splits, j.log.c_str());
        }
    if (compile_failures) return 1;
    printf("compiled %zu programs with NVRTC\n", jobs.size());

    CU(cuInit(0));
    CUdevice dev;
    CU(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CU(cuCtxSetCurrent(ctx));
    char name[256];
    CU(cuDeviceGetName(name, sizeof name, dev));
    printf("device: %s\n", name);

    FILE* full = full_path.empty() ? nullptr : fopen(full_path.c_str(), "w");
    if (full)
        fprintf(full, "%-22s %-4s %4s %6s %6s %8s %10s %10s %12s %s\n", "kernel", "kv", "hd", "SPLITS", "nkv0",
                "nkv1", "max_abs", "nrel", "twin_ndiff", "verdict");

    std::map<std::string, Summary> sums;  // key: label|dtype|hd
    std::vector<std::string> order;
    bool any_fail = false;
    CUdeviceptr dpos, dpart, dout;
    CU(cuMemAlloc(&dpos, kBatch * 4));
    CU(cuMemAlloc(&dpart, (size_t)kBatch * 64 * kHeads * (128 + 4) * 4));
    CU(cuMemAlloc(&dout, (size_t)kBatch * kHeads * 128 * 4));

    for (int hd : head_dims)
        for (int f16 : {1, 0}) {
            std::vector<int> nkv_set = {1, 29, 52, 512, 1641};
            for (int sp : splits_list)
                for (int x : {sp - 1, sp + 1, 2 * sp})
                    if (x >= 1) nkv_set.push_back(x);
            if (!quick) nkv_set.push_back(32768);
            std::sort(nkv_set.begin(), nkv_set.end());
            nkv_set.erase(std::unique(nkv_set.begin(), nkv_set.end()), nkv_set.end());
            Data d;
            make_data(d, hd, f16, nkv_set.back() + 3);
            const char* kv = f16 ? "f16" : "f32";
            for (int nkv : nkv_set) {
                // The second sequence is shorter, so the two sequences split
                // differently inside one launch.
                int lens[kBatch] = {nkv, nkv == 1 ? 1 : nkv - nkv / 3};
                int pos[kBatch] = {lens[0] - 1, lens[1] - 1};
                CU(cuMemcpyHtoD(dpos, pos, sizeof pos));
                std::vector<double> ref = reference(d, lens);
                double refmax = 0;
                for (double r : ref) refmax = std::max(refmax, std::fabs(r));
                for (int sp : splits_list) {
                    std::map<std::string, Output> outs;
                    for (auto& j : jobs) {
                        if (j.hd != hd || j.f16 != f16 || j.splits != sp) continue;
                        const Config& c = cfgs[j.cfg];
                        Loaded m;
                        CU(cuModuleLoadData(&m.mod, j.cubin.data()));
                        CU(cuModuleGetFunction(&m.partial, m.mod, "attn_partial"));
                        CU(cuModuleGetFunction(&m.combine, m.mod, "attn_combine"));
                        Output o = run(m, c, d, sp, dpos, dpart, dout);
                        CU(cuModuleUnload(m.mod));
                        double max_abs = 0;
                        for (size_t i = 0; i < ref.size(); i++) {
                            double e = std::fabs((double)o.out[i] - ref[i]);
                            if (!(e <= max_abs)) max_abs = std::isnan(e) ? INFINITY : e;
                        }
                        size_t nan_slots = 0;
                        for (float p : o.partial) nan_slots += std::isnan(p);
                        double nrel = refmax > 0 ? max_abs / refmax : max_abs;
                        bool ok = max_abs <= kMaxAbs && nrel <= kMaxNRel && nan_slots == 0;
                        long twin_diff = -1;
                        if (!c.twin.empty()) {
                            auto t = outs.find(c.twin);
                            if (t == outs.end()) {
                                fprintf(stderr, "twin %s of %s not run first\n", c.twin.c_str(), c.label().c_str());
                                return 2;
                            }
                            twin_diff = (long)(word_diff(o.partial, t->second.partial) +
                                               word_diff(o.out, t->second.out));
                            ok = ok && twin_diff == 0;
                        }
                        std::string label = c.label();
                        std::string key = label + "|" + kv + "|" + std::to_string(hd);
                        if (!sums.count(key)) order.push_back(key);
                        Summary& s = sums[key];
                        s.max_abs = std::max(s.max_abs, max_abs);
                        s.max_nrel = std::max(s.max_nrel, nrel);
                        s.points++;
                        s.failed += !ok;
                        s.twin = c.twin;
                        if (twin_diff >= 0) {
                            s.twin_points++;
                            s.twin_diff += (size_t)twin_diff;
                        }
                        any_fail = any_fail || !ok;
                        if (full)
                            fprintf(full, "%-22s %-4s %4d %6d %6d %8d %10.3e %10.3e %12s %s%s\n", label.c_str(), kv,
                                    hd, sp, lens[0], lens[1], max_abs, nrel,
                                    twin_diff < 0 ? "-" : std::to_string(twin_diff).c_str(), ok ? "ok" : "FAIL",
                                    nan_slots ? " (unwritten partial)" : "");
                        if (!ok)
                            printf("FAIL %s %s hd=%d SPLITS=%d nkv=%d/%d: max_abs %.3e nrel %.3e twin_ndiff %ld "
                                   "nan %zu\n",
                                   label.c_str(), kv, hd, sp, lens[0], lens[1], max_abs, nrel, twin_diff, nan_slots);
                        outs[label] = std::move(o);
                    }
                }
            }
            free_data(d);
        }
    if (full) fclose(full);

    printf("\n%-22s %-4s %4s %7s %10s %10s %-10s %12s %s\n", "kernel", "kv", "hd", "points", "max_abs", "nrel",
           "twin", "twin_ndiff", "verdict");
    for (auto& key : order) {
        Summary& s = sums[key];
        std::string label = key.substr(0, key.find('|'));
        std::string rest = key.substr(key.find('|') + 1);
        std::string kv = rest.substr(0, rest.find('|'));
        std::string hd = rest.substr(rest.find('|') + 1);
        char tw[64] = "-";
        if (s.twin_points) snprintf(tw, sizeof tw, "%zu/%d pts", s.twin_diff, s.twin_points);
        printf("%-22s %-4s %4s %7d %10.3e %10.3e %-10s %12s %s\n", label.c_str(), kv.c_str(), hd.c_str(), s.points,
               s.max_abs, s.max_nrel, s.twin.empty() ? "-" : s.twin.c_str(), tw,
               s.failed ? ("FAIL " + std::to_string(s.failed)).c_str() : "ok");
    }
    printf("\n%s\n", any_fail ? "kcheck: FAILED" : "kcheck: all checks passed");
    return any_fail ? 1 : 0;
}
