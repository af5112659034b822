package variants

import (
	"fmt"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/internal/kvtype"
)

// The seed family: the split-KV decode kernels of the seed documents (R4,
// D2 and the variants D2 measured against). All of them launch one
// partial slot per (split, head, sequence) and share kernels/combine.cuh.

// splitsDefine is the SPLITS define every kernel takes.
var splitsDefine = catalog.DefineSpec{Name: abi.DefineSplits, Default: "32", Min: 1,
	Doc: "KV splits per (head, sequence): partial slots merged by attn_combine"}

// nrDefine is the row window of the lane-owns-dims kernels.
var nrDefine = catalog.DefineSpec{Name: "NR", Default: "4", Min: 1, Max: 16,
	Doc: "rows per warp window: the loads staged ahead of the softmax chain"}

// ringDefine is the cp.async ring depth.
var ringDefine = catalog.DefineSpec{Name: "RING", Default: "2", Min: 2, Max: 4,
	Doc: "cp.async ring stages (windows of K and V in flight)"}

var (
	warpGrid  = [3]string{abi.DefineSplits, "heads", "batch"}
	warpBlock = [3]string{"32", "1", "1"}
)

// staticSharedLimit is the static shared memory a kernel may declare
// without the opt-in attribute; the cp.async ring is static, so a larger
// ring cannot be compiled at all.
const staticSharedLimit = 48 << 10

// checkGQA rejects shapes whose query heads do not split evenly over the KV
// heads: every kernel maps head h to KV head h / (heads / kv_heads).
func checkGQA(s abi.Shape) error {
	if s.KVHeads <= 0 || s.Heads%s.KVHeads != 0 {
		return fmt.Errorf("heads %d is not a multiple of kv_heads %d", s.Heads, s.KVHeads)
	}
	return nil
}

// checkKVType refuses a KV type the kernel cannot read. The kernels that
// read K/V through abi.cuh's kv_ld4/kv_ld2 read what those decode: f32,
// f16 and bf16 (viaLoaders). None of the CUDA-core kernels takes the
// kv_scale argument a scaled type needs.
func checkKVType(s abi.Shape, viaLoaders bool) error {
	t, err := kvtype.Lookup(string(s.KVDtype))
	switch {
	case err != nil:
		return err
	case t.Scaled:
		return fmt.Errorf("kv_dtype %s: the kernel takes no kv_scale (fp8 K/V need their scales); use mma or mmaf", t)
	case t == kvtype.BF16 && !viaLoaders:
		return fmt.Errorf("kv_dtype %s: the kernel reads K/V with its own f16/f32 loads, not abi.cuh's kv_ld4/kv_ld2; needs f16 or f32", t)
	}
	return nil
}

// checkLaneDims is the seeds' dispatch gate for the lane-owns-dims mapping:
// 32 lanes x 4 dims cover at most 128 dims, and every lane moves whole float4s.
// Their K/V go through kv_ld4.
func checkLaneDims(s abi.Shape, _ map[string]string) error {
	if err := checkGQA(s); err != nil {
		return err
	}
	if err := checkKVType(s, true); err != nil {
		return err
	}
	if s.HeadDim%4 != 0 || s.HeadDim > 128 {
		return fmt.Errorf("head_dim %d: needs head_dim %% 4 == 0 and head_dim <= 128 (one warp, 4 dims per lane)", s.HeadDim)
	}
	return nil
}

// checkRows gates the lane-owns-rows specimen: each lane holds the whole
// HEAD_DIM accumulator in float4s, and the combine block has HEAD_DIM threads.
func checkRows(s abi.Shape, _ map[string]string) error {
	if err := checkGQA(s); err != nil {
		return err
	}
	if err := checkKVType(s, true); err != nil { // kv_ld2
		return err
	}
	if s.HeadDim%4 != 0 || s.HeadDim > 1024 {
		return fmt.Errorf("head_dim %d: needs head_dim %% 4 == 0 and head_dim <= 1024", s.HeadDim)
	}
	return nil
}

// defineInt reads an integer define, falling back to def when it is unset.
func defineInt(defines map[string]string, name string, def int) (int, error) {
	v, ok := defines[name]
	if !ok || v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("define %s=%q is not an integer: %w", name, v, err)
	}
	return n, nil
}

// cpasyncSharedBytes is the static ring of cpasync.cu: RING stages of NR
// rows of K and V, HEAD_DIM elements each.
func cpasyncSharedBytes(s abi.Shape, defines map[string]string) (int, error) {
	ring, err := defineInt(defines, "RING", 2) // ringDefine.Default
	if err != nil {
		return 0, err
	}
	nr, err := defineInt(defines, "NR", 4) // nrDefine.Default
	if err != nil {
		return 0, err
	}
	return ring * nr * 2 * s.HeadDim * s.KVType().Bytes, nil
}

// checkCpasync: cpasync stages raw K/V bytes with cp.async and reads them
// back with its own shared-memory loader (kt_sm_ld4), not kv_ld4, so it
// keeps to f16 and f32.
func checkCpasync(s abi.Shape, defines map[string]string) error {
	if err := checkKVType(s, false); err != nil {
		return err
	}
	if err := checkLaneDims(s, defines); err != nil {
		return err
	}
	n, err := cpasyncSharedBytes(s, defines)
	if err != nil {
		return err
	}
	if n > staticSharedLimit {
		return fmt.Errorf("cp.async ring of %d bytes (RING x NR x 2 x head_dim x %s) exceeds the %d-byte static shared memory limit", n, s.KVDtype, staticSharedLimit)
	}
	return nil
}

func init() {
	register(&catalog.Kernel{
		Name:    "r4",
		File:    "r4.cu",
		Doc:     "lane owns 4 dims, warp walks NR-row windows; K staged, V loaded inline at its use (R4)",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{splitsDefine, nrDefine},
		Grid:    warpGrid, Block: warpBlock, Shared: "0",
		Class: catalog.Tolerance,
		Check: checkLaneDims,
	})
	register(&catalog.Kernel{
		Name:    "d2",
		File:    "d2.cu",
		Doc:     "r4 with K and V of the whole NR-row window staged in registers before the softmax chain (D2)",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{splitsDefine, nrDefine},
		Grid:    warpGrid, Block: warpBlock, Shared: "0",
		Class: catalog.Bitwise, Twin: "r4",
		Check: checkLaneDims,
	})
	register(&catalog.Kernel{
		Name:    "d2full",
		File:    "d2full.cu",
		Doc:     "d2 with unguarded full windows and one guarded tail window, so the staged loads really issue together",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{splitsDefine, nrDefine},
		Grid:    warpGrid, Block: warpBlock, Shared: "0",
		Class: catalog.Bitwise, Twin: "d2",
		Check: checkLaneDims,
	})
	register(&catalog.Kernel{
		Name:    "rows",
		File:    "rows.cu",
		Doc:     "pre-R4 specimen: lane owns rows, runtime-indexed accumulator in local memory, 4-byte row walk",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{splitsDefine},
		Grid:    warpGrid, Block: warpBlock, Shared: "0",
		Class: catalog.Tolerance,
		Check: checkRows,
	})
	register(&catalog.Kernel{
		Name:    "cpasync",
		File:    "cpasync.cu",
		Doc:     "d2's arithmetic fed by a RING-deep cp.async shared-memory ring of NR-row K/V windows",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{splitsDefine, nrDefine, ringDefine},
		Grid:    warpGrid, Block: warpBlock, Shared: "0",
		Class: catalog.Bitwise, Twin: "d2",
		Check: checkCpasync,
	})
	register(&catalog.Kernel{
		Name:    "pair",
		File:    "pair.cu",
		Doc:     "d2's arithmetic with pair lookahead: the next two rows' K/V loads issue before this pair's chain",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{splitsDefine},
		Grid:    warpGrid, Block: warpBlock, Shared: "0",
		Class: catalog.Bitwise, Twin: "d2",
		Check: checkLaneDims,
	})
	register(&catalog.Kernel{
		Name:    "warp4",
		File:    "warp4.cu",
		Doc:     "4 cooperating warps walk 256 rows per step (64 each, windows of 4), merged in shared memory",
		Partial: "attn_partial", Combine: "attn_combine",
		Defines: []catalog.DefineSpec{splitsDefine},
		Grid:    warpGrid, Block: [3]string{"128", "1", "1"}, Shared: "0",
		Class: catalog.Tolerance,
		Check: checkLaneDims,
	})
}
