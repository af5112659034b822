// params.cu: the source of params.cubin, compiled by nvcc 11.8 with
// -arch=sm_90 -cubin (no other option), whose parameter records
// (EIATTR_KPARAM_INFO) and C++ symbols the tests read. mixed takes
// parameters of 8, 4, 1, 32, 8, 2 and 128 bytes; its last, a 64-aligned
// struct, sits at offset 112 and not 64·2 = 128 because the compiler
// aligns the parameter's address in constant bank 0 (0x210 + 112 is a
// multiple of 64). none takes no parameters. The templates and the
// namespaced kernel give the symbol table C++ names to demangle.
#include <cuda_fp16.h>

struct Small { double a; char b; int c[5]; };      // 32 bytes, align 8
struct alignas(64) Wide { char x[128]; };           // 128 bytes, align 64

extern "C" __global__ void mixed(float* p, int n, char c, Small s, double d, short h, Wide w) {
    if (n) p[0] = s.a + c + d + h + w.x[3];
}

extern "C" __global__ void none() {}

template <typename T, int N, bool B>
__global__ void tiled(T* out, int n) { if (B) out[n] = T(N); }

template __global__ void tiled<float, 4, true>(float*, int);
template __global__ void tiled<__half, 8, false>(__half*, int);
template __global__ void tiled<float, 4, false>(float*, int);

namespace eng {
template <int HEAD, typename KV, int PART = 512>
__global__ void decode(float* out, const KV* __restrict__ k, const int* lens, float scale) { out[HEAD] = lens[0] * scale + float(k[PART]); }
template __global__ void decode<128, unsigned short>(float*, const unsigned short* __restrict__, const int*, float);
template __global__ void decode<64, __half, 256>(float*, const __half* __restrict__, const int*, float);
}
