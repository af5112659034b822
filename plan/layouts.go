package plan

import (
	"fmt"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
)

// A LayoutCheck is a by-value struct whose declared layout is to be
// verified against the engine's C++ type (spec.StructType): ktune check
// compiles a layout probe beside the kernel and compares every field.
type LayoutCheck struct {
	// Struct is the spec's name of the struct, Type the C++ type, Where
	// its place in the spec (file:line:col).
	Struct, Type, Where string
	// Size and Align are the declaration's sizeof and alignof.
	Size, Align int
	// Fields are the declared fields, nested ones by their member path
	// (page.m), each with its offset from the struct's start and its size.
	Fields []LayoutField
}

// A LayoutField is one declared field's place, and for a pointer what
// the argument passed there holds (Elem: abi.PointeeOf), compared with
// the member's pointee.
type LayoutField struct {
	Path         string
	Offset, Size int
	Arg          string
	Elem         abi.Pointee
}

// layoutChecks lists the declared layouts of a variant's typed structs.
func (b *builder) layoutChecks(v *spec.Variant) ([]LayoutCheck, error) {
	names := make([]string, 0, len(v.StructTypes))
	for n := range v.StructTypes {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []LayoutCheck
	for _, n := range names {
		st, t := v.Structs[n], v.StructTypes[n]
		if st == nil {
			continue
		}
		l, err := st.Layout()
		if err != nil {
			return nil, fmt.Errorf("%s:%d:%d: variant %s, struct %s: %w", b.s.Path, t.Pos.Line, t.Pos.Col, v.Name, n, err)
		}
		c := LayoutCheck{Struct: n, Type: t.Type, Where: fmt.Sprintf("%s:%d:%d", b.s.Path, t.Pos.Line, t.Pos.Col), Size: l.Size, Align: l.Align}
		elem := func(a abi.Arg) abi.Pointee { return abi.PointeeOf(a, pointIO(v, nil), v.Planned, 0) }
		if err := appendFields(&c.Fields, st, "", 0, v.StructTypes, elem); err != nil {
			return nil, fmt.Errorf("%s: variant %s, struct %s: %w", c.Where, v.Name, n, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// appendFields adds st's fields at base, and the fields of a nested
// struct that names its type too, by path: a nested struct without one
// (an engine's object of private members, such as a fast-division one)
// is checked as a whole, its offset and size.
func appendFields(out *[]LayoutField, st *abi.Struct, prefix string, base int, typed map[string]spec.StructType, elem func(abi.Arg) abi.Pointee) error {
	l, err := st.Layout()
	if err != nil {
		return err
	}
	for i, f := range st.Fields {
		path, off := prefix+f.Name, base+l.Offsets[i]
		count := max(f.Count, 1)
		var size int
		if f.Arg.Struct != nil {
			nl, err := f.Arg.Struct.Layout()
			if err != nil {
				return err
			}
			size = nl.Size
		} else {
			slots, err := abi.ParamSlots([]abi.Arg{f.Arg})
			if err != nil {
				return err
			}
			size = slots[0].Size
		}
		lf := LayoutField{Path: path, Offset: off, Size: size * count}
		if count == 1 {
			lf.Arg, lf.Elem = f.Arg.String(), elem(f.Arg)
		}
		*out = append(*out, lf)
		if _, ok := typed[structName(f.Arg.Struct)]; ok && count == 1 {
			if err := appendFields(out, f.Arg.Struct, path+".", off, typed, elem); err != nil {
				return err
			}
		}
	}
	return nil
}

// structName is a nested struct's declared name, "" for none.
func structName(st *abi.Struct) string {
	if st == nil {
		return ""
	}
	return st.Name
}

// LayoutValues is the number of values the probe records for a struct of
// n declared fields.
func LayoutValues(n int) int { return 2 + 3*n }

// pointeeTemplate gives the size of what a member's type points at: 0 for
// a type that is no pointer (or a const one, or a reference) and for
// void, whose elements have no size.
const pointeeTemplate = `template <class P> struct ktune_pointee { static const unsigned long long size = 0; };
template <class E> struct ktune_pointee<E*> { static const unsigned long long size = sizeof(E); };
template <> struct ktune_pointee<void*> { static const unsigned long long size = 0; };
template <> struct ktune_pointee<const void*> { static const unsigned long long size = 0; };
template <> struct ktune_pointee<volatile void*> { static const unsigned long long size = 0; };
template <> struct ktune_pointee<const volatile void*> { static const unsigned long long size = 0; };
`

// LayoutSymbol names the layout probe's array of the i-th struct.
func LayoutSymbol(i int) string { return fmt.Sprintf("ktune_layout_%d", i) }

// LayoutProbe is the C++ that, after the kernel's source, records the
// layout of each checked struct's type: one __device__ array per struct
// holding sizeof and alignof of the type, then for every declared field
// its offset, its size and the size of what it points at (0 for a member
// that is no pointer, or a void one); its initializer is in the CUBIN,
// read without a GPU (cubin.SymbolData).
func LayoutProbe(checks []LayoutCheck) string {
	var b strings.Builder
	b.WriteString("\n// ktune layout probe\n" + pointeeTemplate)
	for i, c := range checks {
		fmt.Fprintf(&b, "extern \"C\" __device__ unsigned long long %s[] = {sizeof(%s), alignof(%s)", LayoutSymbol(i), c.Type, c.Type)
		for _, f := range c.Fields {
			// NVRTC has neither offsetof nor __builtin_offsetof; a member's
			// address from a null pointer is its offset, and the front end
			// folds it into the constant initializer.
			fmt.Fprintf(&b, ",\n    (unsigned long long)&(((%s*)0)->%s), sizeof(((%s*)0)->%s), ktune_pointee<decltype(((%s*)0)->%s)>::size",
				c.Type, f.Path, c.Type, f.Path, c.Type, f.Path)
		}
		b.WriteString("};\n")
	}
	return b.String()
}
