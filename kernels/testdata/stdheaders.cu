// stdheaders.cu: an engine-style kernel that includes the C and C++
// headers NVRTC lacks, as engines' kernels do for constants and
// compile-time helpers (vLLM's: <float.h> for FLT_MAX, <algorithm>,
// <type_traits>, <assert.h>), and calls assert in device code, which
// NVRTC defines itself. With std_headers: true it compiles under NVRTC
// with ktune's headers (kernels/nvrtcstd); without, NVRTC cannot open
// <float.h>. The body only touches its parameters.
#include <float.h>
#include <cfloat>
#include <stdint.h>
#include <cstdint>
#include <limits.h>
#include <climits>
#include <assert.h>
#include <cassert>
#include <type_traits>
#include <algorithm>
#include <utility>

template <typename T>
__device__ std::enable_if_t<std::is_floating_point_v<T>, T> lowest() { return -FLT_MAX; }

extern "C" __global__ void step(const float* q, float* out, int heads) {
    static_assert(std::is_same<int32_t, int>::value && sizeof(std::uint64_t) == 8 && INT_MAX == INT32_MAX && CHAR_BIT == 8, "LP64");
    static_assert(std::is_integral_v<const unsigned long> && !std::is_pointer_v<int> && std::is_pointer_v<int* const>, "traits");
    static_assert(std::is_same_v<std::decay_t<const int&>, int> && std::is_same_v<std::conditional_t<true, char, long>, char>, "traits");
    assert(heads > 0);
    float a = q[threadIdx.x], b = lowest<float>() + DBL_EPSILON * 0;
    std::swap(a, b);
    out[threadIdx.x] = std::max(a, b) + std::min(FLT_EPSILON, 1.0f) * float(UINT8_MAX);
}
