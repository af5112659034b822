// mma_core.cuh: the tensor-core partial as device functions, shared by
// mma.cu (followed by the separate combine) and mma_fused.cu (the splits
// merged in the same launch), so both run exactly the same per-split
// computation and write the same partial slots bit for bit. The mapping,
// the numerics and the tuning notes are mma.cu's header comment.
#pragma once
#include "abi.cuh"
#include "gqa_block.cuh"

#ifndef NR
#define NR 1
#endif
#ifndef WARPS
#define WARPS 8
#endif
#ifndef GN
#define GN 1
#endif
#ifndef PF
#define PF 0
#endif
#define GMAX (8 * GN)
// WN warps share each 16-row tile, warp column wc taking n-tiles wc*GNW ..
// wc*GNW + GNW - 1 of the GN: with several query tokens the columns
// (QLEN x group) outgrow one warp's registers (GN 4 alone needs 255 and
// spills), and splitting them keeps a warp's accumulators at GNW n-tiles
// while the rows are still read from DRAM once (the WN warps of a tile
// load it together, the later ones from L1). The merge area has one row of
// warps per WARPS/WN.
#ifndef WN
#define WN 1
#endif
#if GN % WN != 0 || WARPS % WN != 0
#error "mma: WN must divide GN and WARPS"
#endif
#define GNW (GN / WN)
#define WROWS (WARPS / WN)

// The forms of the kernel an engine needs (kernels/ABI.md, "Paged KV,
// several query tokens, soft-cap and sinks"), each off by default, so the
// contiguous one-token kernel compiles to what it always did:
//   PAGE_SIZE  0: K/V contiguous, [batch][capacity][kv_heads][HEAD_DIM];
//              16, 32, 64...: paged, [pages][PAGE_SIZE][kv_heads][HEAD_DIM]
//              through block_table [batch][max_pages] (int32 page numbers).
//   QLEN       query tokens per sequence, 1 to 8 (its default is abi.cuh's):
//              the last QLEN rows of the context are theirs, token j sees
//              rows < nkv - QLEN + 1 + j.
//   SOFTCAP    1: scores pass through softcap * tanh(score / softcap).
//   SINKS      1: a per-head logit sinks[h] joins each softmax's sum.
#ifndef PAGE_SIZE
#define PAGE_SIZE 0
#endif
#ifndef SOFTCAP
#define SOFTCAP 0
#endif
#ifndef SINKS
#define SINKS 0
#endif
// A split's rows start at a multiple of 16 (gq_range rounds the chunk to
// whole steps of 16*NR rows) and a tile covers 16 rows, so with pages of
// a multiple of 16 rows every tile lies within one page: one block-table
// entry per tile, and the tile's rows are consecutive rows of its page.
#if PAGE_SIZE < 0 || PAGE_SIZE % 16 != 0
#error "mma: PAGE_SIZE must be 0 (contiguous) or a multiple of 16 (a 16-row tile never straddles two pages)"
#endif
// FIXCHUNK > 0: split sp covers rows [sp*FIXCHUNK, +FIXCHUNK), the last
// split the rest, whatever nkv (0: gq_range, the split count following
// nkv). A variant for the nkv range where SPLITS*FIXCHUNK rows are about
// nkv; its use is that a split's first rows are known before positions
// is read (below).
#ifndef FIXCHUNK
#define FIXCHUNK 0
#endif
#if FIXCHUNK % (16 * NR * (WARPS / WN)) != 0
#error "mma: FIXCHUNK must be a multiple of a step of the block's warps, 16*NR*WARPS/WN rows"
#endif
// SPLITSIZE > 0: split sp covers rows [sp*SPLITSIZE, +SPLITSIZE) of its
// sequence, so the splits in use, ceil(nkv/SPLITSIZE), and with them the
// order of the softmax merge, follow the sequence's own length alone:
// never the batch, the position in it, SPLITS or MINROWS (ignored). Two
// builds of one SPLITSIZE and different SPLITS write the same slots for a
// sequence, the others idle; the dispatch requires SPLITS*SPLITSIZE to
// reach the capacity (variants/builtin_frontier.go). The fixed-split-size
// form, for batch-invariant decoding (the invariance gate's control).
#ifndef SPLITSIZE
#define SPLITSIZE 0
#endif
#if SPLITSIZE < 0 || SPLITSIZE % (16 * NR) != 0
#error "mma: SPLITSIZE must be a multiple of a step, 16*NR rows"
#endif
#if SPLITSIZE && FIXCHUNK
#error "mma: SPLITSIZE and FIXCHUNK both fix a split's rows; give one"
#endif
#if FIXCHUNK && PAGE_SIZE
#error "mma: FIXCHUNK reads a split's first rows before nkv is known, which a block table past the sequence's pages cannot serve"
#endif
#if QLEN < 1 || QLEN > 8
#error "mma: QLEN must be 1 to 8"
#endif

#if !(KV_F16 || KV_BF16 || KV_FP8)
#error "mma: f16, bf16 or fp8 K/V only: the tensor-core operands are 16-bit"
#endif
#if HEAD_DIM != 64 && HEAD_DIM != 128 && HEAD_DIM != 256
#error "mma: HEAD_DIM must be 64, 128 or 256"
#endif

// The operand chunks of one row that a thread holds, for any HEAD_DIM: K
// in MC chunks of 8 dims at 32c + 8t (the 2*MC k-steps of S^T), V in MV
// chunks of 8 dims at 64j + 8g (the MT = 4*MV m-tiles of O^T).
#define MC (HEAD_DIM / 32)
#define MV (HEAD_DIM / 64)
#define MT (HEAD_DIM / 16)

// The operand type of both products. bf16 K/V run the bf16 mma, with q and
// the softmax weights rounded to bf16; f16 K/V, and fp8 K/V converted to
// f16 in registers (exactly: every e4m3 value is an f16), run the f16 mma.
#if KV_BF16
#define MMA_AB "bf16"
// mma_pack2 rounds two floats to the operand type (nearest even), lo in the
// low half: the order mma.sync expects for consecutive k or n.
__device__ __forceinline__ unsigned mma_pack2(float lo, float hi) {
    unsigned w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
}
// mma_unpack2 widens a packed pair back to floats (low half first).
__device__ __forceinline__ void mma_unpack2(unsigned w, float& lo, float& hi) {
    lo = __uint_as_float(w << 16);
    hi = __uint_as_float(w & 0xffff0000u);
}
#else
#define MMA_AB "f16"
__device__ __forceinline__ unsigned mma_pack2(float lo, float hi) { return gq_pack2(lo, hi); }
__device__ __forceinline__ void mma_unpack2(unsigned w, float& lo, float& hi) { gq_h2x2(w, lo, hi); }
#endif

// mma_16816 is D += A.B for one m16n8k16 tile, 16-bit in, f32 accumulate.
__device__ __forceinline__ void mma_16816(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." MMA_AB "." MMA_AB
                 ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// An mma_raw is one chunk of 8 K/V elements as loaded: 16 bytes of f16 or
// bf16, 8 bytes of fp8. mma_word returns its operand word i (elements 2i,
// 2i+1 in the operand type); fp8 is converted there, at its use, so every
// load of a step issues before any conversion and the raw chunks take half
// the registers.
#if KV_FP8
typedef uint2 mma_raw;
__device__ __forceinline__ mma_raw mma_ld8(const KV_T* p) {
    uint2 r;
    asm volatile("ld.global.nc.v2.u32 {%0, %1}, [%2];" : "=r"(r.x), "=r"(r.y) : "l"(p));
    return r;
}
__device__ __forceinline__ mma_raw mma_zero() { return make_uint2(0u, 0u); }
__device__ __forceinline__ unsigned mma_word(const uint2& v, int i) {
    const unsigned w = i < 2 ? v.x : v.y;
    const unsigned short pair = (unsigned short)((i & 1) ? (w >> 16) : (w & 0xffffu));
    unsigned h;
    asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h) : "h"(pair));
    return h;
}
#else
typedef uint4 mma_raw;
__device__ __forceinline__ mma_raw mma_ld8(const KV_T* p) { return gq_ld16(p); }
__device__ __forceinline__ mma_raw mma_zero() { return make_uint4(0u, 0u, 0u, 0u); }
__device__ __forceinline__ unsigned mma_word(const uint4& v, int i) {
    return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}
#endif

// mma_trans transposes an 8x8 f16 matrix held one f16x2 per lane.
__device__ __forceinline__ unsigned mma_trans(unsigned x) {
    unsigned y;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
    return y;
}

// mma_tab is a warp's view of its sequence's block table when paged (bt:
// sequence b's row of it). With PTW it is also a window of the table:
// lane l holds the page of the warp's tile n - n % 32 + l in cur and that
// of the tile 32 after it in nx, tile m being tile m % NR of the warp's
// step m / NR, so one table load a lane serves 32 tiles and goes out 32
// tiles before their rows are wanted. With one table load per tile, made
// right behind the next step's K/V loads (PTW 0), the one-split PF kernel
// at 16-row pages ran 1.14-1.37x the contiguous one on the H200, with the
// same instructions as at 64-row pages; with the window, 1.02-1.03x
// (FRONTIER.md). Without PF the window's registers cost a block per SM
// (146 instead of 128 at 8 warps under NVRTC 11.8, or 8 bytes of
// spills), so PTW is 1 by default only with PF.
#ifndef PTW
#define PTW (PAGE_SIZE&&PF)
#endif
#if PTW && !PAGE_SIZE
#error "mma: PTW reads a block table: it needs PAGE_SIZE"
#endif
// PTE = 1 (paged, PTW 0): a warp's first block-table entries are loaded
// before its split's range is known, together with positions, instead of
// one L2 round trip after it. The first row of split sp's warp wr is
// (sp*c + wr)*16*NR for a chunk of c steps (gq_range rounds the chunk to
// whole steps), c following nkv; lane l guesses c = l/NR + 1 and loads
// the entry of tile l%NR of that first step (entries past the table's
// row, max_pages, are not read). Once the range is known, a lane whose
// guess is the step's row hands its page over by a shuffle; a chunk of
// more than 32/NR steps (nkv over about SPLITS*512 rows at NR 1, where
// the round trip is a smaller part of the step) misses every guess and
// loads the entry after the range as PTE 0 does. The pages used are the
// same either way, so the output bits are too; only a load moves. Off by
// default: the paged kernel compiles as it did without it.
#ifndef PTE
#define PTE 0
#endif
#if PTE && (!PAGE_SIZE || PTW)
#error "mma: PTE guesses a paged warp's first block-table entries: it needs PAGE_SIZE and PTW 0"
#endif

struct mma_tab {
#if PAGE_SIZE
    const int* bt;
#endif
#if PTW
    int n;  // the warp's next tile (the first of the step mma_rows is called for next)
    int cur, nx;
#endif
#if PTE
    int grow, gpage;  // the lane's guessed first-step row and its page (PTE)
#endif
};

#if PTW
#if 32 % NR != 0
#error "mma: a paged step's NR tiles must not straddle two windows of 32 tiles (NR must divide 32)"
#endif
// mma_page is the page of the tile d tiles after the first tile of the
// step at logical row base, 0 at or past hi (no load).
__device__ __forceinline__ int mma_page(const int* __restrict__ bt, int base, int d, int hi) {
    const int row = base + (d / NR) * (WROWS * 16 * NR) + 16 * (d % NR);
    return row < hi ? __ldg(bt + row / PAGE_SIZE) : 0;
}
#endif

// mma_tab_start loads the first two windows of the table (PF) for a warp
// whose first step is at logical row base. Called by the whole warp.
__device__ __forceinline__ void mma_tab_start(mma_tab& tab, int base, int hi, int lane) {
#if PTW
    tab.n = 0;
    tab.cur = mma_page(tab.bt, base, lane, hi);
    tab.nx = mma_page(tab.bt, base, 32 + lane, hi);
#else
    (void)tab;
    (void)base;
    (void)hi;
    (void)lane;
#endif
}

#if PTE
// mma_tab_guess loads the lane's guess of a first-step page (PTE) for
// warp row wr of split sp; tab.bt must be set. Called by the whole warp
// before the split's range is read.
__device__ __forceinline__ void mma_tab_guess(mma_tab& tab, int sp, int wr, int lane, int max_pages) {
    const int c = lane / NR + 1, u = lane % NR;
    const int row = (sp * c + wr) * (16 * NR) + 16 * u;
    const bool ok = lane < 32 / NR * NR && row / PAGE_SIZE < max_pages;
    tab.grow = ok ? row : -1;
    tab.gpage = ok ? __ldg(tab.bt + row / PAGE_SIZE) : 0;
}

// mma_rows_first is mma_rows for the warp's first step under PTE: each
// tile's page from the lane that guessed its row, or loaded when no lane
// did. Called by the whole warp.
__device__ __forceinline__ void mma_rows_first(int (&pr)[NR], const mma_tab& tab, int base, int hi) {
#pragma unroll
    for (int u = 0; u < NR; u++) {
        const int r0 = base + 16 * u;
        const unsigned hit = __ballot_sync(0xffffffffu, tab.grow == r0);
        int page = __shfl_sync(0xffffffffu, tab.gpage, hit ? __ffs(hit) - 1 : 0);
        if (!hit && r0 < hi) page = __ldg(tab.bt + r0 / PAGE_SIZE);  // warp-uniform: no lane guessed this chunk
        pr[u] = r0 < hi ? page * PAGE_SIZE + r0 % PAGE_SIZE : 0;
    }
}
#endif

// mma_rows gives, for each of the NR tiles of the warp's next step (at
// logical row base; the calls go step by step), the K/V row its first row
// is stored at: the logical row itself when K/V are contiguous (the batch
// offset is in the base pointers), the row in the paged cache otherwise,
// from the tile's page: one block-table entry per tile, or from the
// warp's window (PF). A tile at or past hi has no rows to read and gets 0
// without a table load. Called by the whole warp (the window's pages move
// between lanes).
__device__ __forceinline__ void mma_rows(int (&pr)[NR], mma_tab& tab, int base, int hi, int lane) {
#if PTW
    const int i = tab.n & 31;
    if (i == 0 && tab.n > 0) {  // warp-uniform: the window moves on by 32 tiles
        tab.cur = tab.nx;
        tab.nx = mma_page(tab.bt, base, 32 + lane, hi);
    }
#pragma unroll
    for (int u = 0; u < NR; u++) {
        const int r0 = base + 16 * u;
        const int page = __shfl_sync(0xffffffffu, tab.cur, i + u);
        pr[u] = r0 < hi ? page * PAGE_SIZE + r0 % PAGE_SIZE : 0;
    }
    tab.n += NR;
#else
    (void)lane;
#pragma unroll
    for (int u = 0; u < NR; u++) {
        const int r0 = base + 16 * u;
#if PAGE_SIZE
        pr[u] = r0 < hi ? __ldg(tab.bt + r0 / PAGE_SIZE) * PAGE_SIZE + r0 % PAGE_SIZE : 0;
#else
        (void)tab;
        (void)hi;
        pr[u] = r0;
#endif
    }
#endif
}

// mma_load issues the K and V loads of NR tiles starting at logical row
// base, tile u's first row stored at row pr[u] (mma_rows); rows at or past
// hi are not read and come back as zeros.
__device__ __forceinline__ void mma_load(mma_raw (&kr)[NR][2][MC], mma_raw (&vr)[NR][4][MV], const KV_T* kb,
                                         const KV_T* vb, size_t rstride, const int (&pr)[NR], int base, int hi,
                                         int g, int t) {
    const mma_raw z = mma_zero();
#pragma unroll
    for (int u = 0; u < NR; u++) {
        const int r0 = base + 16 * u;
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int off = g + 8 * hh;
            const bool ok = r0 + off < hi;
#pragma unroll
            for (int c = 0; c < MC; c++)
                kr[u][hh][c] = ok ? mma_ld8(kb + (size_t)(pr[u] + off) * rstride + 32 * c) : z;
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int off = 2 * t + (i & 1) + 8 * (i >> 1);
            const bool ok = r0 + off < hi;
#pragma unroll
            for (int j = 0; j < MV; j++) vr[u][i][j] = ok ? mma_ld8(vb + (size_t)(pr[u] + off) * rstride + 64 * j) : z;
        }
    }
}

// KVSM = 1: K/V staged through shared memory. The WN warps of a tile row
// (wr) copy each step's NR tiles (K and V, 16 rows each) into shared
// memory with cp.async, once for all of them, and each warp reads its
// operands from there into the registers mma_load would have filled; the
// next step's copy goes out before this step's mma work (two buffers a
// row of warps), so the loads in flight hold no registers. At q_len > 1
// the column warps (WN > 1) each loaded the tile and computed its
// addresses themselves, and the step-ahead prefetch in registers (PF)
// did not survive the longer step's registers (FRONTIER.md, the q_len-4
// diagnosis). The operands are the same bits in the same registers as
// mma_load's (rows at or past hi are zeros: cp.async's zero fill), and
// mma_tile is the same, so the output bits are those of KVSM 0 with the
// other defines the same. 16-bit K/V (an fp8 chunk is 8 bytes), PF 0 and
// no FIXCHUNK (both load the step ahead in registers). The staging area
// shares its shared memory with the block's merge area (mma_merge_area),
// which is written only after every warp has left the loop.
#ifndef KVSM
#define KVSM 0
#endif
#if KVSM && KV_FP8
#error "mma: KVSM stages 16-byte chunks of 16-bit K/V; fp8 K/V are not staged"
#endif
#if KVSM && (PF || FIXCHUNK)
#error "mma: KVSM loads a step ahead through shared memory: it takes PF 0 and no FIXCHUNK"
#endif
#if KVSM && (HEAD_DIM / 8) % WN != 0
#error "mma: KVSM needs WN to divide HEAD_DIM/8 (each thread's chunks of a step in one tile)"
#endif

// MMA_CH is the 16-byte chunks of one K/V row.
#define MMA_CH (HEAD_DIM / 8)
#if KVSM
// An mma_stage_buf is one step of a row of warps in shared memory: tile
// u, K (0) or V (1), row, chunk. Chunk ch of row r is stored at ch ^
// mma_swz(r), so that each quarter warp of mma_unstage's 16-byte reads (K:
// rows g, g+1 at chunks 4c+t; V: rows 2t+p at chunks 8j+g) covers the 32
// banks once.
typedef uint4 mma_stage_buf[NR][2][16][MMA_CH];
__device__ __forceinline__ int mma_swz(int r) { return (r & 6) ^ ((r & 1) << 2); }

__device__ __forceinline__ void mma_cp16(void* dst, const void* src, int bytes) {
    unsigned d;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(d) : "l"(dst));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mma_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void mma_cp_wait() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

// mma_row_bar is a barrier of the WN warps of tile row wr (named barrier
// 1 + wr; 0 is __syncthreads').
__device__ __forceinline__ void mma_row_bar(int wr) {
    asm volatile("bar.sync %0, %1;" ::"r"(1 + wr), "r"(WN * 32) : "memory");
}

// mma_stage issues the copies of the NR tiles at logical row base (tile
// u's first row stored at row pr[u]) into st, by thread rt of the tile
// row's WN*32; k0 and v0 point at dim 0 of row 0 (mma_bases less the
// thread's offset). Rows at or past hi are not read: zeros are written.
__device__ __forceinline__ void mma_stage(mma_stage_buf& st, const KV_T* k0, const KV_T* v0, size_t rstride,
                                          const int (&pr)[NR], int base, int hi, int rt) {
    constexpr int NT = WN * 32;
#pragma unroll
    for (int j = 0; j < NR * 32 * MMA_CH / NT; j++) {
        const int i = rt + NT * j;
        const int ch = i % MMA_CH, row = (i / MMA_CH) % 16, kv = (i / (16 * MMA_CH)) % 2;
        const int u = j / (32 * MMA_CH / NT);  // NT divides 32*MMA_CH: a compile-time tile
        const bool ok = base + 16 * u + row < hi;
        const KV_T* src = (kv ? v0 : k0) + (size_t)(pr[u] + row) * rstride + 8 * ch;
        mma_cp16(&st[u][kv][row][ch ^ mma_swz(row)], ok ? src : k0, ok ? 16 : 0);
    }
}

// mma_unstage reads a step from st into mma_load's registers.
__device__ __forceinline__ void mma_unstage(mma_raw (&kr)[NR][2][MC], mma_raw (&vr)[NR][4][MV],
                                            const mma_stage_buf& st, int g, int t) {
#pragma unroll
    for (int u = 0; u < NR; u++) {
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            const int row = g + 8 * hh;
#pragma unroll
            for (int c = 0; c < MC; c++) kr[u][hh][c] = st[u][0][row][(4 * c + t) ^ mma_swz(row)];
        }
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int row = 2 * t + (i & 1) + 8 * (i >> 1);
#pragma unroll
            for (int j = 0; j < MV; j++) vr[u][i][j] = st[u][1][row][(8 * j + g) ^ mma_swz(row)];
        }
    }
}
#endif

// mma_merge_area declares the block's merge area (sm_m, sm_l, sm_o, as
// mma_block takes them) in the kernel that calls mma_block; with KVSM it
// is one union with the staging buffers, which mma_block finds at its
// start (mma_stage_area).
#if KVSM
union mma_shared {
    struct {
        float m[WROWS][GMAX], l[WROWS][GMAX];
        float o[WROWS][GMAX][HEAD_DIM];
    } merge;
    mma_stage_buf stage[WROWS][2];
};
#define mma_merge_area                                   \
    __shared__ __align__(16) mma_shared mma_sh;          \
    float(&sm_m)[WROWS][GMAX] = mma_sh.merge.m;           \
    float(&sm_l)[WROWS][GMAX] = mma_sh.merge.l;           \
    float(&sm_o)[WROWS][GMAX][HEAD_DIM] = mma_sh.merge.o
// mma_stage_area is the two staging buffers of tile row wr, given the
// merge area's sm_m (the union's first bytes).
__device__ __forceinline__ mma_stage_buf* mma_stage_area(float (&sm_m)[WROWS][GMAX], int wr) {
    return reinterpret_cast<mma_shared*>(&sm_m[0][0])->stage[wr];
}
#else
#define mma_merge_area                                  \
    __shared__ float sm_m[WROWS][GMAX], sm_l[WROWS][GMAX]; \
    __shared__ __align__(16) float sm_o[WROWS][GMAX][HEAD_DIM]
#endif

#if PAGE_SIZE
// mma_table_row is sequence b's row of the block table.
template <typename A>
__device__ __forceinline__ const int* mma_table_row(const A& a, int b) {
    return a.block_table + (size_t)b * a.max_pages;
}
#endif

// mma_bases points kb and vb at this thread's first K and V element of
// KV head hk (dims 8t and 8g of row 0: of sequence b when contiguous, of
// page 0 when paged, where mma_rows turns each tile's logical row into its
// page's) and, when paged, tab at sequence b's row of the block table.
template <typename A>
__device__ __forceinline__ void mma_bases(const A& a, int b, int hk, int g, int t, const KV_T*& kb, const KV_T*& vb,
                                          mma_tab& tab) {
#if PAGE_SIZE
    kb = a.k + (size_t)hk * HEAD_DIM + 8 * t;
    vb = a.v + (size_t)hk * HEAD_DIM + 8 * g;
    tab.bt = mma_table_row(a, b);
#else
    kb = kt_kv_row(a.k, b, 0, hk, a.kv_heads, a.capacity) + 8 * t;
    vb = kt_kv_row(a.v, b, 0, hk, a.kv_heads, a.capacity) + 8 * g;
    (void)tab;
#endif
}

// mma_clip clears the V rows at or past hi of the NR tiles at base: the
// first step of a FIXCHUNK split is loaded before nkv is known, and a row
// past it must weigh nothing even where its bytes are not finite (the
// scores of those rows are masked to -inf, their weights are 0, and 0
// times a NaN would still be a NaN).
__device__ __forceinline__ void mma_clip(mma_raw (&vr)[NR][4][MV], int base, int hi, int t) {
    const mma_raw z = mma_zero();
#pragma unroll
    for (int u = 0; u < NR; u++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const bool ok = base + 16 * u + 2 * t + (i & 1) + 8 * (i >> 1) < hi;
#pragma unroll
            for (int j = 0; j < MV; j++) vr[u][i][j] = ok ? vr[u][i][j] : z;
        }
}

// mma_softcap is softcap * tanh(x / softcap) in the kernel's base-2 score
// units: x = z * log2(e) for the natural score z, and with c2 = 2/softcap
// the result is log2(e) * softcap * (1 - 2 / (2^(c2*x) + 1)), cl =
// log2(e) * softcap. tanh from one ex2 and one division, not tanh.approx
// (relative error 2^-11, times a cap of 30-50 an absolute score error of
// ~0.02 near saturation, where every score sits): here the error is the
// ex2's, ~2 ulp, and at large |x| the result goes to +-cl exactly.
__device__ __forceinline__ float mma_softcap(float x, float c2, float cl) {
    const float e = gq_ex2(x * c2);
    return cl * (1.0f - __fdividef(2.0f, e + 1.0f));
}

// mma_tile folds one 16-row tile (rows r0 .. r0+15, those >= hi masked)
// into the state: S^T = K.Q^T, online softmax per head column, O^T +=
// V^T.P^T.
// lim[nt][cc] is the end of the rows column (nt, cc) may see: the split's
// hi, or less for a query token whose causal limit falls inside the split
// (QLEN > 1). c2 and cl are mma_softcap's constants (SOFTCAP 1).
template <int GN_>
__device__ __forceinline__ void mma_tile(const mma_raw (&kr)[2][MC], const mma_raw (&vr)[4][MV], int r0,
                                         const int (&lim)[GN_][2], int g, const unsigned (&qb)[GN_][2 * MC][2],
                                         float ks, float c2, float cl, float (&m)[GN_][2], float (&l)[GN_][2],
                                         float (&o)[GN_][MT][4]) {
    const unsigned full = 0xffffffffu;
    // S^T tile: s[nt][0..1] row g, heads 2t, 2t+1; [2..3] row g+8. Two
    // accumulators (even and odd k-step pairs) halve the dependent chain of
    // eight mma.
    float s[GN_][4], s2[GN_][4];
#pragma unroll
    for (int nt = 0; nt < GN_; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++) s[nt][i] = s2[nt][i] = 0.0f;
#pragma unroll
    for (int c = 0; c < MC; c++) {
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const unsigned a[4] = {mma_word(kr[0][c], 2 * e), mma_word(kr[1][c], 2 * e), mma_word(kr[0][c], 2 * e + 1),
                                   mma_word(kr[1][c], 2 * e + 1)};
#pragma unroll
            for (int nt = 0; nt < GN_; nt++) {
                if (c & 1)
                    mma_16816(s2[nt], a, qb[nt][2 * c + e][0], qb[nt][2 * c + e][1]);
                else
                    mma_16816(s[nt], a, qb[nt][2 * c + e][0], qb[nt][2 * c + e][1]);
            }
        }
    }
#pragma unroll
    for (int nt = 0; nt < GN_; nt++)
#pragma unroll
        for (int i = 0; i < 4; i++) {
            s[nt][i] += s2[nt][i];
#if KV_FP8
            // K's scale, applied to the f32 scores: folded into q it would
            // push the f16 operand towards its subnormals for small scales.
            s[nt][i] *= ks;
#endif
#if SOFTCAP
            s[nt][i] = mma_softcap(s[nt][i], c2, cl);
#endif
        }
    (void)ks;
    (void)c2;
    (void)cl;

    unsigned pb[GN_][2];
#pragma unroll
    for (int nt = 0; nt < GN_; nt++) {
        float p[4], corr[2];
#pragma unroll
        for (int cc = 0; cc < 2; cc++) {
            const float s0 = r0 + g < lim[nt][cc] ? s[nt][cc] : kt_neg_inf();
            const float s1 = r0 + g + 8 < lim[nt][cc] ? s[nt][2 + cc] : kt_neg_inf();
            float mx = fmaxf(s0, s1);
            mx = fmaxf(mx, __shfl_xor_sync(full, mx, 4));
            mx = fmaxf(mx, __shfl_xor_sync(full, mx, 8));
            mx = fmaxf(mx, __shfl_xor_sync(full, mx, 16));
            const float mnew = fmaxf(m[nt][cc], mx);
            const float ms = mnew == kt_neg_inf() ? 0.0f : mnew;
            corr[cc] = gq_ex2(m[nt][cc] - ms);
            m[nt][cc] = mnew;
            p[cc] = gq_ex2(s0 - ms);
            p[2 + cc] = gq_ex2(s1 - ms);
        }
        // Pack to f16 first and sum what was packed, so the sum of weights
        // is the sum of the weights that multiply V.
        const unsigned x0 = mma_pack2(p[0], p[1]);  // row g: heads 2t, 2t+1
        const unsigned x1 = mma_pack2(p[2], p[3]);  // row g+8
        float r00, r01, r10, r11;
        mma_unpack2(x0, r00, r01);
        mma_unpack2(x1, r10, r11);
        l[nt][0] = fmaf(l[nt][0], corr[0], r00 + r10);
        l[nt][1] = fmaf(l[nt][1], corr[1], r01 + r11);
        pb[nt][0] = mma_trans(x0);
        pb[nt][1] = mma_trans(x1);
#pragma unroll
        for (int mt = 0; mt < MT; mt++) {
            o[nt][mt][0] *= corr[0];
            o[nt][mt][1] *= corr[1];
            o[nt][mt][2] *= corr[0];
            o[nt][mt][3] *= corr[1];
        }
    }

    // O^T += V^T.P^T. M row g of m-tile mt is the thread's local dim mt,
    // M row g+8 its local dim mt + 4*MV, local dim i being dim
    // 64*(i/8) + 8g + i%8 (chunk i/8, word (i%8)/2, half i%2).
#pragma unroll
    for (int mt = 0; mt < MT; mt++) {
        const int i0 = mt, i1 = mt + 4 * MV;
        const int j0 = i0 >> 3, w0 = (i0 & 7) >> 1, j1 = i1 >> 3, w1 = (i1 & 7) >> 1;
        const unsigned sel = (mt & 1) ? 0x7632u : 0x5410u;
        const unsigned a[4] = {
            __byte_perm(mma_word(vr[0][j0], w0), mma_word(vr[1][j0], w0), sel),
            __byte_perm(mma_word(vr[0][j1], w1), mma_word(vr[1][j1], w1), sel),
            __byte_perm(mma_word(vr[2][j0], w0), mma_word(vr[3][j0], w0), sel),
            __byte_perm(mma_word(vr[2][j1], w1), mma_word(vr[3][j1], w1), sel),
        };
#pragma unroll
        for (int nt = 0; nt < GN_; nt++) mma_16816(o[nt][mt], a, pb[nt][0], pb[nt][1]);
    }
}

// An mma_args is what attn_partial passes on to mma_block: the ABI's
// arguments and those of the forms above. A form that is off leaves its
// fields null or zero.
struct mma_args {
    const float* __restrict__ q;
    const KV_T* __restrict__ k;
    const KV_T* __restrict__ v;
    const int* __restrict__ positions;
    float* __restrict__ partial;
    int heads, kv_heads, capacity;
    float scale;
    const float* __restrict__ kv_scale;   // fp8: [2][kv_heads], K's scales first
    const int* __restrict__ block_table;  // PAGE_SIZE: [batch][max_pages]
    int max_pages;
    float softcap;                   // SOFTCAP: > 0
    const float* __restrict__ sinks; // SINKS: [heads], natural-log units
};

// MMA_TAIL_PARAMS are attn_partial's parameters after the ABI's (and a
// fused kernel's out and counters), in this order, each only in the form
// that takes it: kv_scale (fp8), block_table and max_pages (paged),
// softcap, sinks. MMA_ARGS fills an mma_args from the ABI's and them.
#if KV_FP8
#define MMA_P_SCALE , const float* __restrict__ kv_scale
#define MMA_A_SCALE kv_scale
#else
#define MMA_P_SCALE
#define MMA_A_SCALE nullptr
#endif
#if PAGE_SIZE
#define MMA_P_PAGED , const int* __restrict__ block_table, int max_pages
#define MMA_A_PAGED block_table, max_pages
#else
#define MMA_P_PAGED
#define MMA_A_PAGED nullptr, 0
#endif
#if SOFTCAP
#define MMA_P_SOFTCAP , float softcap
#define MMA_A_SOFTCAP softcap
#else
#define MMA_P_SOFTCAP
#define MMA_A_SOFTCAP 0.0f
#endif
#if SINKS
#define MMA_P_SINKS , const float* __restrict__ sinks
#define MMA_A_SINKS sinks
#else
#define MMA_P_SINKS
#define MMA_A_SINKS nullptr
#endif
#define MMA_TAIL_PARAMS MMA_P_SCALE MMA_P_PAGED MMA_P_SOFTCAP MMA_P_SINKS
#define MMA_ARGS {q, k, v, positions, partial, heads, kv_heads, capacity, scale, \
                  MMA_A_SCALE, MMA_A_PAGED, MMA_A_SOFTCAP, MMA_A_SINKS}

// mma_block is the body of mma.cu's attn_partial for block (sp, hk, b) of
// the grid (SPLITS, kv_heads, batch): it computes split sp of KV head hk's
// group and writes the group's partial slots (the neutral slot when the
// split is idle), QLEN * group of them. Called by every thread of the
// block, with the block's merge area; on return the slots are written by
// this block's threads (no barrier or fence after the last store).
__device__ __forceinline__ void mma_block(const mma_args& a, float (&sm_m)[WROWS][GMAX], float (&sm_l)[WROWS][GMAX],
                                          float (&sm_o)[WROWS][GMAX][HEAD_DIM]) {
    const unsigned full = 0xffffffffu;
    const int sp = blockIdx.x, hk = blockIdx.y, b = blockIdx.z;
    const int heads = a.heads, kv_heads = a.kv_heads;
    const int group = heads / kv_heads;
    const int cols = group * QLEN;  // columns of the tile in use
    const int h0 = hk * group;
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int g = lane >> 2, t = lane & 3;
    // Warp (wr, wc): row lane wr of WROWS over the split, n-tile column wc.
    const int wr = warp / WN, wc = warp % WN;

    // The fp8 scales of this KV head: K's multiplies the scores, V's the
    // accumulators when they leave the registers.
#if KV_FP8
    const float ks = a.kv_scale[hk], vs = a.kv_scale[kv_heads + hk];
#else
    const float ks = 1.0f;
#endif
#if SOFTCAP
    const float c2 = 2.0f / a.softcap, cl = a.softcap * GQ_LOG2E;
#else
    const float c2 = 0.0f, cl = 0.0f;
#endif

    // B fragments of q^T (column nt*8+g) in the operand type, pre-scaled
    // for base 2. Columns are token-major (c = j*group + i: token j, head
    // h0 + i), q and out [batch][QLEN][heads], and the slots of the
    // QLEN*heads heads follow the same order (gq_slot_head), so the
    // combine merges them as the slots of one token.
    unsigned qb[GNW][2 * MC][2];
    const float qs = a.scale * GQ_LOG2E;
#pragma unroll
    for (int nt = 0; nt < GNW; nt++) {
        const int c = (wc * GNW + nt) * 8 + g;
        const float* qrow = a.q + ((size_t)b * QLEN * heads + gq_slot_head<QLEN>(c, h0, group, heads)) * HEAD_DIM;
#pragma unroll
        for (int cc = 0; cc < MC; cc++) {
            float4 lo = kt_zero4(), hi = kt_zero4();
            if (c < cols) {
                lo = *reinterpret_cast<const float4*>(qrow + 32 * cc + 8 * t);
                hi = *reinterpret_cast<const float4*>(qrow + 32 * cc + 8 * t + 4);
            }
            qb[nt][2 * cc][0] = mma_pack2(lo.x * qs, lo.y * qs);
            qb[nt][2 * cc][1] = mma_pack2(lo.z * qs, lo.w * qs);
            qb[nt][2 * cc + 1][0] = mma_pack2(hi.x * qs, hi.y * qs);
            qb[nt][2 * cc + 1][1] = mma_pack2(hi.z * qs, hi.w * qs);
        }
    }

    // PF = 1: the next step's K/V loads go out before this step's mma work,
    // so a warp always has a step of loads in flight instead of alternating
    // between waiting for memory and computing. Measured on the H200 it
    // gains nothing at batch 1 and loses 16% at batch 16 (registers 127 ->
    // 183 halve the resident warps, which matter more there), so it is off
    // by default and left for a sweep to find where it pays.
    //
    // pr holds the stored rows of the next step to load, made right after
    // the loads of the step before go out, so that a paged tile's table
    // load waits behind a step of mma work, not in front of its K/V loads
    // (with PF its page comes from the warp's window of the table, loaded
    // 32 tiles ahead: mma_tab).
    //
    // The range comes after q on purpose: both loads (positions and q) are
    // then in flight together, and the first K/V load waits for one memory
    // round trip instead of two (positions, then q behind the branch). An
    // idle block loads q for nothing; q is 14 KB and shared by all blocks.
    // With FIXCHUNK the split's first row does not depend on nkv, so the
    // first step's K/V loads go out with q and positions too: one round
    // trip less in front of the block's first mma. They read rows below
    // the capacity that may lie past nkv; those are masked below as any
    // row past hi is (their V cleared, their scores -inf).
    //
    // Without FIXCHUNK the bases and the first rows follow the state's
    // initialisation, as before the forms existed: computed before the
    // idle branch they stay live across it, and a 4-warp bf16 build
    // spilled 8 bytes under NVRTC 11.8.
    const size_t rstride = (size_t)kv_heads * HEAD_DIM;
    const int stride = WROWS * 16 * NR;
#if PTE
    // The guesses of the first step's pages go out before positions is
    // read, so they are in flight together (PTE above).
    mma_tab tab;
    tab.bt = mma_table_row(a, b);
    mma_tab_guess(tab, sp, wr, lane, a.max_pages);
#endif
#if FIXCHUNK
    const KV_T *kb, *vb;
    mma_tab tab;
    mma_bases(a, b, hk, g, t, kb, vb, tab);
    mma_raw kr[NR][2][MC], vr[NR][4][MV];
    int pr[NR];
    int base = sp * FIXCHUNK + wr * 16 * NR;
    {
        const int pre = min(a.capacity, sp * FIXCHUNK + FIXCHUNK);
        mma_rows(pr, tab, base, pre, lane);  // contiguous: FIXCHUNK is not paged
        mma_load(kr, vr, kb, vb, rstride, pr, base, pre, g, t);
    }
    kt_range r;
    {
        const int nkv = a.positions[b] + 1;
        r.lo = sp * FIXCHUNK;
        r.hi = sp == SPLITS - 1 ? nkv : min(nkv, r.lo + FIXCHUNK);  // the last split takes the rest
    }
#elif SPLITSIZE
    kt_range r;
    {
        const int nkv = a.positions[b] + 1;
        r.lo = sp * SPLITSIZE;
        r.hi = min(nkv, r.lo + SPLITSIZE);
    }
#else
    const kt_range r = gq_range<16 * NR>(a.positions, b, sp);
#endif
    if (r.lo >= r.hi) {  // block-uniform
        gq_store_idle<WARPS, QLEN>(a.partial, b, sp, h0, group, heads);
        return;
    }
#if FIXCHUNK
    mma_clip(vr, base, r.hi, t);
#endif

    // State per column: nt*8 + 2t + cc for cc = 0, 1. m is the running max
    // (same in all g), l this thread's share of the sum (rows g, g+8 of
    // every tile), o the O^T accumulator of m-tile mt. lim is where the
    // column's rows end: token j of QLEN sees the cache up to and
    // including its own row, nkv - QLEN + j.
    float m[GNW][2], l[GNW][2], o[GNW][MT][4];
    int lim[GNW][2];
#if QLEN > 1
    const int nkv = a.positions[b] + 1;
#endif
#pragma unroll
    for (int nt = 0; nt < GNW; nt++) {
#pragma unroll
        for (int cc = 0; cc < 2; cc++) {
            m[nt][cc] = kt_neg_inf();
            l[nt][cc] = 0.0f;
#if QLEN > 1
            lim[nt][cc] = min(r.hi, nkv - QLEN + 1 + ((wc * GNW + nt) * 8 + 2 * t + cc) / group);
#else
            lim[nt][cc] = r.hi;
#endif
#if SINKS
            // The sink is one more logit in the softmax with no value:
            // split 0's first row of warps starts its state from it (max =
            // the sink, weight 1 in the g = 0 thread's share of the sum),
            // so it counts once per (token, head) however many splits and
            // warps there are, and the merges carry it like any row.
            const int c = (wc * GNW + nt) * 8 + 2 * t + cc;
            if (sp == 0 && wr == 0 && c < cols) {
                m[nt][cc] = a.sinks[h0 + c % group] * GQ_LOG2E;
                l[nt][cc] = g == 0 ? 1.0f : 0.0f;
            }
#endif
        }
#pragma unroll
        for (int mt = 0; mt < MT; mt++) o[nt][mt][0] = o[nt][mt][1] = o[nt][mt][2] = o[nt][mt][3] = 0.0f;
    }

#if FIXCHUNK
    mma_rows(pr, tab, base + stride, r.hi, lane);  // the first step's loads are out
    bool loaded = true;
    (void)loaded;  // PF: the loop loads a step ahead and never asks
#else
    const KV_T *kb, *vb;
#if !PTE
    mma_tab tab;
#endif
    mma_bases(a, b, hk, g, t, kb, vb, tab);
    int base = r.lo + wr * 16 * NR;
    mma_raw kr[NR][2][MC], vr[NR][4][MV];
    int pr[NR];
    mma_tab_start(tab, base, r.hi, lane);
#if PTE
    mma_rows_first(pr, tab, base, r.hi);
#else
    mma_rows(pr, tab, base, r.hi, lane);
#endif
#if PF
    mma_load(kr, vr, kb, vb, rstride, pr, base, r.hi, g, t);
    mma_rows(pr, tab, base + stride, r.hi, lane);
#endif
#if KVSM
    // The first step's copy; the loop's steps each wait for theirs and
    // issue the next one's.
    mma_stage_buf* st = mma_stage_area(sm_m, wr);
    const KV_T *k0 = kb - 8 * t, *v0 = vb - 8 * g;
    const int rt = wc * 32 + lane;
    int buf = 0;
    // A row of warps with no step in the split copies nothing: a copy
    // never waited for could land in the merge area after its stores.
    if (base < r.hi) mma_stage(st[0], k0, v0, rstride, pr, base, r.hi, rt);
    mma_cp_commit();
    mma_rows(pr, tab, base + stride, r.hi, lane);
#endif
#endif
    for (; base < r.hi; base += stride) {
#if PF
        mma_raw kn[NR][2][MC], vn[NR][4][MV];
        mma_load(kn, vn, kb, vb, rstride, pr, base + stride, r.hi, g, t);  // rows past hi: no access, zeros
        mma_rows(pr, tab, base + 2 * stride, r.hi, lane);
#elif KVSM
        // This step's copies (every thread's) are in and the other buffer
        // is free: every warp of the row has read it (the step before).
        mma_cp_wait();
        mma_row_bar(wr);
        if (base + stride < r.hi) mma_stage(st[buf ^ 1], k0, v0, rstride, pr, base + stride, r.hi, rt);
        mma_cp_commit();
        mma_rows(pr, tab, base + 2 * stride, r.hi, lane);
        mma_unstage(kr, vr, st[buf], g, t);
        buf ^= 1;
#elif FIXCHUNK
        if (!loaded) {
            mma_load(kr, vr, kb, vb, rstride, pr, base, r.hi, g, t);
            mma_rows(pr, tab, base + stride, r.hi, lane);
        }
        loaded = false;
#else
        mma_load(kr, vr, kb, vb, rstride, pr, base, r.hi, g, t);
        mma_rows(pr, tab, base + stride, r.hi, lane);
#endif
#pragma unroll
        for (int u = 0; u < NR; u++) mma_tile<GNW>(kr[u], vr[u], base + 16 * u, lim, g, qb, ks, c2, cl, m, l, o);
#if PF
#pragma unroll
        for (int u = 0; u < NR; u++) {
#pragma unroll
            for (int c = 0; c < MC; c++) kr[u][0][c] = kn[u][0][c], kr[u][1][c] = kn[u][1][c];
#pragma unroll
            for (int i = 0; i < 4; i++)
#pragma unroll
                for (int j = 0; j < MV; j++) vr[u][i][j] = vn[u][i][j];
        }
#endif
    }

#if KVSM
    // The merge area is the staging area: every row of warps is done with
    // it. No copy is in flight (the last step issues none; the wait is for
    // the empty groups' sake).
    mma_cp_wait();
    __syncthreads();
#endif
    // Per-warp state to shared memory: column nt*8 + 2t + cc; local dim i
    // (o[..][i][cc] for i < 4*MV, o[..][i - 4*MV][2+cc] above) is dim
    // 64*(i/8) + 8g + i%8, stored as float4s of 4 consecutive dims.
#pragma unroll
    for (int nt = 0; nt < GNW; nt++) {
#pragma unroll
        for (int cc = 0; cc < 2; cc++) {
            float lsum = l[nt][cc];
            lsum += __shfl_xor_sync(full, lsum, 4);
            lsum += __shfl_xor_sync(full, lsum, 8);
            lsum += __shfl_xor_sync(full, lsum, 16);
            const int h = (wc * GNW + nt) * 8 + 2 * t + cc;
            if (h < cols) {
                float ov[8 * MV];
#pragma unroll
                for (int i = 0; i < 8 * MV; i++) {
                    ov[i] = i < 4 * MV ? o[nt][i][cc] : o[nt][i - 4 * MV][2 + cc];
#if KV_FP8
                    ov[i] *= vs;
#endif
                }
#pragma unroll
                for (int i = 0; i < 8 * MV; i += 4)
                    *reinterpret_cast<float4*>(&sm_o[wr][h][64 * (i >> 3) + 8 * g + (i & 7)]) =
                        make_float4(ov[i], ov[i + 1], ov[i + 2], ov[i + 3]);
                if (g == 0) {
                    sm_m[wr][h] = m[nt][cc];
                    sm_l[wr][h] = lsum;
                }
            }
        }
    }
    __syncthreads();
    gq_merge_store<WROWS, GMAX, QLEN, WARPS * 32>(sm_m, sm_l, sm_o, a.partial, b, sp, h0, group, heads);
}
