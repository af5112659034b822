// sglang_stage1.cu: the first of two launches of a split-KV decode over a
// token pool, taking its arguments the way SGLang's Triton decode kernel
// (_fwd_kernel_stage1) does: q, the K and V pools, sm_scale, kv_indptr and
// kv_indices (each sequence's token slots: a paged cache of page size 1),
// the two mid outputs (Att_Out, Att_Lse), the per-sequence split counts
// num_kv_splits, then the strides in elements (q, K pool, V pool, mid
// output), the GQA group and the soft-cap. Triton's constexprs are this
// file's defines: SPLITS is MAX_KV_SPLITS, MIN_BLOCK_KV 32. Stage 2 is
// sglang_stage2.cu, built into a file of its own.
//
// Layout: K and V pools [slots][kv_heads][HEAD_DIM] (stride_buf_*bs between
// slots, stride_buf_*h between heads); Att_Out [batch][heads][MAX_KV_SPLITS]
// [HEAD_DIM] f32 (stride_mid_ob, _oh, _os) and Att_Lse at the same offsets
// divided by HEAD_DIM, [batch][heads][MAX_KV_SPLITS].
//
// Mapping: grid (batch, heads, MAX_KV_SPLITS), one warp per block; lane l
// owns dims l, l+32, l+64, l+96 (HEAD_DIM ≤ 128). Sequence b's
// num_kv_splits[b] splits each cover kv_len_per_split = MIN_BLOCK_KV ·
// cdiv(cdiv(seq_len, splits), MIN_BLOCK_KV) tokens, as SGLang rounds them;
// an empty split (and every split past num_kv_splits[b]) writes nothing,
// and stage 2 skips it by the same rule. Numerics: an online softmax in
// f32 over f16 K/V (expf, running max), Att_Out the split's normalised
// output and Att_Lse = max + ln(sum): the tolerance class.

#ifndef HEAD_DIM
#error HEAD_DIM is passed by ktune
#endif
#ifndef MIN_BLOCK_KV
#define MIN_BLOCK_KV 32
#endif

__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

extern "C" __global__ void __launch_bounds__(32) _fwd_kernel_stage1(
    const unsigned short *__restrict__ Q, const unsigned short *__restrict__ K_Buffer,
    const unsigned short *__restrict__ V_Buffer, const float sm_scale,
    const int *__restrict__ kv_indptr, const int *__restrict__ kv_indices,
    float *__restrict__ Att_Out, float *__restrict__ Att_Lse, const int *__restrict__ num_kv_splits,
    const int stride_qbs, const int stride_qh, const int stride_buf_kbs, const int stride_buf_kh,
    const int stride_buf_vbs, const int stride_buf_vh, const int stride_mid_ob, const int stride_mid_oh,
    const int stride_mid_os, const int kv_group_num, const float logit_cap) {
    constexpr int PER = (HEAD_DIM + 31) / 32;
    const int b = blockIdx.x, h = blockIdx.y, split = blockIdx.z, lane = threadIdx.x;
    const int kvh = h / kv_group_num;
    const int start_tok = kv_indptr[b], seq_len = kv_indptr[b + 1] - start_tok;
    const int splits = num_kv_splits[b];
    const int per_split = (((seq_len + splits - 1) / splits + MIN_BLOCK_KV - 1) / MIN_BLOCK_KV) * MIN_BLOCK_KV;
    const int lo = split * per_split, hi = min(lo + per_split, seq_len);
    if (lo >= hi) return;
    float q[PER], acc[PER];
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        q[i] = d < HEAD_DIM ? h2f(Q[(long long)b * stride_qbs + (long long)h * stride_qh + d]) : 0.f;
        acc[i] = 0.f;
    }
    float m = __int_as_float(0xff800000), l = 0.f;
    for (int t = lo; t < hi; t++) {
        const long long slot = kv_indices[start_tok + t];
        const unsigned short *kr = K_Buffer + slot * stride_buf_kbs + (long long)kvh * stride_buf_kh;
        const unsigned short *vr = V_Buffer + slot * stride_buf_vbs + (long long)kvh * stride_buf_vh;
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            if (d < HEAD_DIM) s += q[i] * h2f(kr[d]);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        s *= sm_scale;
        if (logit_cap > 0.f) s = logit_cap * tanhf(s / logit_cap);
        const float mn = fmaxf(m, s), c = expf(m - mn), e = expf(s - mn);
        l = l * c + e;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            acc[i] = acc[i] * c + e * (d < HEAD_DIM ? h2f(vr[d]) : 0.f);
        }
        m = mn;
    }
    const long long off = (long long)b * stride_mid_ob + (long long)h * stride_mid_oh + (long long)split * stride_mid_os;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        if (d < HEAD_DIM) Att_Out[off + d] = acc[i] / l;
    }
    if (lane == 0) Att_Lse[off / HEAD_DIM] = m + logf(l);
}
