package abi

import (
	"fmt"
	"math"
	"strconv"
)

// Dims is what the table's size and value functions read: the shape of a
// point, its SPLITS and the io its signature declares.
type Dims struct {
	Shape  Shape
	Splits int
	IO     IO
	// WorkspaceBytes is io.workspace evaluated at the point.
	WorkspaceBytes int64
	// Scratch are the named scratch buffers, which live in the workspace
	// allocation after io.workspace's bytes (ScratchSpans).
	Scratch []ScratchBuf
	// PageSize is io.page_size evaluated at the point: a paged layout's
	// rows per page; 0 for the others.
	PageSize int
	// Planned are the host-planned arrays with their entries at the
	// point, in one allocation (AllocPlanned, PlannedSpans).
	Planned []PlannedBuf
	// SMs is the device's SM count that the point's planned arrays,
	// scratch sizes and argument expressions read as sms (SymSMs), as the
	// plan assumed it; 0 when none of them reads it, and Env then leaves
	// sms out, so that an expression reading it fails rather than reading
	// a count nobody assumed.
	SMs int
}

// An AllocID names one device allocation of a point's workspace. A buffer
// of the table points into one of them, at an offset (seqlens follow the
// positions, v_scale follows k_scale), so that one copy sets both.
type AllocID int

// The allocations, in the order the probe allocates them.
const (
	AllocQ AllocID = iota
	AllocK
	AllocV
	AllocPositions
	AllocPartial
	AllocOut
	AllocScratch
	AllocLse
	AllocWorkspace
	AllocKVScale
	AllocHeadParams
	AllocPages
	AllocMask
	AllocSplitCounts
	AllocPlanned
	NumAllocs
)

// An Alloc is one device allocation with its size.
type Alloc struct {
	ID   AllocID
	Name string
	// Size is the allocation's bytes at d, 16-byte aligned (cuMemsetD32
	// works in 4-byte words and the float4 loaders want aligned rows);
	// used says whether an argument of the point's launches names a
	// buffer in it. Zero: not allocated.
	Size func(d Dims, used bool) int64
	// Role is what a kernel may do to it.
	Role Role
}

// A Role is what a kernel may do to an allocation; the gates check each
// role's rule after every launch (probe/inputs.go, probe/guards.go). The
// zero Role is RoleInput: an allocation added without one is checked as
// read-only, so a forgotten role shows as a false alarm, never as a write
// nothing looks at.
type Role int

const (
	// RoleInput: the kernel only reads it (q, K, V, the lengths, the
	// scales, an engine's page tables): it must hold its uploaded bytes
	// after every launch.
	RoleInput Role = iota
	// RoleOutput: every launch writes it.
	RoleOutput
	// RoleScratch: the kernel keeps it from launch to launch (counters
	// zeroed once at allocation, an engine's workspace); the host never
	// clears it between launches.
	RoleScratch
)

// Align16 rounds n up to 16 bytes.
func Align16(n int64) int64 { return (n + 15) &^ 15 }

// QElems is batch × q_len × heads × head_dim, the elements of q.
func QElems(s Shape) int64 { return QRows(s) * int64(s.HeadDim) }

// OutElems is batch × q_len × heads × dv, the elements of out.
func OutElems(s Shape) int64 { return QRows(s) * int64(s.Attention.VDim(s.HeadDim)) }

// QRows is batch × q_len × heads, the query rows (and lse's elements).
func QRows(s Shape) int64 {
	return int64(s.Batch) * int64(s.Attention.Queries()) * int64(s.Heads)
}

// kvBytes is the bytes of K over the whole capacity (the whole pool,
// paged).
func kvBytes(d Dims, _ bool) int64 { return rowsBytes(d, d.Shape.HeadDim) }

// vBytes is the bytes of V: dv wide (MLA), head_dim otherwise.
func vBytes(d Dims, _ bool) int64 { return rowsBytes(d, d.Shape.Attention.VDim(d.Shape.HeadDim)) }

func rowsBytes(d Dims, width int) int64 {
	s := d.Shape
	rows := int64(s.Batch) * int64(s.Capacity)
	if d.PageSize > 0 {
		rows = int64(NumPages(s, d.PageSize)) * int64(d.PageSize)
	}
	return Align16(rows * int64(s.KVHeads) * int64(width) * int64(s.KVType().Bytes))
}

// MaskElems is the additive mask's elements, [batch][q_len][capacity].
func MaskElems(s Shape) int64 {
	return int64(s.Batch) * int64(s.Attention.Queries()) * int64(s.Capacity)
}

// Allocs is the table of allocations, indexed by AllocID.
var Allocs = [NumAllocs]Alloc{
	{AllocQ, "q", func(d Dims, _ bool) int64 { return Align16(QElems(d.Shape) * int64(d.IO.OrABI().Q.Bytes())) }, RoleInput},
	{AllocK, "k", kvBytes, RoleInput},
	{AllocV, "v", vBytes, RoleInput},
	// Positions (nkv − 1, int32 per sequence), then seqlens (nkv).
	{AllocPositions, "positions", func(d Dims, _ bool) int64 { return Align16(8 * int64(d.Shape.Batch)) }, RoleInput},
	{AllocPartial, "partial", func(d Dims, _ bool) int64 {
		s := d.Shape
		// q_len query tokens have a slot row each per head ([batch][SPLITS]
		// [q_len·heads][PSTR], kernels/ABI.md).
		return Align16(int64(s.Batch) * int64(d.Splits) * int64(s.Attention.Queries()) * int64(s.Heads) * int64(PartialStride(s.HeadDim)) * 4)
	}, RoleOutput},
	{AllocOut, "out", func(d Dims, _ bool) int64 { return Align16(OutElems(d.Shape) * int64(d.IO.OrABI().Out.Bytes())) }, RoleOutput},
	// The fused kernels' batch × kv_heads arrival counters (kernels/ABI.md).
	// Every workspace has them, fused or not: they are a few bytes, and a
	// layout that depended on the kernel would free and refill gigabytes
	// of K/V whenever a sweep moves between a fused and a plain variant of
	// one shape. A signature that passes counters gets one per query head,
	// enough for a kernel that counts per KV head or per query head.
	{AllocScratch, "counters", func(d Dims, used bool) int64 {
		s := d.Shape
		n := Align16(int64(s.Batch) * int64(s.KVHeads) * 4)
		if used {
			n = max(n, Align16(int64(s.Batch)*int64(s.Heads)*4))
		}
		return n
	}, RoleScratch},
	// Room for a per-split or a per-head log-sum-exp, and for the final
	// one of every query row that a kernel declaring lse writes.
	{AllocLse, "lse", func(d Dims, used bool) int64 {
		if !used {
			return 0
		}
		s := d.Shape
		return Align16(max(int64(s.Batch)*int64(d.Splits)*int64(s.Heads), QRows(s)) * 4)
	}, RoleOutput},
	// io.workspace, then the named scratch buffers (ScratchSpans).
	{AllocWorkspace, "workspace", func(d Dims, used bool) int64 {
		if !used && len(d.Scratch) == 0 {
			return 0
		}
		return Align16(d.scratchEnd())
	}, RoleScratch},
	// A scaled KV type's f32 [2][kv_heads] scales, K's first; for an
	// unscaled type, only when a launch passes them (an engine that takes
	// scale pointers for every cache type, as vLLM does), holding 1.0.
	{AllocKVScale, "kv_scale", func(d Dims, used bool) int64 {
		if !d.Shape.KVType().Scaled && !used {
			return 0
		}
		return Align16(2 * int64(d.Shape.KVHeads) * 4)
	}, RoleInput},
	// The per-head option values, f32 [2][heads]: the ALiBi slopes, then
	// the sink logits; only for a shape with either option.
	{AllocHeadParams, "head_params", func(d Dims, _ bool) int64 {
		if a := d.Shape.Attention; a.ALiBi == "" && !a.Sinks {
			return 0
		}
		return Align16(2 * int64(d.Shape.Heads) * 4)
	}, RoleInput},
	// A paged layout's index buffers, int32 (paged.go): the block table,
	// the page indptr, the page indices and the last page's rows.
	{AllocPages, "pages", func(d Dims, _ bool) int64 {
		if d.PageSize <= 0 {
			return 0
		}
		return Align16(pagesEnd(d))
	}, RoleInput},
	// The additive mask, [batch][q_len][capacity] in io.mask, when a
	// launch passes it.
	{AllocMask, "mask", func(d Dims, used bool) int64 {
		if !used {
			return 0
		}
		return Align16(MaskElems(d.Shape) * int64(d.IO.MaskDtype().Bytes()))
	}, RoleInput},
	// io.split_counts of each sequence, int32 [batch].
	{AllocSplitCounts, "split_counts", func(d Dims, _ bool) int64 {
		if d.IO.SplitCounts == "" {
			return 0
		}
		return Align16(4 * int64(d.Shape.Batch))
	}, RoleInput},
	// The host-planned arrays (planned.go), int32, each from a 16-byte
	// boundary; rewritten with the lengths.
	{AllocPlanned, "planned", func(d Dims, _ bool) int64 { return Align16(d.plannedEnd()) }, RoleInput},
}

// A Buffer is a device buffer a kernel argument may name. Its name is its
// hash text (Arg.String): renaming one changes the hash of every point
// that passes it.
type Buffer struct {
	Name  string
	Alloc AllocID
	// Offset is where the buffer starts in its allocation, in bytes;
	// nil: at the start.
	Offset func(Dims) int64
	// Scaled buffers exist only for a shape of a scaled KV type, Paged
	// ones only for a paged layout.
	Scaled, Paged bool
	// Elem is the bytes of one element where every point has the same
	// (the int32 and f32 arrays), 0 where the shape or io sets it.
	Elem int
	Doc  string
}

// Buffers is the table of buffers, in the order messages name them.
var Buffers = []Buffer{
	{Name: "q", Alloc: AllocQ, Doc: "the queries, [batch][q_len][heads][head_dim] in io.q"},
	{Name: "k", Alloc: AllocK, Doc: "the keys over the whole capacity, in io.kv_layout and kv_dtype"},
	{Name: "v", Alloc: AllocV, Doc: "the values, as k, dv wide for an mla shape"},
	{Name: "out", Alloc: AllocOut, Doc: "the output, [batch][q_len][heads][dv] in io.out"},
	{Name: "partial", Alloc: AllocPartial, Doc: "the split slots, f32 [batch][SPLITS][heads][PSTR] (io.partial)"},
	{Name: "workspace", Alloc: AllocWorkspace, Doc: "io.workspace bytes, zeroed once"},
	{Name: "positions", Elem: 4, Alloc: AllocPositions, Doc: "int32 [batch], nkv − 1 of each sequence"},
	// The lengths follow the positions in one buffer, so that one copy
	// sets both before every run.
	{Name: "seqlens", Elem: 4, Alloc: AllocPositions, Offset: func(d Dims) int64 { return 4 * int64(d.Shape.Batch) },
		Doc: "int32 [batch], nkv of each sequence"},
	{Name: "lse", Elem: 4, Alloc: AllocLse, Doc: "f32 [batch][SPLITS][heads], room for a log-sum-exp; a variant declaring lse writes f32 [batch][q_len][heads] there, gated"},
	{Name: "counters", Elem: 4, Alloc: AllocScratch, Doc: "int32 arrival counters, zero between launches"},
	{Name: "kv_scale", Elem: 4, Alloc: AllocKVScale, Scaled: true, Doc: "f32 [2][kv_heads], K's scales then V's (1.0 for an unscaled type)"},
	{Name: "k_scale", Elem: 4, Alloc: AllocKVScale, Scaled: true, Doc: "f32 [kv_heads], K's half of kv_scale"},
	{Name: "v_scale", Elem: 4, Alloc: AllocKVScale, Scaled: true, Offset: func(d Dims) int64 { return 4 * int64(d.Shape.KVHeads) },
		Doc: "f32 [kv_heads], V's half of kv_scale"},
	{Name: "alibi_slopes", Elem: 4, Alloc: AllocHeadParams, Doc: "f32 [heads], the ALiBi slopes (alibi: buffer or standard)"},
	{Name: "sinks", Elem: 4, Alloc: AllocHeadParams, Offset: func(d Dims) int64 { return 4 * int64(d.Shape.Heads) },
		Doc: "f32 [heads], the sink logits (sinks: true)"},
	{Name: "block_table", Elem: 4, Alloc: AllocPages, Offset: blockTableAt, Paged: true,
		Doc: "int32 [batch][max_pages], each sequence's pages in logical order (paged)"},
	{Name: "page_indptr", Elem: 4, Alloc: AllocPages, Offset: pageIndptrAt, Paged: true,
		Doc: "int32 [batch+1], prefix sums of each sequence's used pages, cdiv(nkv, page_size) (paged)"},
	{Name: "page_indices", Elem: 4, Alloc: AllocPages, Offset: pageIndicesAt, Paged: true,
		Doc: "int32 [page_indptr[batch]], the used pages of each sequence, concatenated (paged)"},
	{Name: "last_page_len", Elem: 4, Alloc: AllocPages, Offset: lastPageLenAt, Paged: true,
		Doc: "int32 [batch], the rows of each sequence's last used page, 1..page_size (paged)"},
	{Name: "mask", Alloc: AllocMask,
		Doc: "[batch][q_len][capacity] in io.mask: 0 where a query token sees a row, −inf elsewhere (the lengths as llama.cpp passes them)"},
	{Name: "split_counts", Elem: 4, Alloc: AllocSplitCounts,
		Doc: "int32 [batch], io.split_counts at each sequence's nkv"},
}

// BufferNamed returns the buffer of a name, or nil.
func BufferNamed(name string) *Buffer { return named(Buffers, name) }

// BufferNames returns the buffer names in table order.
func BufferNames() []string { return names(Buffers) }

// An entry is a row of one of the tables, found by its name.
type entry interface{ Buffer | Scalar }

func nameOf[T entry](e *T) string {
	switch e := any(e).(type) {
	case *Buffer:
		return e.Name
	case *Scalar:
		return e.Name
	}
	panic("unreachable")
}

func named[T entry](table []T, name string) *T {
	for i := range table {
		if nameOf(&table[i]) == name {
			return &table[i]
		}
	}
	return nil
}

func names[T entry](table []T) []string {
	out := make([]string, len(table))
	for i := range table {
		out[i] = nameOf(&table[i])
	}
	return out
}

// At returns the byte offset of the buffer in its allocation.
func (b *Buffer) At(d Dims) int64 {
	if b.Offset == nil {
		return 0
	}
	return b.Offset(d)
}

// Sizes returns the bytes of every allocation at d; uses says whether an
// argument of the point's launches names a buffer (nil: none is named
// beyond the ABI's own, whose allocations exist regardless).
func Sizes(d Dims, uses func(buffer string) bool) [NumAllocs]int64 {
	var used [NumAllocs]bool
	if uses != nil {
		for _, b := range Buffers {
			if uses(b.Name) {
				used[b.Alloc] = true
			}
		}
	}
	var out [NumAllocs]int64
	for i, a := range Allocs {
		out[i] = a.Size(d, used[i])
	}
	return out
}

// A Scalar is a shape-derived value a kernel argument may name. Its name,
// with its type where the argument overrides it, is its hash text.
type Scalar struct {
	Name string
	// Type is the type it is passed as unless the argument says otherwise
	// (name:i64).
	Type ArgType
	// Value is its value at d; strides are in elements.
	Value func(d Dims) float64
	Doc   string
}

func f(n int) float64 { return float64(n) }

// kvElt is the size of one K/V element.
func kvElt(d Dims) int64 { return int64(d.Shape.KVType().Bytes) }

// Scalars is the table of scalars, in the order messages name them.
var Scalars = []Scalar{
	{"heads", ArgI32, func(d Dims) float64 { return f(d.Shape.Heads) }, "query heads"},
	{"kv_heads", ArgI32, func(d Dims) float64 { return f(d.Shape.KVHeads) }, "key/value heads"},
	{"head_dim", ArgI32, func(d Dims) float64 { return f(d.Shape.HeadDim) }, "elements per head"},
	{"capacity", ArgI32, func(d Dims) float64 { return f(d.Shape.Capacity) }, "K/V rows allocated per sequence"},
	{"batch", ArgI32, func(d Dims) float64 { return f(d.Shape.Batch) }, "sequences"},
	{"group", ArgI32, func(d Dims) float64 { return f(d.Shape.Group()) }, "query heads per KV head"},
	{"splits", ArgI32, func(d Dims) float64 { return f(d.Splits) }, "the SPLITS define"},
	{"kv_row_stride", ArgI32, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Row) },
		"elements between consecutive rows of one KV head (within a page, paged)"},
	{"kv_head_stride", ArgI32, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Head) },
		"elements between KV heads (within a page, paged)"},
	{"kv_batch_stride", ArgI32, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Batch) },
		"elements between sequences (not paged)"},
	// The same strides in bytes, as engines that address K/V through char
	// pointers pass them (llama.cpp's nb1, nb2, nb3); 64-bit by default,
	// since a cache's batch stride outgrows an int.
	{"kv_row_bytes", ArgI64, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Row * kvElt(d)) },
		"bytes between consecutive rows of one KV head (within a page, paged)"},
	{"kv_head_bytes", ArgI64, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Head * kvElt(d)) },
		"bytes between KV heads (within a page, paged)"},
	{"kv_batch_bytes", ArgI64, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Batch * kvElt(d)) },
		"bytes between sequences (not paged)"},
	{"kv_page_stride", ArgI64, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Page) },
		"elements between pages (paged)"},
	{"kv_page_bytes", ArgI64, func(d Dims) float64 { return float64(d.IO.OrABI().StridesOf(d).Page * kvElt(d)) },
		"bytes between pages (paged)"},
	{"page_size", ArgI32, func(d Dims) float64 { return f(d.PageSize) }, "rows per page (paged)"},
	{"max_pages", ArgI32, func(d Dims) float64 { return f(d.maxPages()) }, "pages per sequence, the block table's row stride (paged)"},
	{"num_pages", ArgI32, func(d Dims) float64 {
		if d.PageSize <= 0 {
			return 0
		}
		return f(NumPages(d.Shape, d.PageSize))
	}, "pages in the pool (paged)"},
	{"mask_stride", ArgI32, func(d Dims) float64 { return f(d.Shape.Capacity) }, "mask elements between query rows"},
	{"pstr", ArgI32, func(d Dims) float64 { return f(PartialStride(d.Shape.HeadDim)) }, "PSTR, floats per partial slot"},
	{"scale", ArgF32, func(d Dims) float64 { return 1 / math.Sqrt(f(d.Shape.HeadDim)) }, "the softmax scale, 1/√head_dim"},
	{"softcap", ArgF32, func(d Dims) float64 { return d.Shape.Attention.Softcap }, "the soft-cap, 0 without one"},
	{"window_left", ArgI32, func(d Dims) float64 {
		if w := d.Shape.Attention.Window; w > 0 {
			return f(w)
		}
		return -1 // FlashAttention's "no window"
	}, "the left window, −1 without one"},
	{"q_len", ArgI32, func(d Dims) float64 { return f(d.Shape.Attention.Queries()) }, "query tokens per sequence"},
	{"dv", ArgI32, func(d Dims) float64 { return f(d.Shape.Attention.VDim(d.Shape.HeadDim)) }, "elements per value row (head_dim but for mla)"},
}

// ScalarNamed returns the scalar of a name, or nil.
func ScalarNamed(name string) *Scalar { return named(Scalars, name) }

// ScalarNames returns the scalar names in table order.
func ScalarNames() []string { return names(Scalars) }

// ScalarValue is the value of a scalar or constant argument at d, as the
// Go value cuda.ArgBytes marshals as its declared C type; a value that
// does not fit the type is refused.
func ScalarValue(a Arg, d Dims) (any, error) {
	if a.Name == "" {
		return ParseConst(a.Type, a.Value)
	}
	s := ScalarNamed(a.Name)
	if s == nil {
		return nil, fmt.Errorf("unknown scalar %q", a.Name)
	}
	return Typed(a.Type, s.Value(d))
}

// Typed converts a value to the Go type cuda.Launch marshals as the
// declared C type, refusing one that does not fit.
func Typed(t ArgType, x float64) (any, error) {
	fits := func(lo, hi float64) error {
		if x < lo || x > hi || x != math.Trunc(x) {
			return fmt.Errorf("%s does not fit %s", strconv.FormatFloat(x, 'f', -1, 64), t)
		}
		return nil
	}
	switch t {
	case ArgF32:
		return float32(x), nil
	case ArgI32:
		return int32(x), fits(math.MinInt32, math.MaxInt32)
	case ArgU32:
		return uint32(x), fits(0, math.MaxUint32)
	case ArgU8:
		return uint8(x), fits(0, math.MaxUint8)
	case ArgI64:
		return int64(x), fits(-(1 << 53), 1<<53)
	case ArgU64:
		return uint64(x), fits(0, 1<<53)
	}
	return nil, fmt.Errorf("type %s is not a scalar type", t)
}
