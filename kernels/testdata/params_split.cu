// params_split.cu: a split-KV decode kernel that takes its arguments the
// way FlashAttention-2's split-KV path does, in one by-value params
// struct (the same struct for the partial and the combine launch), with
// element strides as 64-bit integers and the context length read from
// seqlens on the device.
//
// Mapping: partial: one warp per (split, head, sequence); lane l owns
// dims l, l+32, … of head_dim. Split s takes rows [s·chunk, (s+1)·chunk)
// of its sequence, chunk = ceil(nkv / splits), and writes the ABI's
// partial slot (kernels/ABI.md): p[0] its max, p[1] its sum, p[2..3]
// zeros, p[4 .. 4+head_dim) its un-normalised accumulator, so the gates
// read the slots (written, bitwise, determinism). combine: one block
// of head_dim threads per (head, sequence) merges the splits into out.
// Numerics: f32 accumulation over f16 K/V, the tolerance class.
// The spec keeps head_dim ≤ 128 (four dims per lane).

// h2f converts one IEEE binary16 to f32 with one PTX cvt, so that the
// kernel needs no toolkit header (NVRTC carries none built in).
__device__ __forceinline__ float h2f(unsigned short h) {
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}

struct split_params {
    const float *q;            // [batch][heads][head_dim]
    const unsigned short *k, *v;  // f16 bits       // bshd, strides below
    float *partial;            // [batch][splits][heads][pstr]
    float *out;                // [batch][heads][head_dim]
    const int *seqlens;        // [batch]
    long long row_stride, head_stride, batch_stride;  // elements
    int heads, kv_heads, head_dim, splits, pstr;
    float scale;
};

extern "C" __global__ void split_partial(const __grid_constant__ split_params p) {
    const int sp = blockIdx.x, h = blockIdx.y, b = blockIdx.z, lane = threadIdx.x;
    const int nkv = p.seqlens[b];
    const int chunk = (nkv + p.splits - 1) / p.splits;
    const int lo = sp * chunk, hi = min(nkv, lo + chunk);
    const int kvh = h / (p.heads / p.kv_heads);
    const float *q = p.q + ((size_t)b * p.heads + h) * p.head_dim;
    const unsigned short *kb = p.k + b * p.batch_stride + kvh * p.head_stride;
    const unsigned short *vb = p.v + b * p.batch_stride + kvh * p.head_stride;
    // Four dims per lane: head_dim up to 128, in registers (the loops
    // over them unroll, so acc is never indexed at run time).
    float m = __int_as_float(0xff800000), l = 0.f, acc[4] = {0.f, 0.f, 0.f, 0.f};
    const int per = 4;
    for (int r = lo; r < hi; r++) {
        float s = 0.f;
#pragma unroll
        for (int i = 0; i < per; i++) {
            int d = lane + 32 * i;
            if (d < p.head_dim) s += q[d] * h2f(kb[r * p.row_stride + d]);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        s *= p.scale;
        float mn = fmaxf(m, s), c = __expf(m - mn), e = __expf(s - mn);
        l = l * c + e;
#pragma unroll
        for (int i = 0; i < per; i++) {
            int d = lane + 32 * i;
            float x = d < p.head_dim ? h2f(vb[r * p.row_stride + d]) : 0.f;
            acc[i] = acc[i] * c + e * x;
        }
        m = mn;
    }
    float *slot = p.partial + (((size_t)b * p.splits + sp) * p.heads + h) * p.pstr;
#pragma unroll
    for (int i = 0; i < per; i++) {
        int d = lane + 32 * i;
        if (d < p.head_dim) slot[4 + d] = acc[i];
    }
    if (lane == 0) {
        slot[0] = m;
        slot[1] = l;
        slot[2] = 0.f;
        slot[3] = 0.f;
    }
}

extern "C" __global__ void split_combine(const __grid_constant__ split_params p) {
    const int h = blockIdx.x, b = blockIdx.y, d = threadIdx.x;
    if (d >= p.head_dim) return;
    float m = __int_as_float(0xff800000);
    for (int s = 0; s < p.splits; s++)
        m = fmaxf(m, p.partial[(((size_t)b * p.splits + s) * p.heads + h) * p.pstr]);
    float num = 0.f, den = 0.f;
    for (int s = 0; s < p.splits; s++) {
        const float *slot = p.partial + (((size_t)b * p.splits + s) * p.heads + h) * p.pstr;
        if (slot[1] == 0.f) continue;  // an idle split: max −inf, sum 0
        float w = __expf(slot[0] - m);
        num += w * slot[4 + d];
        den += w * slot[1];
    }
    p.out[((size_t)b * p.heads + h) * p.head_dim + d] = num / den;
}
