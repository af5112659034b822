// Package catalog is what ktune knows of a kernel it ships with: where its
// source lives, which defines it takes and their bounds, its default
// launch geometry, the shapes it supports and its numerics class. The
// spec validates against a Set of these and the plan builds points from
// them; package variants holds ktune's own kernels as values of these
// types, so that neither the spec nor the plan depends on that list.
package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
)

// Class is a kernel's numerics class.
type Class string

const (
	// Bitwise kernels only move loads around: same rows, same order, same
	// per-row operations as their twin, so their output is byte-identical.
	Bitwise Class = "bitwise"
	// Tolerance kernels reorder the summation and are gated against the
	// float64 oracle only.
	Tolerance Class = "tolerance"
)

// A DefineSpec is a compile-time define a kernel accepts.
type DefineSpec struct {
	Name    string
	Default string
	Min     int    // smallest valid integer value (0: no check)
	Max     int    // largest valid integer value (0: no check)
	Doc     string // one line
	// Unset: a point that does not set the define does not pass it (the
	// kernel's #ifndef gives Default's meaning), so that adding a form
	// to a kernel leaves the hashes of its other points as they were.
	Unset bool
}

// A Kernel is one built-in kernel.
type Kernel struct {
	Name    string // as written in specs, e.g. "d2"
	File    string // source file in package kernels, e.g. "d2.cu"
	Doc     string // one line: mapping and what it changes
	Partial string // partial entry point (ABI: attn_partial)
	Combine string // combine entry point (ABI: attn_combine)
	Defines []DefineSpec
	// Default launch geometry of the partial kernel, as expressions over
	// shape symbols (heads, kv_heads, head_dim, batch, group) and defines.
	Grid   [3]string
	Block  [3]string
	Shared string // dynamic shared memory bytes expression, "0" if none
	// Class and Twin are the kernel's numerics class and, for Bitwise, the
	// built-in it is byte-identical to.
	Class Class
	Twin  string
	// Check returns a non-nil error (the skip reason) when the kernel cannot
	// run a shape with the given defines. Nil Check accepts everything.
	Check func(s abi.Shape, defines map[string]string) error
	// Fused kernels follow the fused ABI (kernels/ABI.md, "Fused kernels"):
	// attn_partial takes two more arguments, out and a zeroed scratch of
	// batch × kv_heads counters, merges the splits itself and writes out;
	// no combine is launched and Combine is empty.
	Fused bool
	// Takes lists the attention options the kernel computes; every other
	// option a shape sets (abi.Attention.Options) is refused, so an option
	// added to abi.Attention is refused by every built-in until its
	// kernel says it computes it. Empty: plain decode attention only. The
	// options reach the kernel as the shape's defines (abi.ShapeDefines)
	// and arguments (kernels/ABI.md).
	Takes []abi.Option
	// Attention, when set, returns the reason the kernel cannot compute
	// options it takes at these values (a q_len above its bound), nil
	// when it can.
	Attention func(abi.Attention) error
	// Invariance, when set, classes the kernel's configurations by
	// output bits: "" for a configuration whose bits may depend on the
	// batch or the position in it, else a class, equal for
	// configurations whose bits are equal to one another's at every
	// length (the arms of an invariant dispatch table). A claim by
	// construction, which the invariance gate checks on the device. Nil:
	// no configuration is claimed invariant.
	Invariance func(defines map[string]string) string
}

// A Set is a collection of kernels looked up by name. The spec and the
// planner take a Set rather than reading the registry themselves, so that a
// test can plan against kernels it defines without touching the built-ins.
type Set map[string]*Kernel

// NewSet returns a Set of the given kernels; a duplicate name is an error.
func NewSet(ks ...*Kernel) (Set, error) {
	s := make(Set, len(ks))
	for _, k := range ks {
		if _, dup := s[k.Name]; dup {
			return nil, fmt.Errorf("catalog: duplicate kernel %q", k.Name)
		}
		s[k.Name] = k
	}
	return s, nil
}

// Lookup returns the kernel with the given name.
func (s Set) Lookup(name string) (*Kernel, bool) {
	k, ok := s[name]
	return k, ok
}

// Names returns the names of the set, sorted.
func (s Set) Names() []string {
	out := make([]string, 0, len(s))
	for n := range s {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Define returns the kernel's declaration of the named define.
func (k *Kernel) Define(name string) (DefineSpec, bool) {
	for _, d := range k.Defines {
		if d.Name == name {
			return d, true
		}
	}
	return DefineSpec{}, false
}

// CheckValue reports whether value is acceptable for the declared define d:
// an integer within [Min, Max] when either bound is set. Defines without
// bounds take any string.
func (d DefineSpec) CheckValue(value string) error {
	if d.Min == 0 && d.Max == 0 {
		return nil
	}
	v, err := strconv.Atoi(value)
	if err != nil {
		return fmt.Errorf("%s=%s is not an integer", d.Name, value)
	}
	if d.Min != 0 && v < d.Min {
		return fmt.Errorf("%s=%d is below the minimum %d", d.Name, v, d.Min)
	}
	if d.Max != 0 && v > d.Max {
		return fmt.Errorf("%s=%d is above the maximum %d", d.Name, v, d.Max)
	}
	return nil
}

// Accepts returns nil when the kernel can run the shape with the given
// defines, else the reason it cannot: a declared define out of its bounds,
// or the kernel's own Check. The planner records the reason as a skip.
func (k *Kernel) Accepts(s abi.Shape, defines map[string]string) error {
	if opts := s.Attention.Options(); len(opts) > 0 {
		// A built-in computes plain decode attention unless it says which
		// options it computes; the others are a user kernel's
		// (experiments/options).
		if len(k.Takes) == 0 {
			return fmt.Errorf("%s: computes plain attention, not the shape's options %v", k.Name, opts)
		}
		for _, o := range opts {
			if !slices.Contains(k.Takes, o) {
				return fmt.Errorf("%s: computes no %s (it takes %v)", k.Name, o, k.Takes)
			}
		}
		if k.Attention != nil {
			if err := k.Attention(s.Attention); err != nil {
				return fmt.Errorf("%s: %w", k.Name, err)
			}
		}
	}
	for _, d := range k.Defines {
		if v, ok := defines[d.Name]; ok {
			if err := d.CheckValue(v); err != nil {
				return fmt.Errorf("%s: %w", k.Name, err)
			}
		}
	}
	if k.Check != nil {
		if err := k.Check(s, defines); err != nil {
			return fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	return nil
}
