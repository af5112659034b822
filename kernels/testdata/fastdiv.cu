// fastdiv.cu: an engine-style kernel whose by-value params struct holds
// fast-division objects whose constants the host computes, in the two
// layouts engines use: FlashInfer's uint_fastdiv {d, m, s, a} (its
// paged_kv_t::page_size) and CCCL's cuda::fast_mod_div<uint32_t>
// {divisor, multiplier, add, shift}. Each thread divides its index both
// ways and writes the quotients, so a wrong constant shows in out. The
// spec computes the constants with fastdiv_m/s/a and fmd_mul/add/shift
// (internal/expr/hostfuncs.go); ktune check compares the struct with the
// kernel's parameter without a GPU.
struct uint_fastdiv_t { unsigned d, m, s, a; };
struct fast_mod_div_t { unsigned divisor, multiplier, add; int shift; };
struct params_t {
    float* out;
    uint_fastdiv_t page;
    fast_mod_div_t chunk;
    int n;
};

__device__ unsigned div_fastdiv(unsigned n, uint_fastdiv_t f) { return f.d == 1 ? n : (__umulhi(f.m, n) + f.a * n) >> f.s; }
__device__ unsigned div_fmd(unsigned n, fast_mod_div_t f) {
    if (f.multiplier == 0) return n >> f.shift;
    return __umulhi(n == 0xffffffffu ? n : n + f.add, f.multiplier) >> f.shift;
}

extern "C" __global__ void divide(params_t p) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (int(i) < p.n) p.out[i] = float(div_fastdiv(i, p.page) * 65536u + div_fmd(i, p.chunk));
}
