// mask_vec.cu: a one-launch decode kernel that takes its arguments the
// way llama.cpp's vector flash-attention kernels do: Q, K, V and the mask
// as byte pointers addressed through byte strides (nb*1 between rows,
// nb*2 between heads, nb*3 between sequences, the last 64-bit), the sizes
// as ne* ints and the query rows as a uint3 by value (llama.cpp's fastdiv
// triple: mp, L, d, with d the count), the ALiBi and soft-cap parameters
// as floats, and the pointers a multi-block run uses (sinks, KV_max,
// dst_meta) null. There are no lengths: the additive f16 mask
// [seq][token][ne11] is 0 where a query token may see a KV row and −inf
// elsewhere, as llama.cpp encodes the context (and the causal and window
// edges) in its KQ mask.
//
// Mapping: one warp per (head, sequence), which serves the sequence's
// query tokens one after the other; lane l owns dims
// l, l+32, l+64, l+96 of HEAD_DIM (≤ 128). The warp walks every KV row of
// the capacity; a row whose mask is −inf is skipped before K or V is read,
// so the rows past a sequence's length (stale: NaN, Inf) never enter the
// sums. Numerics: f32 dot products over f16 K/V, a numerically stable
// online softmax (running max, rescaled sum and accumulator, expf), out in
// f32 divided once by the sum: the tolerance class. A token that sees no
// row writes 0.

#ifndef HEAD_DIM
#error HEAD_DIM is passed by ktune
#endif

__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

extern "C" __global__ void __launch_bounds__(32) flash_attn_vec_mask(
    const char *__restrict__ Q, const char *__restrict__ K, const char *__restrict__ V,
    const char *__restrict__ mask, const char *__restrict__ sinks, const int *__restrict__ KV_max,
    float *__restrict__ dst, float2 *__restrict__ dst_meta,
    const float scale, const float max_bias, const float m0, const float m1,
    const unsigned n_head_log2, const float logit_softcap,
    const int ne00, const uint3 ne01, const int ne02, const int ne03,
    const int nb01, const int nb02, const int nb03,
    const int ne10, const int ne11, const int ne12, const int ne13,
    const int nb11, const int nb12, const long long nb13,
    const int nb21, const int nb22, const long long nb23,
    const int ne31, const int ne32, const int ne33,
    const int nb31, const int nb32, const long long nb33) {
    constexpr int D = HEAD_DIM, PER = (D + 31) / 32;
    const int h = blockIdx.x, b = blockIdx.y, lane = threadIdx.x;
    const int ntok = ne01.z; // the fastdiv triple's divisor: the query rows per sequence
    const int kvh = h / (ne02 / ne12);
    // ALiBi as llama.cpp derives it from max_bias; 1 without (max_bias 0).
    float slope = 1.f;
    if (max_bias > 0.f)
        slope = h < (int)n_head_log2 ? powf(m0, (float)(h + 1)) : powf(m1, (float)(2 * (h - (int)n_head_log2) + 1));
    for (int t = 0; t < ntok; t++) {
        const float *qr = (const float *)(Q + (long long)b * nb03 + (long long)h * nb02 + (long long)t * nb01);
        float q[PER];
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            q[i] = d < ne00 ? qr[d] : 0.f;
        }
        const char *kb = K + b * nb13 + (long long)kvh * nb12;
        const char *vb = V + b * nb23 + (long long)kvh * nb22;
        const unsigned short *mrow = (const unsigned short *)(mask + b * nb33 + (long long)(h % ne32) * nb32 + (long long)t * nb31);
        float m = __int_as_float(0xff800000), l = 0.f, acc[PER];
#pragma unroll
        for (int i = 0; i < PER; i++) acc[i] = 0.f;
        for (int r = 0; r < ne11; r++) {
            const float mv = h2f(mrow[r]);
            if (mv == __int_as_float(0xff800000)) continue; // the same for every lane: the warp skips together
            const unsigned short *kr = (const unsigned short *)(kb + (long long)r * nb11);
            float s = 0.f;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int d = lane + 32 * i;
                if (d < ne00) s += q[i] * h2f(kr[d]);
            }
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            s *= scale;
            if (logit_softcap != 0.f) s = logit_softcap * tanhf(s / logit_softcap);
            s += slope * mv;
            const float mn = fmaxf(m, s), c = expf(m - mn), e = expf(s - mn);
            const unsigned short *vr = (const unsigned short *)(vb + (long long)r * nb21);
            l = l * c + e;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int d = lane + 32 * i;
                acc[i] = acc[i] * c + e * (d < ne00 ? h2f(vr[d]) : 0.f);
            }
            m = mn;
        }
        float *out = dst + (((long long)b * ntok + t) * ne02 + h) * D;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            if (d < ne00) out[d] = l > 0.f ? acc[i] / l : 0.f;
        }
    }
}
