// paged_vllm.cu: a split-KV decode over a paged K/V cache that takes its
// arguments the way vLLM's paged_attention v2 does: the partition kernel's
// 22 plain parameters in vLLM's order (the engine's scratch arrays
// exp_sums, max_logits and tmp_out first, then q, the two caches, the KV
// head count, the scale, the block table with its row stride
// max_num_blocks_per_seq, seq_lens, the ALiBi slopes (null here), the q
// and cache strides in elements, the fp8 scale pointers (null: f16), the
// tensor-parallel rank and the block-sparse settings, unused), and a
// reduce kernel over the partitions.
//
// Layout (vLLM's): K page [kv_heads][HEAD_DIM/X][BLOCK_SIZE][X] with X = 8
// f16 (16 bytes), V page [kv_heads][HEAD_DIM][BLOCK_SIZE]; sequence s's
// token t lies in page block_tables[s][t / BLOCK_SIZE], row t % BLOCK_SIZE.
//
// Mapping: partition kernel: one block of 128 threads (4 warps) per (head,
// sequence, partition) on grid (heads, batch, max partitions); partition
// p covers tokens [p·PARTITION_SIZE, (p+1)·PARTITION_SIZE) of its
// sequence, and one past the sequence returns at once, writing nothing
// (the reduce reads only the cdiv(seq_len, PARTITION_SIZE) it needs).
// Warp w computes the scores of tokens w, w+4, … (lanes split HEAD_DIM,
// a butterfly sums them) into shared memory; the block takes their max,
// turns them into exponentials and sums them; thread d then accumulates
// dim d of V over the partition. tmp_out holds the partition's normalised
// output (f32 here, where vLLM keeps the model's type: an f16 round trip
// would add 2^-11 relative error the gates do not discount), max_logits its
// max and exp_sums its sum. Reduce: one block per (head, sequence) weighs
// each partition by exp_sum·exp(max − global max) and writes out in f16.
// Numerics: f32 throughout over f16 K/V, expf, numerically stable (every
// exponent is ≤ 0): the tolerance class. HEAD_DIM ≤ 128 (a thread per dim).

#ifndef HEAD_DIM
#error HEAD_DIM is passed by ktune
#endif
#ifndef PAGE_SIZE
#error PAGE_SIZE (vLLM's block size) is a define of the spec
#endif
#ifndef PARTITION_SIZE
#define PARTITION_SIZE 512
#endif
#define BLOCK_SIZE PAGE_SIZE
#define NUM_THREADS 128
#define NUM_WARPS (NUM_THREADS / 32)
#define X 8 // f16 elements in 16 bytes: K's innermost split

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

// block_max and block_sum reduce over the block's NUM_THREADS threads;
// every thread gets the result.
__device__ float block_max(float x, float *red) {
    for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
    __syncthreads();
    float r = red[0];
    for (int w = 1; w < NUM_WARPS; w++) r = fmaxf(r, red[w]);
    __syncthreads();
    return r;
}

__device__ float block_sum(float x, float *red) {
    for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
    if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = x;
    __syncthreads();
    float r = 0.f;
    for (int w = 0; w < NUM_WARPS; w++) r += red[w];
    __syncthreads();
    return r;
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS) paged_attention_v2(
    float *__restrict__ exp_sums,         // [num_seqs][num_heads][max_num_partitions]
    float *__restrict__ max_logits,       // [num_seqs][num_heads][max_num_partitions]
    float *__restrict__ tmp_out,          // [num_seqs][num_heads][max_num_partitions][HEAD_DIM]
    const unsigned short *__restrict__ q, // [num_seqs][num_heads][HEAD_DIM]
    const unsigned short *__restrict__ k_cache, const unsigned short *__restrict__ v_cache,
    const int num_kv_heads, const float scale,
    const int *__restrict__ block_tables, // [num_seqs][max_num_blocks_per_seq]
    const int *__restrict__ seq_lens, const int max_num_blocks_per_seq,
    const float *__restrict__ alibi_slopes, // [num_heads] or null
    const int q_stride, const int kv_block_stride, const int kv_head_stride,
    const float *k_scale, const float *v_scale, const int tp_rank,
    const int blocksparse_local_blocks, const int blocksparse_vert_stride,
    const int blocksparse_block_size, const int blocksparse_head_sliding_step) {
    const int head = blockIdx.x, seq = blockIdx.y, part = blockIdx.z;
    const int num_heads = gridDim.x, max_parts = gridDim.z;
    const int seq_len = seq_lens[seq];
    const int start = part * PARTITION_SIZE;
    if (start >= seq_len) return;
    const int n = min(seq_len, start + PARTITION_SIZE) - start;
    const int kvh = head / (num_heads / num_kv_heads);
    const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    __shared__ float qs[HEAD_DIM];
    __shared__ float logits[PARTITION_SIZE];
    __shared__ float red[NUM_WARPS];
    for (int d = tid; d < HEAD_DIM; d += NUM_THREADS) qs[d] = h2f(q[(long long)seq * q_stride + head * HEAD_DIM + d]);
    __syncthreads();
    const int *table = block_tables + (long long)seq * max_num_blocks_per_seq;
    const float slope = alibi_slopes ? alibi_slopes[head] : 0.f;
    for (int i = warp; i < n; i += NUM_WARPS) {
        const int tok = start + i, off = tok % BLOCK_SIZE;
        const unsigned short *kp = k_cache + (long long)table[tok / BLOCK_SIZE] * kv_block_stride + (long long)kvh * kv_head_stride;
        float s = 0.f;
        for (int d = lane; d < HEAD_DIM; d += 32) s += qs[d] * h2f(kp[(d / X) * (BLOCK_SIZE * X) + off * X + d % X]);
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) logits[i] = s * scale + slope * (float)(tok - seq_len + 1);
    }
    __syncthreads();
    float m = __int_as_float(0xff800000);
    for (int i = tid; i < n; i += NUM_THREADS) m = fmaxf(m, logits[i]);
    m = block_max(m, red);
    float sum = 0.f;
    for (int i = tid; i < n; i += NUM_THREADS) {
        const float e = expf(logits[i] - m);
        logits[i] = e;
        sum += e;
    }
    sum = block_sum(sum, red); // its __syncthreads also publishes the exponentials
    const long long slot = ((long long)seq * num_heads + head) * max_parts + part;
    for (int d = tid; d < HEAD_DIM; d += NUM_THREADS) {
        float acc = 0.f;
        for (int i = 0; i < n; i++) {
            const int tok = start + i;
            const unsigned short *vp = v_cache + (long long)table[tok / BLOCK_SIZE] * kv_block_stride + (long long)kvh * kv_head_stride;
            acc += logits[i] * h2f(vp[d * BLOCK_SIZE + tok % BLOCK_SIZE]);
        }
        tmp_out[slot * HEAD_DIM + d] = acc / sum;
    }
    if (tid == 0) {
        max_logits[slot] = m;
        exp_sums[slot] = sum;
    }
}

extern "C" __global__ void __launch_bounds__(NUM_THREADS) paged_attention_v2_reduce(
    unsigned short *__restrict__ out, // [num_seqs][num_heads][HEAD_DIM]
    const float *__restrict__ exp_sums, const float *__restrict__ max_logits,
    const float *__restrict__ tmp_out, const int *__restrict__ seq_lens, const int max_num_partitions) {
    const int head = blockIdx.x, seq = blockIdx.y, num_heads = gridDim.x;
    const int parts = (seq_lens[seq] + PARTITION_SIZE - 1) / PARTITION_SIZE;
    const long long base = ((long long)seq * num_heads + head) * max_num_partitions;
    float gmax = __int_as_float(0xff800000);
    for (int p = 0; p < parts; p++) gmax = fmaxf(gmax, max_logits[base + p]);
    float den = 0.f;
    for (int p = 0; p < parts; p++) den += exp_sums[base + p] * expf(max_logits[base + p] - gmax);
    for (int d = threadIdx.x; d < HEAD_DIM; d += NUM_THREADS) {
        float acc = 0.f;
        for (int p = 0; p < parts; p++)
            acc += tmp_out[(base + p) * HEAD_DIM + d] * exp_sums[base + p] * expf(max_logits[base + p] - gmax);
        out[((long long)seq * num_heads + head) * HEAD_DIM + d] = f2h(acc / den);
    }
}
