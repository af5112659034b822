// layout.cu: an engine-style kernel taking a by-value params struct with
// a nested fast-division object and members of mixed alignment, for the
// struct layout check: a spec that names the type (structs.NAME.type)
// has every declared field compared with the type's own offsetof and
// sizeof, compiled beside this source without a GPU. C's rule puts
// scale at 24 (after 8 + 4 + 4 + 4, padded to 4), d at 32, page at 40,
// n at 56; sizeof 64, alignof 8. The body only touches the parameters.
namespace eng {
struct fastdiv { unsigned d, m, s, a; };
template <typename T>
struct params {
    T* out;
    int heads;
    int kv_heads;
    int head_dim;
    float scale;
    double d;
    fastdiv page;
    int n;
};
}  // namespace eng

extern "C" __global__ void step(eng::params<float> p) {
    if (int(threadIdx.x) < p.n) p.out[threadIdx.x] = p.scale * float(p.heads + p.kv_heads + p.head_dim + p.page.d) + float(p.d);
}

// A planner's arrays by pointer, as FlashInfer's params hold them: a
// bool mask (one byte an entry), int32 indices, a 64-bit table, a void
// workspace, whose elements have no size and are not compared, and the
// queries read four floats at a time (a vector of q's elements).
namespace eng {
struct plan_params {
    const bool* valid;
    const int* indptr;
    const long long* wide;
    void* ws;
    float* out;
    const float4* qv;
};
}  // namespace eng

extern "C" __global__ void plan_step(eng::plan_params p) {
    if (p.valid[threadIdx.x]) p.out[threadIdx.x] = float(p.indptr[threadIdx.x] + p.wide[threadIdx.x]) + (p.ws ? 1.f : 0.f) + p.qv[0].x;
}

// The same arrays as a C++ kernel's own parameters: its mangled symbol
// names their types (bool const*, int const*, float*), which ktune check
// compares with what each launch passes.
namespace eng {
template <typename T>
__global__ void masked(const bool* valid, const int* idx, T* out) {
    if (valid[threadIdx.x]) out[threadIdx.x] = T(idx[threadIdx.x]);
}
}  // namespace eng

// Byte pointers, as llama.cpp passes Q, K, V and its mask: a char pointer
// is an address in bytes, offset by byte strides and cast to what it
// reads, so it takes any buffer; a signed char pointer (int8_t) reads
// 1-byte elements.
namespace eng {
template <int D>
__global__ void bytes(const char* q, const char* k, float* out, const signed char* codes, int nb1) {
    const float* qf = (const float*)(q + nb1 * blockIdx.x);
    out[threadIdx.x] = qf[threadIdx.x % D] + float(k[threadIdx.x]) + float(codes[threadIdx.x]);
}
}  // namespace eng
