// paged_flashinfer.cu: a single-pass decode over a paged K/V cache that
// takes its arguments the way FlashInfer's BatchDecode kernels do: one
// __grid_constant__ params struct holding q, a nested paged_kv struct
// (page size, KV head count, head_dim, batch, the page, token and head
// strides in elements, the K and V pools, and the page_indices /
// page_indptr / last_page_len triple that places each sequence's tokens),
// the outputs o and lse, and the scalars FlashInfer carries (q strides,
// window, soft-cap, scale, RoPE factors), then the planner's arrays
// (request_indices, kv_tile_indices, o_indptr, kv_chunk_size_ptr,
// block_valid_mask), which a single-pass launch leaves null, and
// partition_kv. batch_decode_paged_split below is the partitioned form,
// over the host-planned arrays, with its merge.
//
// Layout: HND pages, [num_pages][kv_heads][page_size][HEAD_DIM] (stride_h
// between heads, stride_n between tokens); sequence b uses pages
// indices[indptr[b] .. indptr[b+1]), all full but the last, which holds
// last_page_len[b] tokens.
//
// Mapping: grid (batch, kv_heads), block (32, group): warp y serves query
// head kv_head·group + y, lane l owns dims l, l+32, l+64, l+96 (HEAD_DIM
// ≤ 128), and walks the sequence's pages in order. Numerics: scores in the
// base-2 domain (sm_scale·log2(e) folded into q, exp2f), a numerically
// stable online softmax in f32 over f16 K/V, o in f16 divided once by the
// sum, lse = max + log2(sum) in f32 per (sequence, head): FlashInfer's
// base-2 log-sum-exp. The tolerance class.

#ifndef HEAD_DIM
#error HEAD_DIM is passed by ktune
#endif

__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

__device__ __forceinline__ unsigned short f2h(float f) {
    unsigned short h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}

struct paged_kv_t {
    unsigned page_size;
    unsigned num_heads; // KV heads
    unsigned head_dim;
    unsigned batch_size;
    unsigned stride_page; // elements between pages
    unsigned stride_n;    // elements between a page's tokens
    unsigned stride_h;    // elements between a page's heads
    const unsigned short *k_data, *v_data;
    const int *indices, *indptr, *last_page_len;
    const int *rope_pos_offset; // null: no RoPE applied here
};

struct decode_params {
    const unsigned short *q; // [batch][num_qo_heads][HEAD_DIM]
    const int *q_rope_offset;
    paged_kv_t paged_kv;
    unsigned short *o; // [batch][num_qo_heads][HEAD_DIM]
    float *lse;        // [batch][num_qo_heads]
    const float *alibi_slopes;
    unsigned padded_batch_size, num_qo_heads;
    int q_stride_n, q_stride_h, window_left;
    float logits_soft_cap, sm_scale, rope_rcp_scale, rope_rcp_theta;
    const int *request_indices, *kv_tile_indices, *o_indptr, *kv_chunk_size_ptr;
    const bool *block_valid_mask; // one byte an entry, as FlashInfer's (planned type: bool)
    bool partition_kv;
};

extern "C" __global__ void __launch_bounds__(1024) batch_decode_paged(const __grid_constant__ decode_params params) {
    constexpr int PER = (HEAD_DIM + 31) / 32;
    const paged_kv_t &kv = params.paged_kv;
    const int b = blockIdx.x, kvh = blockIdx.y, lane = threadIdx.x;
    const int group = params.num_qo_heads / kv.num_heads, h = kvh * group + threadIdx.y;
    const float log2e = 1.4426950408889634f;
    const unsigned short *qp = params.q + (long long)b * params.q_stride_n + (long long)h * params.q_stride_h;
    float q[PER], acc[PER];
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        q[i] = d < (int)kv.head_dim ? h2f(qp[d]) * (params.sm_scale * log2e) : 0.f;
        acc[i] = 0.f;
    }
    float m = __int_as_float(0xff800000), l = 0.f;
    const int first = kv.indptr[b], last = kv.indptr[b + 1];
    for (int it = first; it < last; it++) {
        const long long page = kv.indices[it];
        const int rows = it == last - 1 ? kv.last_page_len[b] : (int)kv.page_size;
        const unsigned short *kp = kv.k_data + page * kv.stride_page + (long long)kvh * kv.stride_h;
        const unsigned short *vp = kv.v_data + page * kv.stride_page + (long long)kvh * kv.stride_h;
        for (int r = 0; r < rows; r++) {
            float s = 0.f;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int d = lane + 32 * i;
                if (d < (int)kv.head_dim) s += q[i] * h2f(kp[(long long)r * kv.stride_n + d]);
            }
            for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
            const float mn = fmaxf(m, s), c = exp2f(m - mn), e = exp2f(s - mn);
            l = l * c + e;
#pragma unroll
            for (int i = 0; i < PER; i++) {
                const int d = lane + 32 * i;
                acc[i] = acc[i] * c + e * (d < (int)kv.head_dim ? h2f(vp[(long long)r * kv.stride_n + d]) : 0.f);
            }
            m = mn;
        }
    }
    unsigned short *op = params.o + ((long long)b * params.num_qo_heads + h) * kv.head_dim;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        if (d < (int)kv.head_dim) op[d] = f2h(acc[i] / l);
    }
    if (lane == 0 && params.lse) params.lse[(long long)b * params.num_qo_heads + h] = m + log2f(l);
}

// batch_decode_paged_split is the partitioned form (partition_kv true):
// the host's planner cuts every sequence into chunks of
// kv_chunk_size_ptr[0] tokens and lists the work items, request_indices
// (the sequence) and kv_tile_indices (the chunk), padded to a fixed grid
// with block_valid_mask false on the padding, so that a captured graph
// keeps its grid while the lengths grow. Item bx writes the chunk's
// normalised output and base-2 lse for every query head into o and lse,
// which here are f32 partial states [items][num_qo_heads][HEAD_DIM] and
// [items][num_qo_heads] (FlashInfer's tmp_v and tmp_s; f32 so that the
// merge adds no f16 rounding). merge_states then combines each sequence's
// items o_indptr[b] .. o_indptr[b+1].
//
// Mapping: grid (padded items, kv_heads), block (32, group), as the
// single-pass kernel, over the item's chunk only. A chunk is never empty
// (the planner makes cdiv(nkv, chunk) of them).
extern "C" __global__ void __launch_bounds__(1024) batch_decode_paged_split(const __grid_constant__ decode_params params) {
    constexpr int PER = (HEAD_DIM + 31) / 32;
    const paged_kv_t &kv = params.paged_kv;
    const int bx = blockIdx.x, kvh = blockIdx.y, lane = threadIdx.x;
    if (!params.block_valid_mask[bx]) return;
    const int b = params.request_indices[bx], tile = params.kv_tile_indices[bx], chunk = params.kv_chunk_size_ptr[0];
    const int group = params.num_qo_heads / kv.num_heads, h = kvh * group + threadIdx.y;
    const int first = kv.indptr[b], npages = kv.indptr[b + 1] - first;
    const int len = (npages - 1) * (int)kv.page_size + kv.last_page_len[b];
    const int lo = tile * chunk, hi = min(len, lo + chunk);
    const float log2e = 1.4426950408889634f;
    const unsigned short *qp = params.q + (long long)b * params.q_stride_n + (long long)h * params.q_stride_h;
    float q[PER], acc[PER];
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        q[i] = d < (int)kv.head_dim ? h2f(qp[d]) * (params.sm_scale * log2e) : 0.f;
        acc[i] = 0.f;
    }
    float m = __int_as_float(0xff800000), l = 0.f;
    for (int t = lo; t < hi; t++) {
        const long long page = kv.indices[first + t / (int)kv.page_size];
        const int r = t % (int)kv.page_size;
        const unsigned short *kp = kv.k_data + page * kv.stride_page + (long long)kvh * kv.stride_h + (long long)r * kv.stride_n;
        const unsigned short *vp = kv.v_data + page * kv.stride_page + (long long)kvh * kv.stride_h + (long long)r * kv.stride_n;
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            if (d < (int)kv.head_dim) s += q[i] * h2f(kp[d]);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        const float mn = fmaxf(m, s), c = exp2f(m - mn), e = exp2f(s - mn);
        l = l * c + e;
#pragma unroll
        for (int i = 0; i < PER; i++) {
            const int d = lane + 32 * i;
            acc[i] = acc[i] * c + e * (d < (int)kv.head_dim ? h2f(vp[d]) : 0.f);
        }
        m = mn;
    }
    float *tmp_v = (float *)params.o + ((long long)bx * params.num_qo_heads + h) * kv.head_dim;
#pragma unroll
    for (int i = 0; i < PER; i++) {
        const int d = lane + 32 * i;
        if (d < (int)kv.head_dim) tmp_v[d] = acc[i] / l;
    }
    if (lane == 0) params.lse[(long long)bx * params.num_qo_heads + h] = m + log2f(l);
}

// merge_states combines the partial states of each sequence's work items,
// FlashInfer's variable-length merge: grid (batch, num_qo_heads), HEAD_DIM
// threads, thread d owns dim d; a running max over the items' base-2 lse,
// out in f16, and the merged lse (max + log2(sum)) in f32.
extern "C" __global__ void __launch_bounds__(256) merge_states(
    const float *__restrict__ tmp_v, const float *__restrict__ tmp_s, const int *__restrict__ o_indptr,
    unsigned short *__restrict__ o, float *__restrict__ lse, const unsigned num_qo_heads, const unsigned head_dim) {
    const int b = blockIdx.x, h = blockIdx.y, d = threadIdx.x;
    if (d >= (int)head_dim) return;
    float m = __int_as_float(0xff800000), sum = 0.f, acc = 0.f;
    for (int it = o_indptr[b]; it < o_indptr[b + 1]; it++) {
        const float s = tmp_s[(long long)it * num_qo_heads + h];
        const float mn = fmaxf(m, s), c = exp2f(m - mn), e = exp2f(s - mn);
        acc = acc * c + e * tmp_v[((long long)it * num_qo_heads + h) * head_dim + d];
        sum = sum * c + e;
        m = mn;
    }
    o[((long long)b * num_qo_heads + h) * head_dim + d] = f2h(acc / sum);
    if (d == 0) lse[(long long)b * num_qo_heads + h] = m + log2f(sum);
}
