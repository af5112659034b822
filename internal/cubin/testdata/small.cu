// small.cu: the source of small.cubin, the CUBIN the parser's tests read,
// compiled by NVRTC 11.8 with -arch=sm_90 and no other option. bounded has
// a __launch_bounds__ of 64 threads, 256 bytes of static shared memory
// (NVRTC 11.8's .nv.shared section adds the 1 KiB the driver reserves per
// block on sm_80 and later: 1280) and a runtime-indexed local array of
// 1 KiB (a stack frame); plain has none of them; helper is a device
// function, not an entry.
__device__ __noinline__ float helper(float x) { return x * x + 1.0f; }

extern "C" __global__ void __launch_bounds__(64) bounded(float* out, const int* idx, int n) {
    __shared__ float tile[64];
    float local[256];
    for (int i = 0; i < 256; i++) local[i] = out[i * n + threadIdx.x];
    local[idx[threadIdx.x] & 255] += 1.0f;
    tile[threadIdx.x] = local[idx[threadIdx.x + 64] & 255];
    __syncthreads();
    out[threadIdx.x] = helper(tile[63 - threadIdx.x]);
}

extern "C" __global__ void plain(float* out) { out[threadIdx.x] = 2.0f * out[threadIdx.x]; }
