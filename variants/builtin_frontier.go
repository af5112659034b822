package variants

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/internal/kvtype"
)

// The frontier family: kernels that give one block to a whole GQA group
// (every query head that reads one KV head), so each K/V row is read from
// memory once per sequence rather than once per query head. On the H200's
// 28/4-head shape the seed family reads K/V seven times over; these two aim
// at the memory floor instead. Both share kernels/gqa_block.cuh (nkv-aware
// split count, base-2 softmax, block merge) and, by default, the parallel
// combine of kernels/combine_wide.cuh (CW): on the H200 the shared combine's
// serial walk over the splits cost 3-5 µs of every pair
// (experiments/results/h200/NOTES-frontier.md).

// frontierSplits is SPLITS for the group kernels (mma's default; gqa's is
// gqaSplits). Their grid is SPLITS x
// kv_heads x batch, a seventh of the seeds' at group 7, so a single sequence
// needs far more splits to fill 132 SMs; the partial buffer and the combine
// bound it at 256.
var frontierSplits = catalog.DefineSpec{Name: abi.DefineSplits, Default: "64", Min: 1, Max: 256,
	Doc: "KV splits per (KV head, sequence); how many are used follows nkv (MINROWS)"}

// gqaSplits is gqa's SPLITS: with 8 warps a block, 32 splits measured as
// fast as 64 at batch 1 and faster at batch 16 (fewer partials to combine).
var gqaSplits = catalog.DefineSpec{Name: abi.DefineSplits, Default: "32", Min: 1, Max: 256, Doc: frontierSplits.Doc}

// minrowsDefine is the smallest split worth its fixed costs.
var minrowsDefine = catalog.DefineSpec{Name: "MINROWS", Default: "128", Min: 1, Max: 1 << 20,
	Doc: "rows a split must get before another split is used; the rest write neutral slots"}

// warpsDefine is the number of warps sharing one split. mma's default is
// 8: at 125 registers two such blocks share an SM, and on the H200 they
// were as fast as or faster than four 4-warp blocks at every batch and nkv
// measured (NOTES-frontier.md).
var warpsDefine = catalog.DefineSpec{Name: "WARPS", Default: "8", Min: 1, Max: 8,
	Doc: "warps per block; they interleave over the split and merge in shared memory"}

// cwDefine selects the combine compiled into the kernel's module. The
// partials are the same either way; only the merge over splits differs.
var cwDefine = catalog.DefineSpec{Name: "CW", Default: "2", Max: 2,
	Doc: "combine: 2 parallel with early accumulator loads, 1 parallel, 0 the shared serial one (combine.cuh)"}

// pdlEndDefine moves mma's griddepcontrol.launch_dependents (pdl: true)
// from the block's start to after its slots: a test of why PDL cost time
// at 64 splits, two waves of partial blocks (FRONTIER.md).
var pdlEndDefine = catalog.DefineSpec{Name: "PDLEND", Default: "0", Max: 1,
	Doc: "with pdl: 1 lets the combine launch after the block's slots are stored, 0 at the block's start"}

// fixChunkDefine fixes each split's rows instead of following nkv, so a
// split's first rows are known before positions is read and its first K/V
// loads go out with q's: one DRAM round trip less in front of the first
// mma at batch 1, where each warp's chain of steps is short. A tuning for
// the nkv range near SPLITS*FIXCHUNK (the last split takes any rest).
var fixChunkDefine = catalog.DefineSpec{Name: "FIXCHUNK", Default: "0", Max: 1 << 20,
	Doc: "rows per split, fixed (the last takes the rest); 0: the split count follows nkv (MINROWS)"}

// DefineSplitSize is the fixed-split-size form of the tensor-core
// kernel (kernels/mma_core.cuh): every split covers SPLITSIZE rows of
// its sequence, so the split count in use follows the sequence's own
// length and its output bits do not depend on the batch, the position in
// it or SPLITS. Unset: the points without it keep their hashes.
const DefineSplitSize = "SPLITSIZE"

var splitSizeDefine = catalog.DefineSpec{Name: DefineSplitSize, Default: "0", Max: 1 << 20, Unset: true,
	Doc: "rows per split, fixed for every length (SPLITS*SPLITSIZE >= capacity): bits invariant to the batch and SPLITS; 0: the split count follows nkv (MINROWS)"}

// pageSizeDefine builds the paged form (kernels/ABI.md): K and V in a pool
// of pages of PAGE_SIZE rows through block_table; the plan then gives the
// point the paged io (abi.PagedABIIO) and the two arguments.
var pageSizeDefine = catalog.DefineSpec{Name: abi.DefinePageSize, Default: "0", Max: 1024, Unset: true,
	Doc: "rows per page of a paged K/V cache (a multiple of 16: a tile never straddles two pages); 0: contiguous"}

// pageWindowDefine chooses how a paged warp reads its block table
// (mma_core.cuh mma_tab): 1, 32 tiles' pages at a time, one a lane, loaded
// a window ahead; 0, one entry per tile right behind the next step's K/V
// loads. Unset, the kernel takes 1 with PF and 0 without (without PF the
// window's registers cost a block per SM). Neither form is the faster
// one: on the H200 the one-split PF kernel ran within 1-3% of contiguous
// in one form and 1.14-1.40x in the other, which one depending on the
// build (f16 at 64-row pages wants 0, both types at 16 rows want 1), by
// where NVRTC put an address computation among the next step's loads
// (FRONTIER.md). So it is a define to sweep, not a fixed choice.
var pageWindowDefine = catalog.DefineSpec{Name: "PTW", Default: "(PAGE_SIZE&&PF)", Max: 1, Unset: true,
	Doc: "paged: 1 reads the block table 32 tiles ahead, one entry a lane; 0 one entry per tile (unset: 1 with PF)"}

// pageEarlyDefine loads a paged warp's first block-table entries with
// positions instead of after it (mma_core.cuh PTE): the batch-1 paged
// kernel at nkv 2048-8192 ran a fixed 0.3-0.7 µs over the contiguous one,
// the size of that dependent load (FRONTIER.md). The pages read are the
// same, so the output bits are too. Unset: the paged kernel as before.
var pageEarlyDefine = catalog.DefineSpec{Name: "PTE", Default: "0", Max: 1, Unset: true,
	Doc: "paged, PTW 0: 1 guesses a warp's first block-table entries and loads them with positions (one L2 round trip before the first K/V load); 0 after it"}

// kvsmDefine stages K/V through shared memory (mma_core.cuh KVSM): the
// WN warps of a tile row copy each step once with cp.async, a step
// ahead, and read their operands from there. The structural answer to the
// q_len-4 diagnosis (FRONTIER.md): the column warps repeated the tile's
// loads, and the register prefetch did not survive the longer step. The
// operands and their arithmetic are KVSM 0's, so the output bits are too.
var kvsmDefine = catalog.DefineSpec{Name: "KVSM", Default: "0", Max: 1, Unset: true,
	Doc: "1: each step's K/V tiles copied once into shared memory (cp.async, two buffers) for the WN warps that share them; 0: each warp loads into registers"}

// ldhDefine adds cache hints to the K/V loads. Measured slower on the H200
// (up to 6% at batch 16), it stays off and sweepable.
var ldhDefine = catalog.DefineSpec{Name: "LDH", Default: "0", Max: 1,
	Doc: "1: K/V loads with L1::no_allocate and L2::256B prefetch hints"}

// The tensor-core kernels' own defines (mma, mmaf and mmac read them all
// through mma_core.cuh).
var (
	mmaNR = catalog.DefineSpec{Name: "NR", Default: "1", Min: 1, Max: 4, Doc: "16-row tiles per warp step, all loaded before the first mma"}
	mmaGN = catalog.DefineSpec{Name: "GN", Default: "1", Min: 1, Max: 8, Doc: "8-column n-tiles: the group's heads times the query tokens must fit in 8*GN"}
	// mmaWN lets several warps share a tile's rows, each taking GN/WN of
	// its n-tiles: with several query tokens per sequence the columns
	// outgrow one warp's registers (GN 4 alone: 255 registers and a spill
	// under NVRTC 11.8; GN 4 over WN 4: 128, no spill), while the rows
	// still leave DRAM once.
	mmaWN = catalog.DefineSpec{Name: "WN", Default: "1", Min: 1, Max: 8,
		Doc: "warps sharing each 16-row tile, one GN/WN share of its n-tiles each; must divide GN and WARPS"}
	mmaPF = catalog.DefineSpec{Name: "PF", Default: "0", Max: 1,
		Doc: "1: the next step's loads go out before this step's mma (register double buffering); 0: load, then compute"}
)

// gqaWarps is gqa's WARPS: at 228 registers only one or two blocks fit an
// SM, so each block brings 8 warps.
var gqaWarps = warpsDefine

var (
	groupGrid  = [3]string{abi.DefineSplits, "kv_heads", "batch"}
	groupBlock = [3]string{"32*WARPS", "1", "1"}
)

// gqaMaxGroup is GMAX in gqa.cu: a lane holds its dims for 8 heads, and the
// transposed reduction packs 8 heads x 2 rows into the 16 lanes of a row.
const gqaMaxGroup = 8

// checkGroupShape is what the group kernels need of the shape: whole GQA
// groups and a head_dim among dims (gqa: 128, 16 lanes x 8 dims; mma:
// 64, 128 or 256, k-steps of 16 with the merge area in static shared
// memory; mmaf: 128).
func checkGroupShape(s abi.Shape, dims ...int) error {
	if err := checkGQA(s); err != nil {
		return err
	}
	if !slices.Contains(dims, s.HeadDim) {
		return fmt.Errorf("head_dim %d: needs head_dim %s", s.HeadDim, joinInts(dims))
	}
	return nil
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// checkGQAKernel: gqa.cu loads K/V with its own f16/f32 code (#if
// KV_F16), not kv_ld4, so it keeps to f16 and f32.
func checkGQAKernel(s abi.Shape, defines map[string]string) error {
	if err := checkGroupShape(s, 128); err != nil {
		return err
	}
	if g := s.Heads / s.KVHeads; g > gqaMaxGroup {
		return fmt.Errorf("group %d (heads/kv_heads): at most %d query heads per KV head", g, gqaMaxGroup)
	}
	if err := checkKVType(s, false); err != nil {
		return err
	}
	nr, err := defineInt(defines, "NR", 4)
	if err != nil {
		return err
	}
	if nr%2 != 0 {
		return fmt.Errorf("NR=%d: must be even (rows are reduced in pairs)", nr)
	}
	return nil
}

// mmaKVTypes are the KV types the tensor-core kernels read: the 16-bit
// ones straight into the mma's f16 or bf16 operands, and fp8e4m3
// decoded and scaled (their signature takes kv_scale).
var mmaKVTypes = []*kvtype.Type{kvtype.F16, kvtype.BF16, kvtype.FP8E4M3}

// mmaSharedBytes is the static shared memory of mma's block merge: one
// state row per WARPS/WN warps, sm_o[WARPS/WN][8·GN][HEAD_DIM] floats
// plus sm_m and sm_l, WARPS/WN × 8·GN floats each.
// With KVSM the area is a union with the staging buffers: two steps of
// NR tiles of K and V, 16 rows of head_dim 16-bit elements, per row of
// warps (mma_core.cuh mma_shared).
func mmaSharedBytes(headDim, warps, gn, wn, nr int, kvsm bool) int {
	rows := warps / wn
	merge := rows*8*gn*headDim*4 + 2*rows*8*gn*4
	if !kvsm {
		return merge
	}
	return max(merge, rows*2*nr*2*16*headDim*2)
}

// mmaHeadDims are the head dims mma_core.cuh is built for (k-steps of 16,
// the merge area in static shared memory).
var mmaHeadDims = []int{64, 128, 256}

func checkMMAKernel(s abi.Shape, defines map[string]string) error {
	if err := checkMMA(s, defines, mmaHeadDims...); err != nil {
		return err
	}
	return checkSplitSize(s, defines)
}

// checkSplitSize bounds SPLITSIZE: whole steps of 16*NR rows, not with
// FIXCHUNK, and SPLITS splits of it reaching the capacity, or the rows
// past them would be left out.
func checkSplitSize(s abi.Shape, defines map[string]string) error {
	size, err := defineInt(defines, DefineSplitSize, 0)
	if err != nil || size == 0 {
		return err
	}
	nr, err := defineInt(defines, "NR", 1)
	if err != nil {
		return err
	}
	splits, err := defineInt(defines, abi.DefineSplits, 64)
	if err != nil {
		return err
	}
	fc, err := defineInt(defines, "FIXCHUNK", 0)
	if err != nil {
		return err
	}
	switch {
	case size%(16*nr) != 0:
		return fmt.Errorf("SPLITSIZE=%d: must be a multiple of a step, 16*NR = %d rows", size, 16*nr)
	case fc != 0:
		return fmt.Errorf("SPLITSIZE=%d with FIXCHUNK=%d: both fix a split's rows; give one", size, fc)
	case splits*size < s.Capacity:
		return fmt.Errorf("SPLITS=%d x SPLITSIZE=%d = %d rows < capacity %d: the rows past them would be left out (SPLITS >= %d)",
			splits, size, splits*size, s.Capacity, (s.Capacity+size-1)/size)
	}
	return nil
}

// checkMMA is checkMMAKernel for the head_dims dims.
func checkMMA(s abi.Shape, defines map[string]string, dims ...int) error {
	if err := checkGroupShape(s, dims...); err != nil {
		return err
	}
	if t, err := kvtype.Lookup(string(s.KVDtype)); err != nil || !slices.Contains(mmaKVTypes, t) {
		return fmt.Errorf("kv_dtype %q: the tensor-core kernel takes f16, bf16 or fp8e4m3 K/V", s.KVDtype)
	}
	gn, err := defineInt(defines, "GN", 1)
	if err != nil {
		return err
	}
	warps, err := defineInt(defines, "WARPS", 4)
	if err != nil {
		return err
	}
	wn, err := defineInt(defines, "WN", 1)
	if err != nil {
		return err
	}
	if g, q := s.Heads/s.KVHeads, s.Attention.Queries(); g*q > 8*gn {
		if q == 1 {
			return fmt.Errorf("group %d (heads/kv_heads) exceeds 8*GN = %d: set GN=%d", g, 8*gn, (g+7)/8)
		}
		return fmt.Errorf("group %d x q_len %d = %d columns exceed 8*GN = %d: set GN=%d (and WN to keep GN/WN n-tiles a warp)", g, q, g*q, 8*gn, (g*q+7)/8)
	}
	if cw, err := defineInt(defines, "CW", 2); err == nil && cw == 0 && s.Attention.Queries() > 1 {
		return fmt.Errorf("CW=0: the serial combine merges one query token; q_len %d needs CW 1 or 2", s.Attention.Queries())
	}
	if gn%wn != 0 || warps%wn != 0 {
		return fmt.Errorf("WN=%d must divide GN=%d and WARPS=%d (each warp of a tile takes GN/WN n-tiles)", wn, gn, warps)
	}
	fc, err := defineInt(defines, "FIXCHUNK", 0)
	if err != nil {
		return err
	}
	nr, err := defineInt(defines, "NR", 1)
	if err != nil {
		return err
	}
	if step := 16 * nr * warps / wn; fc%step != 0 {
		return fmt.Errorf("FIXCHUNK=%d: must be a multiple of a step of the block's warps, 16*NR*WARPS/WN = %d rows", fc, step)
	}
	ps, err := defineInt(defines, abi.DefinePageSize, 0)
	if err != nil {
		return err
	}
	ptw, err := defineInt(defines, "PTW", 0)
	if err != nil {
		return err
	}
	pte, err := defineInt(defines, "PTE", 0)
	if err != nil {
		return err
	}
	pf, err := defineInt(defines, "PF", 0)
	if err != nil {
		return err
	}
	if _, set := defines["PTW"]; !set && ps > 0 && pf == 1 {
		ptw = 1 // the kernel's default: the window with PF
	}
	switch {
	case pte == 1 && (ps == 0 || ptw == 1):
		return fmt.Errorf("PTE=1 guesses a warp's first block-table entries one at a time: it needs PAGE_SIZE and PTW=0 (PTW is 1 with PF=1 unless set)")
	case ptw == 1 && ps == 0:
		return fmt.Errorf("PTW=1 reads a block table: it needs PAGE_SIZE")
	case ps%16 != 0:
		return fmt.Errorf("PAGE_SIZE=%d: a multiple of 16 (a 16-row tile never straddles two pages)", ps)
	case ps > 0 && fc > 0:
		return fmt.Errorf("PAGE_SIZE=%d with FIXCHUNK=%d: a fixed split reads its first rows before nkv is known, which a block table past the sequence's pages cannot serve", ps, fc)
	}
	kvsm, err := defineInt(defines, "KVSM", 0)
	if err != nil {
		return err
	}
	if kvsm == 1 {
		if err := checkKVSM(s, pf, fc, wn); err != nil {
			return err
		}
	}
	if n := mmaSharedBytes(s.HeadDim, warps, gn, wn, nr, kvsm == 1); n > staticSharedLimit {
		most := 0
		for mmaSharedBytes(s.HeadDim, most+wn, gn, wn, nr, kvsm == 1) <= staticSharedLimit {
			most += wn
		}
		area := "merge area"
		if kvsm == 1 {
			area = fmt.Sprintf("merge and staging area (NR %d)", nr)
		}
		return fmt.Errorf("HEAD_DIM %d with WARPS %d, GN %d, WN %d: %.0f KiB %s exceeds %d KiB static shared memory: use WARPS<=%d",
			s.HeadDim, warps, gn, wn, float64(n)/1024, area, staticSharedLimit>>10, most)
	}
	return nil
}

// checkKVSM is what the staged form (KVSM 1, mma_core.cuh) needs besides
// mma's: 16-byte chunks of 16-bit K/V, the loads a step ahead its own
// (PF 0, no FIXCHUNK), and each thread's chunks of a step within one
// tile (WN divides head_dim/8).
func checkKVSM(s abi.Shape, pf, fixChunk, wn int) error {
	switch t, _ := kvtype.Lookup(string(s.KVDtype)); {
	case t == kvtype.FP8E4M3:
		return fmt.Errorf("KVSM=1 stages 16-bit K/V: kv_dtype %s is not staged", s.KVDtype)
	case pf == 1:
		return fmt.Errorf("KVSM=1 loads a step ahead through shared memory: it takes PF=0")
	case fixChunk > 0:
		return fmt.Errorf("KVSM=1 with FIXCHUNK=%d: the fixed split's first step is loaded into registers; give one", fixChunk)
	case (s.HeadDim/8)%wn != 0:
		return fmt.Errorf("KVSM=1 with WN=%d: WN must divide head_dim/8 = %d", wn, s.HeadDim/8)
	}
	return nil
}

// checkMMAFusedKernel is checkMMAKernel plus the fused merge's bounds: its
// merge gives each lane 4 of 128 dims, so head_dim 128 unless SPLITS is 1
// (one block per group normalises its own state: no merge, any of mma's
// head dims); the weights (8·GN × SPLITS floats) reuse the block's merge
// area, WARPS/WN rows × 8·GN columns × 128 dims, so SPLITS may not exceed
// 128·WARPS/WN.
func checkMMAFusedKernel(s abi.Shape, defines map[string]string) error {
	splits, err := defineInt(defines, abi.DefineSplits, 64)
	if err != nil {
		return err
	}
	dims := mmaHeadDims
	if splits != 1 {
		dims = []int{128}
	}
	if err := checkMMA(s, defines, dims...); err != nil {
		if splits != 1 && checkMMA(s, defines, mmaHeadDims...) == nil {
			return fmt.Errorf("%w (the merge's lanes hold 4 of 128 dims; SPLITS=1 needs no merge)", err)
		}
		return err
	}
	warps, err := defineInt(defines, "WARPS", 8)
	if err != nil {
		return err
	}
	wn, err := defineInt(defines, "WN", 1)
	if err != nil {
		return err
	}
	if most := 128 * warps / wn; splits > most {
		return fmt.Errorf("SPLITS=%d exceeds 128*WARPS/WN = %d: the merge keeps its weights in the block's merge area", splits, most)
	}
	return nil
}

// checkMMAFusedWKernel is what mma_fusedw.cu's merge needs besides
// mma's: head_dim 128 (a lane merges 4 of 128 dims) and at least 4 warps
// (the last sum takes one thread per dim).
func checkMMAFusedWKernel(s abi.Shape, defines map[string]string) error {
	if err := checkMMA(s, defines, 128); err != nil {
		return err
	}
	warps, err := defineInt(defines, "WARPS", 8)
	if err != nil {
		return err
	}
	if warps < 4 {
		return fmt.Errorf("WARPS=%d: the merge needs at least 4 warps (one thread per dim of 128)", warps)
	}
	return nil
}

// mmaOptions are the attention options mma_core.cuh computes (kernels/
// ABI.md): soft-cap, sinks and up to mmaMaxQLen query tokens per sequence.
func mmaOptions(a abi.Attention) error { return mmaOptionsUpTo(a, mmaMaxQLen) }

// mmaMaxQLen is QLEN's bound in mma_core.cuh.
const mmaMaxQLen = 8

// mmacOptions: mmac's cluster merge slices one token's heads, so it takes
// soft-cap and sinks but one query token.
func mmacOptions(a abi.Attention) error { return mmaOptionsUpTo(a, 1) }

func mmaOptionsUpTo(a abi.Attention, maxQ int) error {
	if a.Queries() > maxQ {
		return fmt.Errorf("q_len %d: at most %d query tokens per sequence", a.Queries(), maxQ)
	}
	return nil
}

// mmaTakes are the options mma_core.cuh computes: soft-cap, sinks and
// more than one query token; ALiBi, a window, MLA's widths and an lse
// output it does not (no bias on its scores, every split reads all its
// rows, K and V of one width, no lse written).
var mmaTakes = []abi.Option{"softcap", "sinks", "q_len"}

func init() {
	register(&catalog.Kernel{
		Name:    "gqa",
		File:    "gqa.cu",
		Doc:     "block per GQA group on CUDA cores: half-warp per row, lane owns 8 dims of every head, transposed score reduction",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{
			gqaSplits,
			{Name: "NR", Default: "4", Min: 2, Max: 8, Doc: "rows per half-warp per step (even): loads staged before the step's reduction"},
			gqaWarps,
			minrowsDefine,
			cwDefine,
			ldhDefine,
		},
		Grid: groupGrid, Block: groupBlock, Shared: "0",
		Class: catalog.Tolerance,
		Check: checkGQAKernel,
	})
	register(&catalog.Kernel{
		Name:    "mma",
		File:    "mma.cu",
		Doc:     "block per GQA group on tensor cores: mma.sync m16n8k16, S^T = K.Q^T and O^T = V^T.P^T, f16 q and weights",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{
			frontierSplits,
			mmaNR,
			warpsDefine,
			minrowsDefine,
			mmaGN,
			mmaWN,
			mmaPF,
			cwDefine,
			ldhDefine,
			pdlEndDefine,
			fixChunkDefine,
			pageSizeDefine,
			pageWindowDefine,
			pageEarlyDefine,
			kvsmDefine,
			splitSizeDefine,
		},
		Grid: groupGrid, Block: groupBlock, Shared: "0",
		Class:     catalog.Tolerance,
		Check:     checkMMAKernel,
		Takes:     mmaTakes,
		Attention: mmaOptions,
		// Every form (invariance.go).
		Invariance: mmaInvariance,
	})
	// mmaf is mma in one launch: the last block of each (KV head, sequence)
	// merges the splits (kernels/mma_fused.cu). Its partial slots and out
	// are byte-identical to mma's at CW 2 (tools/kfront, up to SPLITS 64),
	// but it is gated in the tolerance class like mma: the identity holds
	// only against that one combine. It takes mma's defines but CW: there
	// is no combine to choose.
	register(&catalog.Kernel{
		Name:    "mmaf",
		File:    "mma_fused.cu",
		Doc:     "mma in one launch: the last block of each (KV head, sequence) merges the splits and writes out (SPLITS 1: each block writes its own)",
		Partial: "attn_partial",
		Defines: []catalog.DefineSpec{
			frontierSplits,
			mmaNR,
			warpsDefine,
			minrowsDefine,
			mmaGN,
			mmaWN,
			mmaPF,
			ldhDefine,
			pageSizeDefine,
			pageWindowDefine,
			pageEarlyDefine,
			kvsmDefine,
		},
		Grid: groupGrid, Block: groupBlock, Shared: "0",
		Class:     catalog.Tolerance,
		Check:     checkMMAFusedKernel,
		Fused:     true,
		Takes:     mmaTakes,
		Attention: mmaOptions,
	})
	// mmafw is mma in one launch with the merge shared by the group's
	// blocks (kernels/mma_fusedw.cu): those still resident once every
	// split is in (and the last to arrive, always) claim the group's
	// columns one by one, each merged in one L2 round trip. The fix the
	// batch-1 measurements of mmaf named: its last block alone merged 33-64
	// splits of 7 heads in four round trips.
	register(&catalog.Kernel{
		Name:    "mmafw",
		File:    "mma_fusedw.cu",
		Doc:     "mma in one launch: the group's blocks still resident once every split is in share its merge, one query head each",
		Partial: "attn_partial",
		Defines: []catalog.DefineSpec{
			{Name: abi.DefineSplits, Default: "33", Min: 2, Max: 128,
				Doc: "KV splits per (KV head, sequence): 2 to 128 (the group's counter has 8-bit fields)"},
			mmaNR,
			warpsDefine,
			minrowsDefine,
			mmaGN,
			mmaWN,
			mmaPF,
			ldhDefine,
			pageSizeDefine,
			pageWindowDefine,
			pageEarlyDefine,
			kvsmDefine,
			{Name: "MWW", Default: "1", Max: 1,
				Doc: "1: blocks still resident once every split is in share the merge; 0: the last to arrive merges alone"},
		},
		Grid: groupGrid, Block: groupBlock, Shared: "0",
		Class:     catalog.Tolerance,
		Check:     checkMMAFusedWKernel,
		Fused:     true,
		Takes:     mmaTakes,
		Attention: mmaOptions,
	})
	// mmac is mma in one launch with the merge spread over a thread-block
	// cluster (kernels/mma_cluster.cu): the SPLITS blocks of a group form
	// one cluster, meet at the cluster barrier and each merges a slice of
	// the group's outputs. A variant must launch it with cluster: [SPLITS]
	// (cluster_nonportable: true above 8); the kernel refuses to compile
	// otherwise. NR defaults to 1 as mma's: NR 2 was slower at every point
	// measured (experiments/results/h200/cluster.jsonl: 38.7 against 34.3
	// µs at batch 1, nkv 32768).
	register(&catalog.Kernel{
		Name:    "mmac",
		File:    "mma_cluster.cu",
		Doc:     "mma in one launch: the splits of a group form a thread-block cluster and merge after its barrier, each block a slice of out",
		Partial: "attn_partial",
		Defines: []catalog.DefineSpec{
			{Name: abi.DefineSplits, Default: "16", Min: 1, Max: 16,
				Doc: "KV splits per (KV head, sequence), one cluster: at most 16 (above 8 with cluster_nonportable)"},
			mmaNR,
			warpsDefine,
			minrowsDefine,
			mmaGN,
			mmaWN,
			mmaPF,
			ldhDefine,
		},
		Grid: groupGrid, Block: groupBlock, Shared: "0",
		Class:     catalog.Tolerance,
		Check:     checkMMAKernel,
		Fused:     true,
		Takes:     mmaTakes,
		Attention: mmacOptions,
	})
}
