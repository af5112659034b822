package spec

import (
	"sort"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
)

// Splits is the define every kernel takes: the number of KV splits per
// head (part of the ABI, so it applies to built-ins whether or not they
// declare it).
const Splits = abi.DefineSplits

// takes reports whether variant v receives the define: a user kernel takes
// every define, a built-in the ones it declares and SPLITS.
func (v *Variant) takes(name string) bool {
	if v.Builtin == nil || name == Splits {
		return true
	}
	_, ok := v.Builtin.Define(name)
	return ok
}

// DefineAxes returns the define axes swept for variant v, in the order the
// plan expands them: the global define axes the variant takes, in file
// order (a variant-local define of the same name replaces the values),
// then the variant-local defines that are not global axes, in file order,
// then, for a built-in, each declared define set nowhere, at its default.
// A dispatch variant's axes are those its arms sweep (see ArmDefines).
func (s *Spec) DefineAxes(v *Variant) []Axis {
	if len(v.Dispatch) > 0 {
		return s.dispatchAxes(v)
	}
	var out []Axis
	set := map[string]bool{}
	for _, ax := range s.Axes {
		if ax.Name == NKV || !v.takes(ax.Name) {
			continue
		}
		if local, ok := v.Defines[ax.Name]; ok {
			ax = Axis{Name: ax.Name, Values: local, Pos: ax.Pos}
		}
		out = append(out, ax)
		set[ax.Name] = true
	}
	for _, name := range v.DefineOrder {
		if !set[name] {
			out = append(out, Axis{Name: name, Values: v.Defines[name], Pos: v.Pos})
			set[name] = true
		}
	}
	if v.Builtin != nil {
		for _, d := range v.Builtin.Defines {
			if !set[d.Name] && d.Default != "" && !d.Unset {
				out = append(out, Axis{Name: d.Name, Values: []string{d.Default}, Pos: v.Pos})
				set[d.Name] = true
			}
		}
	}
	return out
}

// Combinations calls fn with each combination of the axes' values, the
// first axis varying slowest, values in axis order; it stops early when fn
// returns false. vals is reused between calls.
func Combinations(axes []Axis, fn func(vals []string) bool) {
	idx := make([]int, len(axes))
	vals := make([]string, len(axes))
	for _, ax := range axes {
		if len(ax.Values) == 0 {
			return
		}
	}
	for {
		for i, ax := range axes {
			vals[i] = ax.Values[idx[i]]
		}
		if !fn(vals) {
			return
		}
		i := len(axes) - 1
		for ; i >= 0; i-- {
			idx[i]++
			if idx[i] < len(axes[i].Values) {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return
		}
	}
}

// Defines returns the define map of one combination of axes, with the
// shape's HEAD_DIM and KV_F16 added.
func (sh *Shape) Defines(axes []Axis, vals []string) map[string]string {
	m := abi.ShapeDefines(sh.Shape)
	for i, ax := range axes {
		m[ax.Name] = vals[i]
	}
	return m
}

// KVBytes is the size of the shape's K and V buffers together.
func (sh *Shape) KVBytes() float64 {
	elem := float64(sh.KVType().Bytes)
	return 2 * float64(sh.Batch) * float64(sh.Capacity) * float64(sh.KVHeads) * float64(sh.HeadDim) * elem
}

// NKVs returns the context lengths of the nkv axis, ascending.
func (s *Spec) NKVs() []int {
	var out []int
	for _, ax := range s.Axes {
		if ax.Name != NKV {
			continue
		}
		for _, v := range ax.Values {
			if n, err := strconv.Atoi(v); err == nil {
				out = append(out, n)
			}
		}
	}
	sort.Ints(out)
	return out
}

// Variant returns the variant with the given name, or nil.
func (s *Spec) Variant(name string) *Variant {
	for i := range s.Variants {
		if s.Variants[i].Name == name {
			return &s.Variants[i]
		}
	}
	return nil
}
