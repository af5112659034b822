// steps.cu — a test kernel in three launches with its own signature, for
// the probe's GPU tests of a declared signature: f16 q and out, K/V in
// [batch][kv_heads][capacity][dim], the lengths from seqlens, a
// workspace, an lse output and counters. Exact attention, slowly: a
// warp per (head, sequence) finds the max and the sum of exponentials
// (stats), a thread per dimension accumulates the normalised V (accum),
// and a thread per (head, sequence) writes the log-sum-exp (lse).
#include "half.cuh"

template <int LANES>
__global__ void stats(const unsigned short* __restrict__ q, const KV* __restrict__ k, const int* __restrict__ seqlens,
                      float* __restrict__ ws, int heads, int kv_heads, int hd, int row, int head, long long seq, float scale) {
    const int h = blockIdx.x, b = blockIdx.y, lane = threadIdx.x;
    const int n = seqlens[b];
    const KV* kb = k + b * seq + (long long)(h / (heads / kv_heads)) * head;
    const unsigned short* qh = q + ((long long)b * heads + h) * hd;
    float mx = neg_inf(), sum = 0.0f;
    for (int r = lane; r < n; r += LANES) {
        float d = 0.0f;
        for (int i = 0; i < hd; i++) d += h2f(qh[i]) * kv(kb[(long long)r * row + i]);
        const float s = d * scale, nmx = fmaxf(mx, s);
        sum = sum * expf(mx - nmx) + expf(s - nmx);
        mx = nmx;
    }
    for (int o = LANES / 2; o > 0; o >>= 1) {
        const float omx = __shfl_xor_sync(0xFFFFFFFFu, mx, o), osum = __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        const float nmx = fmaxf(mx, omx);
        sum = (sum > 0.0f ? sum * expf(mx - nmx) : 0.0f) + (osum > 0.0f ? osum * expf(omx - nmx) : 0.0f);
        mx = nmx;
    }
    if (lane == 0) {
        ws[2 * (b * heads + h)] = mx;
        ws[2 * (b * heads + h) + 1] = sum;
    }
}

__global__ void accum(const unsigned short* __restrict__ q, const KV* __restrict__ k, const KV* __restrict__ v,
                      const int* __restrict__ seqlens, const float* __restrict__ ws, unsigned short* __restrict__ out,
                      unsigned int* __restrict__ counters, int heads, int kv_heads, int hd, int row, int head,
                      long long seq, float scale) {
    const int h = blockIdx.x, b = blockIdx.y, i = threadIdx.x;
    const int n = seqlens[b];
    const long long off = b * seq + (long long)(h / (heads / kv_heads)) * head;
    const unsigned short* qh = q + ((long long)b * heads + h) * hd;
    const float mx = ws[2 * (b * heads + h)], sum = ws[2 * (b * heads + h) + 1];
    float acc = 0.0f;
    for (int r = 0; r < n; r++) {
        float d = 0.0f;
        for (int j = 0; j < hd; j++) d += h2f(qh[j]) * kv(k[off + (long long)r * row + j]);
        acc += expf(d * scale - mx) * kv(v[off + (long long)r * row + i]);
    }
    out[((long long)b * heads + h) * hd + i] = f2h(sum > 0.0f ? acc / sum : 0.0f);
    // Count the block in and, as the last one, re-arm the counter: the
    // counters are zero again when the step ends, as the vocabulary asks.
    __syncthreads();
    if (i == 0 && atomicAdd(&counters[b], 1u) == (unsigned)heads - 1) counters[b] = 0;
}

extern "C" __global__ void lse(const float* __restrict__ ws, float* __restrict__ out, int n) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) out[t] = ws[2 * t] + logf(ws[2 * t + 1]);
}
