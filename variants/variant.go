// Package variants knows ktune's built-in kernels: where each one's source
// lives, which defines it takes, its default launch geometry, the shapes it
// supports and its numerics class. A spec names a built-in by Name or
// points at a user's .cu file that follows the same ABI (kernels/ABI.md).
package variants

import (
	"fmt"
	"sort"

	"github.com/ktune/ktune/internal/results"
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
	Check func(s results.Shape, defines map[string]string) error
	// Fused kernels follow the fused ABI (kernels/ABI.md, "Fused kernels"):
	// attn_partial takes two more arguments, out and a zeroed scratch of
	// batch × kv_heads counters, merges the splits itself and writes out;
	// no combine is launched and Combine is empty.
	Fused bool
}

var registry = map[string]*Kernel{}

// register adds k to the built-ins; it panics on a duplicate name, which is
// a programming error caught by any test that imports the package.
func register(k *Kernel) {
	if _, dup := registry[k.Name]; dup {
		panic(fmt.Sprintf("variants: duplicate built-in %q", k.Name))
	}
	registry[k.Name] = k
}

// Lookup returns the built-in kernel with the given name.
func Lookup(name string) (*Kernel, bool) {
	k, ok := registry[name]
	return k, ok
}

// All returns the built-ins sorted by name.
func All() []*Kernel {
	out := make([]*Kernel, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
