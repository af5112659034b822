// sglang_stage2.cu: the second of two launches of the token-pool split-KV
// decode of sglang_stage1.cu, built into a file of its own (as SGLang's
// Triton stage-2 kernel is its own CUBIN) and loaded as the launch's own
// module: it merges the splits stage 1 wrote, taking SGLang's
// _fwd_kernel_stage2 arguments: the mid outputs (Mid_O, and Mid_O_1, the
// log-sum-exps), the output O, kv_indptr, num_kv_splits, the sinks (null
// here), the mid and output strides in elements, and Lv (a Triton
// constexpr, an argument here so that the file is built once for every
// head_dim).
//
// Mapping: grid (batch, heads), Lv threads per block, thread d owns dim
// d. It walks the sequence's num_kv_splits[b] splits, skipping the empty
// ones by stage 1's rule (MIN_BLOCK_KV-rounded split lengths), and merges
// them with a running max: acc·e^(old max − new max) + e^(lse − new max)
// ·Mid_O. O = acc / sum in f16. Numerics: f32, expf, every exponent ≤ 0:
// the tolerance class.

#ifndef MIN_BLOCK_KV
#define MIN_BLOCK_KV 32
#endif

__device__ __forceinline__ unsigned short f2h(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

extern "C" __global__ void __launch_bounds__(256) _fwd_kernel_stage2(
    const float *__restrict__ Mid_O, const float *__restrict__ Mid_O_1, unsigned short *__restrict__ O,
    const int *__restrict__ kv_indptr, const int *__restrict__ num_kv_splits, const float *__restrict__ sink_ptr,
    const int stride_mid_ob, const int stride_mid_oh, const int stride_mid_os, const int stride_obs,
    const int stride_oh, const int Lv) {
    const int b = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    if (d >= Lv) return;
    const int seq_len = kv_indptr[b + 1] - kv_indptr[b], splits = num_kv_splits[b];
    const int per_split = (((seq_len + splits - 1) / splits + MIN_BLOCK_KV - 1) / MIN_BLOCK_KV) * MIN_BLOCK_KV;
    float m = __int_as_float(0xff800000), sum = 0.f, acc = 0.f;
    for (int s = 0; s < splits; s++) {
        const int lo = s * per_split, hi = min(lo + per_split, seq_len);
        if (lo >= hi) continue;
        const long long off = (long long)b * stride_mid_ob + (long long)h * stride_mid_oh + (long long)s * stride_mid_os;
        const float lse = Mid_O_1[off / Lv], v = Mid_O[off + d];
        const float mn = fmaxf(m, lse), c = expf(m - mn), e = expf(lse - mn);
        acc = acc * c + e * v;
        sum = sum * c + e;
        m = mn;
    }
    if (sink_ptr) sum += expf(sink_ptr[h] - m);
    O[(long long)b * stride_obs + (long long)h * stride_oh + d] = f2h(acc / sum);
}
