// headeronly.cuh: an engine's kernel that lives in a header, instantiated
// only by a launcher that needs the engine's framework (here the host
// header framework/host.h, which this tree does not have), as vLLM's
// attention_kernels.cuh is instantiated by its torch launcher. A build
// compiles ktune's {instantiate} (this header, then the address of each
// launch's entry) with {host} holding framework/host.h empty
// (host_headers). The body only touches its parameters.
#pragma once
#include <framework/host.h>

namespace eng {
template <typename T, int ROWS>
__global__ void rows_kernel(const T* q, T* out, int heads) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < heads * ROWS) out[i] = q[i] + T(ROWS);
}
}  // namespace eng
