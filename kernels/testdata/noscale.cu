// noscale.cu: compiles, but its attn_partial lacks the ABI's last
// parameter, float scale (it computes 1/sqrt(HEAD_DIM) itself), for the
// parameter check: a spec running it with the ABI's signature passes
// nine arguments to a kernel of eight, and ktune check must refuse it at
// the variant's line without a GPU. The body is not attention.
#include "abi.cuh"
#include "combine.cuh"

extern "C" __global__ void attn_partial(const float* q, const KV_T* k, const KV_T* v, const int* positions,
                                        float* partial, int heads, int kv_heads, int capacity) {
    if (threadIdx.x == 0 && heads < 0) partial[0] = q[0] * rsqrtf(float(HEAD_DIM)) + float(k[capacity]) + float(v[kv_heads]) + positions[0];
}
