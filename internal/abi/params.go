package abi

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/ktune/ktune/internal/expr"
)

// ArgStruct is the type of a by-value struct argument (Arg.Struct).
const ArgStruct ArgType = "struct"

// A vector type is one of CUDA's small vector types, passed by value: its
// element type, its length and its alignment (vector_types.h: int2 and
// uint2 are 8-aligned, int4 and uint4 16-aligned, int3 and uint3 only as
// aligned as their elements).
type vector struct {
	elem  ArgType
	n     int
	align int
}

var vectors = map[ArgType]vector{
	"int2": {ArgI32, 2, 8}, "uint2": {ArgU32, 2, 8}, "float2": {ArgF32, 2, 8},
	"int3": {ArgI32, 3, 4}, "uint3": {ArgU32, 3, 4}, "float3": {ArgF32, 3, 4},
	"int4": {ArgI32, 4, 16}, "uint4": {ArgU32, 4, 16}, "float4": {ArgF32, 4, 16},
}

// VectorTypes lists the vector types, for messages.
func VectorTypes() []string {
	return []string{"int2", "uint2", "float2", "int3", "uint3", "float3", "int4", "uint4", "float4"}
}

// ParseVector parses a vector argument: its type and one component per
// element, each a scalar, a literal or an integer expression of the
// element type (uint3 of SPLITS, heads, batch).
func ParseVector(typ string, comps []string) (Arg, error) {
	v, ok := vectors[ArgType(typ)]
	if !ok {
		return Arg{}, fmt.Errorf("%q is not a vector type (want one of %s)", typ, strings.Join(VectorTypes(), ", "))
	}
	if len(comps) != v.n {
		return Arg{}, fmt.Errorf("%s takes %d components, got %d", typ, v.n, len(comps))
	}
	a := Arg{Type: ArgType(typ), Elems: make([]Arg, v.n)}
	for i, c := range comps {
		e, err := ParseArg(c)
		if err != nil || e.IsBuffer() {
			e, err = ParseArg(string(v.elem) + ":" + c) // a literal or an expression
		}
		if err != nil {
			return Arg{}, fmt.Errorf("%s component %d: %w", typ, i, err)
		}
		if e.Name != "" {
			if (e.Type == ArgF32) != (v.elem == ArgF32) {
				return Arg{}, fmt.Errorf("%s component %d: %s is %s", typ, i, e.Name, kindOf(e.Type))
			}
			e.Type = v.elem
		}
		a.Elems[i] = e
	}
	return a, nil
}

// A Struct is a by-value struct parameter as the kernel declares it: its
// fields in order, each from the vocabulary, at its natural alignment or
// an explicit offset. Size, when nonzero, is the struct's sizeof, which
// the layout must not exceed (the bytes past the last field are zero).
type Struct struct {
	Name   string
	Fields []Field
	Size   int
	Align  int // 0: the largest alignment of its fields
}

// A Field is one member of a struct.
type Field struct {
	Name string
	Arg  Arg
	// Count > 1 makes the field a fixed-size array of Count copies of
	// Arg's type, every element holding Arg's value (a nested struct or
	// a vector too).
	Count int
	// Offset is the field's byte offset; -1: the next one at the field's
	// natural alignment.
	Offset int
}

// String is the struct's canonical text: every field with its argument,
// count and offset, and the size.
func (s *Struct) String() string {
	var b strings.Builder
	b.WriteString("struct " + s.Name + "{")
	for i, f := range s.Fields {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s=%s", f.Name, f.Arg)
		if f.Count > 1 {
			fmt.Fprintf(&b, "[%d]", f.Count)
		}
		if f.Offset >= 0 {
			fmt.Fprintf(&b, "@%d", f.Offset)
		}
	}
	fmt.Fprintf(&b, "} size %d align %d", s.Size, s.Align)
	return b.String()
}

// sizeAlign is the C size and alignment of one argument.
func sizeAlign(a Arg) (size, align int, err error) {
	switch {
	case a.Struct != nil:
		l, err := a.Struct.Layout()
		if err != nil {
			return 0, 0, err
		}
		return l.Size, l.Align, nil
	case a.TensorMap != nil:
		return TensorMapBytes, TensorMapAlign, nil
	case a.Elems != nil:
		v := vectors[a.Type]
		return 4 * v.n, v.align, nil
	}
	switch a.Type {
	case ArgPtr, ArgI64, ArgU64:
		return 8, 8, nil
	case ArgI32, ArgU32, ArgF32:
		return 4, 4, nil
	case ArgU8:
		return 1, 1, nil
	}
	return 0, 0, fmt.Errorf("argument %s has no C type", a)
}

// A StructLayout is a struct's computed layout: each field's offset, the
// size (rounded up to the alignment, as sizeof is) and the alignment.
type StructLayout struct {
	Offsets     []int
	Size, Align int
}

// Layout computes the struct's C layout and checks it: explicit offsets
// aligned and not overlapping the field before, the declared size not
// exceeded.
func (s *Struct) Layout() (StructLayout, error) {
	l := StructLayout{Align: 1}
	end := 0
	seen := map[string]bool{}
	for _, f := range s.Fields {
		if seen[f.Name] {
			// C refuses a member declared twice; and the record of the
			// point, its hash included, could not say which is which.
			return l, fmt.Errorf("struct %s: two fields named %s", s.Name, f.Name)
		}
		seen[f.Name] = true
		size, align, err := sizeAlign(f.Arg)
		if err != nil {
			return l, fmt.Errorf("struct %s field %s: %w", s.Name, f.Name, err)
		}
		n := max(1, f.Count)
		if n > MaxParamBytes/max(size, 1) || f.Offset > MaxParamBytes {
			return l, fmt.Errorf("struct %s field %s: %d × %d bytes at offset %d: no launch passes more than %d bytes of parameters", s.Name, f.Name, n, size, max(f.Offset, end), MaxParamBytes)
		}
		off := roundUp(end, align)
		if f.Offset >= 0 {
			if f.Offset%align != 0 {
				return l, fmt.Errorf("struct %s field %s: offset %d is not a multiple of its alignment %d", s.Name, f.Name, f.Offset, align)
			}
			if f.Offset < end {
				return l, fmt.Errorf("struct %s field %s: offset %d overlaps the field before, which ends at %d", s.Name, f.Name, f.Offset, end)
			}
			off = f.Offset
		}
		l.Offsets = append(l.Offsets, off)
		end = off + n*size
		l.Align = max(l.Align, align)
	}
	if s.Align > 0 {
		if s.Align < l.Align || s.Align&(s.Align-1) != 0 {
			return l, fmt.Errorf("struct %s: align %d is not a power of two of at least its fields' %d", s.Name, s.Align, l.Align)
		}
		l.Align = s.Align
	}
	l.Size = roundUp(end, l.Align)
	if s.Size > 0 {
		if s.Size < end {
			return l, fmt.Errorf("struct %s: its fields end at byte %d, past its declared size %d", s.Name, end, s.Size)
		}
		if s.Size%l.Align != 0 {
			return l, fmt.Errorf("struct %s: size %d is not a multiple of its alignment %d", s.Name, s.Size, l.Align)
		}
		l.Size = s.Size
	}
	if l.Size > MaxParamBytes {
		return l, fmt.Errorf("struct %s: %d bytes: no launch passes more than %d bytes of parameters", s.Name, l.Size, MaxParamBytes)
	}
	return l, nil
}

// MaxParamBytes is the most bytes of parameters one launch may pass on any
// architecture: 32764, since CUDA 12.1 (ParamLimit).
const MaxParamBytes = 32764

// ParamLimit is the most bytes of parameters one launch may pass on arch
// (sm_90, sm_90a, sm_100f): 4 KiB, the limit of every CUDA release, and
// MaxParamBytes on Hopper and later, whose engines build with CUDA 12.1
// or later (which raised it on Volta and later too; a spec for an older
// GPU that needs more is refused rather than left to a toolkit that may
// not take it). A kernel's by-value struct counts whole.
func ParamLimit(arch string) int {
	var major int
	if _, err := fmt.Sscanf(strings.TrimPrefix(arch, "sm_"), "%d", &major); err == nil && major >= 90 {
		return MaxParamBytes
	}
	return 4096
}

func roundUp(n, a int) int { return (n + a - 1) / a * a }

// Leaves returns the leaf arguments of a: a itself, or every field of a
// struct and every component of a vector, depth first; for a tensor map,
// the buffer it maps.
func (a Arg) Leaves() []Arg {
	switch {
	case a.TensorMap != nil:
		return []Arg{a.TensorMap.Buffer}
	case a.Struct != nil:
		var out []Arg
		for _, f := range a.Struct.Fields {
			out = append(out, f.Arg.Leaves()...)
		}
		return out
	case a.Elems != nil:
		return a.Elems
	}
	return []Arg{a}
}

// A Leaf gives the value of one leaf argument (a buffer, a scalar, a
// constant, an expression or null) as the Go value of its C type: uint64
// for a pointer, int32, uint32, int64, uint64 or float32; and of a tensor
// map, its encoded TensorMapBytes as a []byte.
type Leaf func(Arg) (any, error)

// Encode returns the bytes of an argument at its C layout, little-endian:
// what the kernel reads for it.
func Encode(a Arg, leaf Leaf) ([]byte, error) {
	size, _, err := sizeAlign(a)
	if err != nil {
		return nil, err
	}
	out := make([]byte, size)
	return out, encodeAt(out, a, leaf)
}

func encodeAt(out []byte, a Arg, leaf Leaf) error {
	switch {
	case a.Struct != nil:
		l, err := a.Struct.Layout()
		if err != nil {
			return err
		}
		for i, f := range a.Struct.Fields {
			size, _, _ := sizeAlign(f.Arg)
			for k := range max(1, f.Count) {
				off := l.Offsets[i] + k*size
				if err := encodeAt(out[off:off+size], f.Arg, leaf); err != nil {
					return fmt.Errorf("field %s: %w", f.Name, err)
				}
			}
		}
		return nil
	case a.Elems != nil:
		for i, e := range a.Elems {
			if err := encodeAt(out[4*i:4*i+4], e, leaf); err != nil {
				return fmt.Errorf("component %d: %w", i, err)
			}
		}
		return nil
	}
	v, err := leaf(a)
	if err != nil {
		return err
	}
	return putValue(out, v)
}

// putValue stores a leaf's value at the size of its C type.
func putValue(out []byte, v any) error {
	switch x := v.(type) {
	case uint64:
		binary.LittleEndian.PutUint64(out, x)
	case int64:
		binary.LittleEndian.PutUint64(out, uint64(x))
	case int32:
		binary.LittleEndian.PutUint32(out, uint32(x))
	case uint32:
		binary.LittleEndian.PutUint32(out, x)
	case uint8:
		out[0] = x
	case float32:
		binary.LittleEndian.PutUint32(out, math.Float32bits(x))
	case []byte:
		if len(x) != len(out) {
			return fmt.Errorf("a by-value leaf of %d bytes for a field of %d", len(x), len(out))
		}
		copy(out, x)
	default:
		return fmt.Errorf("a leaf value of Go type %T", v)
	}
	return nil
}

// ExprValue is the value of a constant or integer-expression argument in
// env, at its declared type.
func ExprValue(a Arg, env expr.Env) (any, error) {
	if !a.IsExpr() {
		return ParseConst(a.Type, a.Value)
	}
	x, err := expr.Parse(a.Value)
	if err != nil {
		return nil, err
	}
	n, err := x.Eval(env)
	if err != nil {
		return nil, err // the caller names the argument
	}
	return Typed(a.Type, float64(n))
}

// SymSMs is the symbol of the device's SM count (Dims.SMs).
const SymSMs = "sms"

// Env is what an argument's integer expression reads at d: the geometry
// symbols, the integer scalars of the table (strides included, in
// elements, and their byte forms), the defines that are integers and,
// when the point was planned for one, the device's SM count (sms).
func (d Dims) Env(defines Defines) expr.Env {
	env := expr.Env{}
	if d.SMs > 0 {
		env[SymSMs] = int64(d.SMs)
	}
	for _, s := range Scalars {
		if s.Type != ArgF32 {
			env[s.Name] = int64(s.Value(d))
		}
	}
	for _, df := range defines {
		var n int64
		if _, err := fmt.Sscan(df.Value, &n); err == nil && fmt.Sprint(n) == df.Value {
			env[df.Name] = n
		}
	}
	return env
}

// A ParamSlot is one kernel parameter's place in the parameter buffer, as
// the driver reports it (cuFuncGetParamInfo) or a declaration lays it out.
type ParamSlot struct{ Offset, Size int }

// ParamBase is where sm_90's kernel parameters start in constant bank 0,
// 0x210: the compiler aligns each parameter's address there, not its
// offset from the first. It shows only above 16-byte alignment. Measured:
// an H200's driver (cuFuncGetParamInfo) and the CUBIN's KPARAM_INFO put a
// CUtensorMap (128 bytes, alignas(64)) after a parameter list ending at
// offset 80 at offset 112, 0x210 + 112 being a multiple of 64; C's rule
// from offset 0 says 128 (experiments/results/h200/engines/COMMAND.txt).
const ParamBase = 0x210

// ParamOffset is the offset of a parameter of alignment align after
// parameters ending at end.
func ParamOffset(end, align int) int { return roundUp(ParamBase+end, align) - ParamBase }

// ParamSlots lays out a launch's declared arguments as the compiler lays
// out the kernel's parameters: each at the next offset of its alignment
// (ParamOffset).
func ParamSlots(args []Arg) ([]ParamSlot, error) {
	out := make([]ParamSlot, len(args))
	end := 0
	for i, a := range args {
		size, align, err := sizeAlign(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d (%s): %w", i, a, err)
		}
		off := ParamOffset(end, align)
		out[i] = ParamSlot{off, size}
		end = off + size
	}
	return out, nil
}

// CheckParams compares a launch's declared arguments with the kernel's own
// parameters: the same count, and each at the same offset with the same
// size. A mismatch names the first parameter that differs, since the
// driver would read every argument after it from the wrong bytes.
func CheckParams(entry string, args []Arg, kernel []ParamSlot) error {
	decl, err := ParamSlots(args)
	if err != nil {
		return fmt.Errorf("%s: %w", entry, err)
	}
	for i := range min(len(decl), len(kernel)) {
		if decl[i] != kernel[i] {
			return fmt.Errorf("%s: parameter %d is %d bytes at offset %d in the kernel, but the launch declares %s, %d bytes at offset %d",
				entry, i, kernel[i].Size, kernel[i].Offset, args[i], decl[i].Size, decl[i].Offset)
		}
	}
	if len(decl) != len(kernel) {
		more := "missing: the kernel's parameters from " + fmt.Sprint(len(decl)) + " on are not passed"
		if len(decl) > len(kernel) {
			more = "argument " + fmt.Sprint(len(kernel)) + " (" + args[len(kernel)].String() + ") and after have no parameter"
		}
		return fmt.Errorf("%s: the kernel takes %d parameters, the launch declares %d (%s)", entry, len(kernel), len(decl), more)
	}
	return nil
}
