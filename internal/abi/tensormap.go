package abi

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/expr"
)

// ArgTensorMap is the type of a CUtensorMap argument (Arg.TensorMap): the
// 128-byte, 64-byte-aligned descriptor a kernel's TMA copies read
// (cp.async.bulk.tensor), passed by value as a __grid_constant__
// parameter. The host encodes it over a buffer of the table with the
// driver's cuTensorMapEncodeTiled (cuda.Driver.EncodeTensorMapTiled).
const ArgTensorMap ArgType = "tensor_map"

// TensorMapBytes and TensorMapAlign are sizeof and alignof of CUtensorMap
// (cuda.h: CU_TENSOR_MAP_NUM_QWORDS 16 qwords, alignas(64)).
const (
	TensorMapBytes = 128
	TensorMapAlign = 64
)

// A TensorMapDtype is the element type a tensor map declares. Its value is
// the driver's CUtensorMapDataType (cuda.h), which the encoder passes as
// it is; KVDtype stands for the shape's K/V type and is resolved at each
// point (Resolve).
type TensorMapDtype uint32

// The data types of CUtensorMapDataType, by their driver values.
const (
	TMU8 TensorMapDtype = iota
	TMU16
	TMU32
	TMI32
	TMU64
	TMI64
	TMF16
	TMF32
	TMF64
	TMBF16
	TMF32FTZ
	TMTF32
	TMTF32FTZ
	// TMKV is the shape's kv_dtype (not a driver value).
	TMKV TensorMapDtype = 1 << 16
)

// tmDtypes names the data types and their element sizes, in driver order.
var tmDtypes = []struct {
	name  string
	bytes int
}{
	{"u8", 1}, {"u16", 2}, {"u32", 4}, {"i32", 4}, {"u64", 8}, {"i64", 8},
	{"f16", 2}, {"f32", 4}, {"f64", 8}, {"bf16", 2}, {"f32_ftz", 4}, {"tf32", 4}, {"tf32_ftz", 4},
}

func (t TensorMapDtype) String() string {
	if t == TMKV {
		return "kv"
	}
	if int(t) < len(tmDtypes) {
		return tmDtypes[t].name
	}
	return fmt.Sprintf("dtype(%d)", uint32(t))
}

// Bytes is the size of one element (0 for TMKV, which has none until
// resolved).
func (t TensorMapDtype) Bytes() int {
	if int(t) < len(tmDtypes) {
		return tmDtypes[t].bytes
	}
	return 0
}

func (t TensorMapDtype) float() bool {
	switch t {
	case TMF16, TMF32, TMF64, TMBF16, TMF32FTZ, TMTF32, TMTF32FTZ:
		return true
	}
	return false
}

// kvTensorDtype is the tensor-map type of a K/V element type: fp8 is moved
// as bytes (the driver has no fp8 type).
func kvTensorDtype(d Dtype) TensorMapDtype {
	switch d {
	case F16:
		return TMF16
	case BF16:
		return TMBF16
	case F32:
		return TMF32
	}
	return TMU8
}

// The modes of a tensor map, each with its driver enum's values
// (CUtensorMapInterleave, CUtensorMapSwizzle, CUtensorMapL2promotion,
// CUtensorMapFloatOOBfill).
type (
	TensorMapInterleave uint32
	TensorMapSwizzle    uint32
	TensorMapL2         uint32
	TensorMapOOBFill    uint32
)

var (
	tmInterleaves = []string{"none", "16b", "32b"}
	tmSwizzles    = []string{"none", "32b", "64b", "128b"}
	tmL2s         = []string{"none", "64b", "128b", "256b"}
	tmOOBs        = []string{"none", "nan"} // NAN_REQUEST_ZERO_FMA
)

func (m TensorMapInterleave) String() string { return enumName(tmInterleaves, uint32(m)) }
func (m TensorMapSwizzle) String() string    { return enumName(tmSwizzles, uint32(m)) }
func (m TensorMapL2) String() string         { return enumName(tmL2s, uint32(m)) }
func (m TensorMapOOBFill) String() string    { return enumName(tmOOBs, uint32(m)) }

// swizzleBytes is the span a swizzle mode permutes within: the most bytes
// the box's inner dimension may hold.
func (m TensorMapSwizzle) swizzleBytes() int { return [...]int{0, 32, 64, 128}[m] }

func enumName(names []string, v uint32) string {
	if int(v) < len(names) {
		return names[v]
	}
	return fmt.Sprintf("mode(%d)", v)
}

func parseEnum(names []string, what, s string) (uint32, error) {
	for i, n := range names {
		if n == s {
			return uint32(i), nil
		}
	}
	return 0, fmt.Errorf("%s: want %s, got %q", what, joinOr(names), s)
}

// ParseMode parses one of a tensor map's modes by its key (interleave,
// swizzle, l2_promotion, oob_fill) into m.
func (m *TensorMap) ParseMode(key, s string) error {
	var err error
	var v uint32
	switch key {
	case "interleave":
		v, err = parseEnum(tmInterleaves, key, s)
		m.Interleave = TensorMapInterleave(v)
	case "swizzle":
		v, err = parseEnum(tmSwizzles, key, s)
		m.Swizzle = TensorMapSwizzle(v)
	case "l2_promotion":
		v, err = parseEnum(tmL2s, key, s)
		m.L2Promotion = TensorMapL2(v)
	case "oob_fill":
		v, err = parseEnum(tmOOBs, key, s)
		m.OOBFill = TensorMapOOBFill(v)
	default:
		err = fmt.Errorf("%s is not a mode of a tensor map", key)
	}
	return err
}

// ParseTensorMapDtype parses a tensor map's dtype: a driver type's name,
// or kv for the shape's K/V type.
func ParseTensorMapDtype(s string) (TensorMapDtype, error) {
	if s == "kv" {
		return TMKV, nil
	}
	names := []string{"kv"}
	for i, d := range tmDtypes {
		if d.name == s {
			return TensorMapDtype(i), nil
		}
		names = append(names, d.name)
	}
	return 0, fmt.Errorf("dtype: want one of %s, got %q", strings.Join(names, ", "), s)
}

// A TensorMap is a CUtensorMap argument as a spec declares it: the
// arguments of cuTensorMapEncodeTiled over one buffer. Dims are the
// global dimensions innermost first, Strides the byte strides of every
// dimension but the innermost (empty: packed), Box the box each copy moves
// and ElementStrides its steps (empty: all 1), each an integer expression
// over the geometry symbols, the integer scalars and the defines.
type TensorMap struct {
	Buffer                             Arg // a buffer of the table or scratch:NAME
	Dtype                              TensorMapDtype
	Dims, Strides, Box, ElementStrides []string
	Interleave                         TensorMapInterleave
	Swizzle                            TensorMapSwizzle
	L2Promotion                        TensorMapL2
	OOBFill                            TensorMapOOBFill
	// Line and Col are where the spec declares it, for the plan's errors
	// (file:line:col); not part of what the kernel sees.
	Line, Col int
}

// MaxTensorRank, MaxBoxDim and MaxElementStride are the driver's limits
// (cuTensorMapEncodeTiled): rank 1 to 5, a box dimension 1 to 256, an
// element stride 1 to 8.
const (
	MaxTensorRank    = 5
	MaxBoxDim        = 256
	MaxElementStride = 8
)

// String is the tensor map's canonical text: every argument of the
// encoding, for the point's hash.
func (m *TensorMap) String() string {
	return fmt.Sprintf("tensor_map(%s %s dims[%s] strides[%s] box[%s] element_strides[%s] interleave %s swizzle %s l2 %s oob %s)",
		m.Buffer, m.Dtype, strings.Join(m.Dims, ", "), strings.Join(m.Strides, ", "), strings.Join(m.Box, ", "),
		strings.Join(m.ElementStrides, ", "), m.Interleave, m.Swizzle, m.L2Promotion, m.OOBFill)
}

// CheckStatic checks what a declaration says before any value is known:
// the rank, the number of strides and element strides, and the modes
// together. Each entry's value is checked by CheckEntry.
func (m *TensorMap) CheckStatic() error {
	r := len(m.Dims)
	switch {
	case r < 1 || r > MaxTensorRank:
		return fmt.Errorf("rank %d: a tensor map has 1 to %d dimensions", r, MaxTensorRank)
	case m.Interleave != 0 && r < 3:
		return fmt.Errorf("rank %d: an interleaved tensor map has at least 3 dimensions", r)
	case len(m.Box) != r:
		return fmt.Errorf("box has %d entries, dims %d: one per dimension", len(m.Box), r)
	case len(m.Strides) != 0 && len(m.Strides) != r-1:
		return fmt.Errorf("strides has %d entries: the byte strides of the %d dimensions after the innermost (or none: packed)", len(m.Strides), r-1)
	case len(m.ElementStrides) != 0 && len(m.ElementStrides) != r:
		return fmt.Errorf("element_strides has %d entries, dims %d: one per dimension (or none: all 1)", len(m.ElementStrides), r)
	case m.Interleave == 2 && m.Swizzle != 1:
		return fmt.Errorf("interleave 32b needs swizzle 32b")
	}
	return nil
}

// A TensorMapEntry names one list of a tensor map.
type TensorMapEntry string

// The lists of a tensor map whose entries CheckEntry checks.
const (
	EntryDims           TensorMapEntry = "dims"
	EntryStrides        TensorMapEntry = "strides"
	EntryBox            TensorMapEntry = "box"
	EntryElementStrides TensorMapEntry = "element_strides"
)

// CheckEntry checks one evaluated entry of a list at index i against the
// driver's rules that one value breaks alone.
func (m *TensorMap) CheckEntry(list TensorMapEntry, i int, n int64) error {
	switch list {
	case EntryDims:
		if n < 1 || n > 1<<32 {
			return fmt.Errorf("dims[%d] = %d: a global dimension is 1 to 2^32", i, n)
		}
	case EntryStrides:
		align := int64(16)
		if m.Interleave == 2 {
			align = 32
		}
		if n <= 0 || n%align != 0 || n >= 1<<40 {
			return fmt.Errorf("strides[%d] = %d: a global stride is a positive multiple of %d bytes below 2^40", i, n, align)
		}
	case EntryBox:
		if n < 1 || n > MaxBoxDim {
			return fmt.Errorf("box[%d] = %d: a box dimension is 1 to %d", i, n, MaxBoxDim)
		}
	case EntryElementStrides:
		if n < 1 || n > MaxElementStride {
			return fmt.Errorf("element_strides[%d] = %d: an element stride is 1 to %d", i, n, MaxElementStride)
		}
	}
	return nil
}

// TensorMapValues are a tensor map's arguments evaluated at a point: what
// cuTensorMapEncodeTiled takes, the global address apart.
type TensorMapValues struct {
	Dtype          TensorMapDtype // resolved: never TMKV
	Dims           []uint64
	Strides        []uint64 // rank − 1 byte strides
	Box            []uint32
	ElementStrides []uint32
	Interleave     TensorMapInterleave
	Swizzle        TensorMapSwizzle
	L2Promotion    TensorMapL2
	OOBFill        TensorMapOOBFill
}

// Eval evaluates the tensor map at a point's env (Dims.Env) and K/V type,
// and checks the values against the driver's rules, so that a bad box is
// the plan's error rather than the driver's CUDA_ERROR_INVALID_VALUE.
func (m *TensorMap) Eval(env expr.Env, kv Dtype) (TensorMapValues, error) {
	v := TensorMapValues{Dtype: m.Dtype, Interleave: m.Interleave, Swizzle: m.Swizzle, L2Promotion: m.L2Promotion, OOBFill: m.OOBFill}
	if v.Dtype == TMKV {
		v.Dtype = kvTensorDtype(kv)
	}
	if err := m.CheckStatic(); err != nil {
		return v, err
	}
	eval := func(list TensorMapEntry, srcs []string) ([]int64, error) {
		out := make([]int64, len(srcs))
		for i, src := range srcs {
			x, err := expr.Parse(src)
			if err != nil {
				return nil, fmt.Errorf("%s[%d] %q: %w", list, i, src, err)
			}
			if out[i], err = x.Eval(env); err != nil {
				return nil, fmt.Errorf("%s[%d] %q: %w", list, i, src, err)
			}
			if err := m.CheckEntry(list, i, out[i]); err != nil {
				return nil, fmt.Errorf("%w (%q)", err, src)
			}
		}
		return out, nil
	}
	dims, err := eval(EntryDims, m.Dims)
	if err != nil {
		return v, err
	}
	box, err := eval(EntryBox, m.Box)
	if err != nil {
		return v, err
	}
	strides, err := eval(EntryStrides, m.Strides)
	if err != nil {
		return v, err
	}
	es, err := eval(EntryElementStrides, m.ElementStrides)
	if err != nil {
		return v, err
	}
	elt := int64(v.Dtype.Bytes())
	if len(m.Strides) == 0 { // packed: each dimension right after the one inside it
		s := elt
		for _, d := range dims[:len(dims)-1] {
			s *= d
			if err := m.CheckEntry(EntryStrides, len(strides), s); err != nil {
				return v, fmt.Errorf("packed %w", err)
			}
			strides = append(strides, s)
		}
	}
	if len(es) == 0 {
		for range dims {
			es = append(es, 1)
		}
	}
	for i := range dims {
		v.Dims = append(v.Dims, uint64(dims[i]))
		v.Box = append(v.Box, uint32(box[i]))
		v.ElementStrides = append(v.ElementStrides, uint32(es[i]))
		if i > 0 {
			v.Strides = append(v.Strides, uint64(strides[i-1]))
		}
	}
	return v, v.check()
}

// check applies the rules that tie values together.
func (v TensorMapValues) check() error {
	inner := int(v.Box[0]) * v.Dtype.Bytes()
	if v.Interleave == 0 {
		if inner%16 != 0 {
			return fmt.Errorf("box[0] = %d elements of %d bytes: without interleave the box's inner dimension is a multiple of 16 bytes", v.Box[0], v.Dtype.Bytes())
		}
		if s := v.Swizzle.swizzleBytes(); s > 0 && inner > s {
			return fmt.Errorf("box[0] = %d bytes: swizzle %s takes an inner dimension of at most %d bytes", inner, v.Swizzle, s)
		}
	}
	if v.OOBFill != 0 && !v.Dtype.float() {
		return fmt.Errorf("oob_fill nan is for floating-point types, not %s", v.Dtype)
	}
	return nil
}

// AddrAlign is the alignment the global address needs (16 bytes, 32 for
// a 32-byte interleave).
func (v TensorMapValues) AddrAlign() uint64 {
	if v.Interleave == 2 {
		return 32
	}
	return 16
}
