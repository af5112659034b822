// d2_engine.cu — the engine's translation unit for its decode attention:
// the header's kernels, instantiated for the element types the engine
// runs. nvcc emits exactly these instantiations (the PTX that
// experiments/run-engine.sh builds); NVRTC, given the same names as name
// expressions by ktune, would instantiate them by itself.
#include "d2_engine.cuh"

template __global__ void gqa_attn_split_partial<__half, 4>(
    const float* __restrict__, const __half* __restrict__, const __half* __restrict__,
    const int* __restrict__, float* __restrict__, int, int, int, int, int, int, float);
template __global__ void gqa_attn_split_partial<float, 4>(
    const float* __restrict__, const float* __restrict__, const float* __restrict__,
    const int* __restrict__, float* __restrict__, int, int, int, int, int, int, float);
