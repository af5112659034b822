// hostcode.cu: an engine-style source whose headers carry host code, as
// FlashInfer's decode.cuh does (<iostream> and host functions beside the
// kernels): NVRTC cannot compile it ("cannot open source file
// "iostream""), only nvcc can, so a spec builds it with the engine's own
// command (build:) and loads the CUBIN. The kernel is a template in a
// namespace, instantiated by the host launcher as an engine's dispatch
// does, so the spec names it as C++ (eng::scale_rows<float, 4>). The body
// only touches its parameters.
#include <iostream>
#include <string>

namespace eng {
template <typename T, int VEC>
__global__ void scale_rows(const T* q, T* out, int heads, float scale) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < heads * VEC) out[i] = q[i] * scale;
}

void launch(const float* q, float* out, int heads, float scale) {
    std::string name = "scale_rows";
    std::cerr << name << "\n";
    scale_rows<float, 4><<<1, 32>>>(q, out, heads, scale);
}
}  // namespace eng
