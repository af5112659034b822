// util.cu: measurement kernels compiled alongside nothing else (their own
// NVRTC module), so that they never change an attention kernel's build.
//
//   ktune_read_bw  streaming read bandwidth: the roof every GB/s is a
//                  percentage of.
//   ktune_block    the stream blocker: holds the stream while the host
//                  enqueues the timed launches, so host launch latency is
//                  not in the timed region (the method nvbench uses).
//   ktune_clock    samples the SM clock: cycles over wall time.
//   ktune_digest   digests a buffer in segments: the gates' check that a
//                  launch left its read-only inputs as uploaded.
//   ktune_fill     writes the seeded random fill of a workspace's q, K and
//                  V (probe/fill.go) where the data lives.
//   ktune_copies   runs a list of device-to-device copies in one launch:
//                  the repeated pages of a paged cache tiled to its
//                  capacity (probe/long.go).
//
// None of them follows the attention ABI; package probe launches each with
// the geometry stated in its comment.

// globaltimer reads the global nanosecond timer. Its resolution is coarse
// (about 1 µs on recent GPUs), which is why the timeouts and the clock
// probe measure spans of a millisecond or more.
__device__ __forceinline__ unsigned long long globaltimer() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// ktune_read_bw reads n4 float4s of src once, grid-stride, four independent
// 16-byte loads in flight per thread per iteration (one load per thread
// cannot cover HBM latency at realistic occupancy).
// Launch: grid = SMs × (blocks per SM that fill it), block = 256.
// The sum is written only if it equals a value the host never stores
// (src is zero-filled, so the sum is 0): the compiler cannot prove the
// condition false, so it must keep every load, and no store traffic is
// added to the read being measured.
extern "C" __global__ void ktune_read_bw(const float4* __restrict__ src,
                                         unsigned long long n4,
                                         float* sink) {
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i];
        float4 b = src[i + stride];
        float4 c = src[i + 2 * stride];
        float4 d = src[i + 3 * stride];
        acc += (a.x + a.y + a.z + a.w) + (b.x + b.y + b.z + b.w)
             + (c.x + c.y + c.z + c.w) + (d.x + d.y + d.z + d.w);
    }
    for (; i < n4; i += stride) {
        float4 a = src[i];
        acc += a.x + a.y + a.z + a.w;
    }
    if (acc == -1.0f) {
        sink[0] = acc;
    }
}

// ktune_block spins until *flag (mapped host memory the host writes) is
// non-zero, or until timeout_ns of %globaltimer time have passed, in which
// case it sets *timed_out so that the host can discard the sample (the
// timed launches may then have started before the host finished enqueuing
// them). Launch: grid 1, block 1.
// volatile: the flag must be re-read from host memory on every iteration.
extern "C" __global__ void ktune_block(const volatile int* flag,
                                       unsigned long long timeout_ns,
                                       volatile int* timed_out) {
    const unsigned long long t0 = globaltimer();
    while (*flag == 0) {
        if (globaltimer() - t0 > timeout_ns) {
            *timed_out = 1;
            break;
        }
    }
}

// ktune_clock spins for `cycles` SM clock cycles and writes the cycles and
// nanoseconds actually elapsed: out[0] = Δclock64, out[1] = Δglobaltimer,
// so the SM clock in MHz is 1000·out[0]/out[1]. Launch: grid 1, block 1.
// One thread suffices: clock64 is per SM and every SM shares the clock
// domain; a long spin keeps the 1 µs timer resolution below 0.1%.
extern "C" __global__ void ktune_clock(unsigned long long cycles, unsigned long long* out) {
    const unsigned long long g0 = globaltimer();
    const long long c0 = clock64();
    long long c1 = c0;
    while ((unsigned long long)(c1 - c0) < cycles) {
        c1 = clock64();
    }
    const unsigned long long g1 = globaltimer();
    out[0] = (unsigned long long)(c1 - c0);
    out[1] = g1 - g0;
}

// kt_mix is splitmix64's finalizer: every input bit reaches every output
// bit, so one changed byte changes the digest.
__device__ __forceinline__ unsigned long long kt_mix(unsigned long long z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// ktune_digest writes one 64-bit digest per seg16 16-byte words of src
// (n16 words in all) to out: the XOR over the segment's words of a hash of
// (word index, word), so that a changed or moved word changes its
// segment's digest and the order threads visit the words does not. The
// gates compare a read-only buffer's digests before and after a launch
// without copying gigabytes back. Launch: grid = any number of blocks
// (they stride over the segments), block = 256.
extern "C" __global__ void ktune_digest(const uint4* __restrict__ src, unsigned long long n16,
                                        unsigned long long seg16, unsigned long long* out) {
    __shared__ unsigned long long part[8];
    const unsigned long long nseg = (n16 + seg16 - 1) / seg16;
    for (unsigned long long s = blockIdx.x; s < nseg; s += gridDim.x) {
        const unsigned long long lo = s * seg16;
        const unsigned long long hi = min(n16, lo + seg16);
        unsigned long long acc = 0;
        for (unsigned long long i = lo + threadIdx.x; i < hi; i += blockDim.x) {
            const uint4 w = src[i];
            const unsigned long long a = ((unsigned long long)w.y << 32) | w.x;
            const unsigned long long b = ((unsigned long long)w.w << 32) | w.z;
            acc ^= kt_mix(kt_mix(a + i * 0x9e3779b97f4a7c15ull) ^ b);
        }
        for (int o = 16; o > 0; o >>= 1) {
            acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
        }
        if ((threadIdx.x & 31) == 0) {
            part[threadIdx.x >> 5] = acc;
        }
        __syncthreads();
        if (threadIdx.x == 0) {
            unsigned long long d = 0;
            for (int w = 0; w < (int)(blockDim.x >> 5); w++) {
                d ^= part[w];
            }
            out[s] = d;
        }
        __syncthreads();
    }
}

// kt_fill_bits is element i of the fill of kvtype code CODE
// (kvtype.Type.Code: 0 f32, 1 f16, 2 bf16, 3 fp8e4m3), bit for bit what
// probe/fill.go's fillValues writes: splitmix64's finalizer over
// seed + i·golden, then f32: the multiple of 2^-23 (h>>40 − 2^23)·2^-23,
// exact in float; f16 and bf16: entry h>>53 of the type's grid (the Go
// tables, copied to the device, so that their rounding has one home);
// fp8e4m3: the top byte, a NaN code S.1111.111 turned into ±448.
template <int CODE>
__device__ __forceinline__ unsigned kt_fill_bits(const unsigned short* grid, unsigned long long seed,
                                                 unsigned long long i) {
    const unsigned long long h = kt_mix(seed + i * 0x9e3779b97f4a7c15ull);
    if (CODE == 0) {
        return __float_as_uint((float)((long long)(h >> 40) - (1ll << 23)) * (1.0f / 8388608.0f));
    }
    if (CODE == 3) {
        unsigned b = (unsigned)(h >> 56);
        return (b & 0x7fu) == 0x7fu ? b ^ 1u : b;
    }
    return grid[h >> 53];
}

// kt_fill writes elements [first, first+n) of the fill, ELT bytes each,
// into dst (element 0 at dst). Thread t of the grid owns 16-byte words
// t, t+stride, ...: a word wholly inside the range is one 16-byte store of
// 16/ELT elements, the (at most two) words it only partly covers are
// written element by element, so bytes outside the range are not touched.
template <int CODE, int ELT>
__device__ __forceinline__ void kt_fill(unsigned char* __restrict__ dst, unsigned long long first,
                                        unsigned long long n, unsigned long long seed,
                                        const unsigned short* grid) {
    const int PER = 16 / ELT;
    const unsigned long long end = first + n;
    const unsigned long long hi = (end + PER - 1) / PER;
    const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
    for (unsigned long long w = first / PER + (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x; w < hi;
         w += stride) {
        const unsigned long long e0 = w * PER;
        if (e0 >= first && e0 + PER <= end) {
            unsigned v[4] = {0u, 0u, 0u, 0u};
#pragma unroll
            for (int j = 0; j < PER; j++) {
                v[j * ELT / 4] |= kt_fill_bits<CODE>(grid, seed, e0 + j) << (8 * ((j * ELT) % 4));
            }
            reinterpret_cast<uint4*>(dst)[w] = make_uint4(v[0], v[1], v[2], v[3]);
            continue;
        }
        for (int j = 0; j < PER; j++) {
            const unsigned long long e = e0 + j;
            if (e < first || e >= end) {
                continue;
            }
            const unsigned b = kt_fill_bits<CODE>(grid, seed, e);
            if (ELT == 1) {
                dst[e] = (unsigned char)b;
            } else if (ELT == 2) {
                reinterpret_cast<unsigned short*>(dst)[e] = (unsigned short)b;
            } else {
                reinterpret_cast<unsigned*>(dst)[e] = b;
            }
        }
    }
}

// ktune_fill writes elements [first, first+n) of the seeded random fill of
// kvtype code `code` into the buffer at dst (16-byte aligned; element 0 at
// dst), as kt_fill maps them. grids holds the f16 grid's 2048 entries,
// then the bf16 grid's (probe/fill.go); the block copies the one it needs
// to shared memory first, because the lookups are random and a warp's 32
// of them would otherwise be up to 32 L1 wavefronts.
// Launch: grid = any number of blocks (they stride over the words),
// block = 256.
extern "C" __global__ void ktune_fill(unsigned char* __restrict__ dst, unsigned long long first,
                                      unsigned long long n, unsigned long long seed, int code,
                                      const unsigned short* __restrict__ grids) {
    __shared__ unsigned short grid[2048];
    if (code == 1 || code == 2) {
        const unsigned short* src = grids + (code - 1) * 2048;
        for (int k = threadIdx.x; k < 2048; k += blockDim.x) {
            grid[k] = src[k];
        }
        __syncthreads();
    }
    switch (code) {
    case 0: kt_fill<0, 4>(dst, first, n, seed, grid); break;
    case 1: kt_fill<1, 2>(dst, first, n, seed, grid); break;
    case 2: kt_fill<2, 2>(dst, first, n, seed, grid); break;
    case 3: kt_fill<3, 1>(dst, first, n, seed, grid); break;
    }
}

// One copy of ktune_copies' list: n bytes from src to dst (device
// addresses). probe/util.go writes the list as three little-endian
// 64-bit words a copy, in this order.
struct ktune_copy {
    unsigned long long dst, src, n;
};

// ktune_copies runs the count copies of list, a block a copy at a time
// (blocks stride over the list), in 16-byte words where dst, src and n are
// all multiples of 16 and byte by byte otherwise. No copy's destination
// may overlap another copy's source or destination: the copies run in no
// order. Launch: grid = any number of blocks, block = 256.
extern "C" __global__ void ktune_copies(const ktune_copy* __restrict__ list,
                                        unsigned long long count) {
    for (unsigned long long i = blockIdx.x; i < count; i += gridDim.x) {
        const ktune_copy c = list[i];
        if (((c.dst | c.src | c.n) & 15ull) == 0) {
            uint4* d = reinterpret_cast<uint4*>(c.dst);
            const uint4* s = reinterpret_cast<const uint4*>(c.src);
            for (unsigned long long j = threadIdx.x; j < c.n / 16; j += blockDim.x) {
                d[j] = s[j];
            }
        } else {
            unsigned char* d = reinterpret_cast<unsigned char*>(c.dst);
            const unsigned char* s = reinterpret_cast<const unsigned char*>(c.src);
            for (unsigned long long j = threadIdx.x; j < c.n; j += blockDim.x) {
                d[j] = s[j];
            }
        }
    }
}
