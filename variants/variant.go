// Package variants holds ktune's built-in kernels as catalog entries: where
// each one's source lives, which defines it takes, its default launch
// geometry, the shapes it supports and its numerics class. A spec names a
// built-in by Name or points at a user's .cu file that follows the same ABI
// (kernels/ABI.md).
package variants

import (
	"fmt"
	"sort"

	"github.com/ktune/ktune/internal/catalog"
)

var registry = map[string]*catalog.Kernel{}

// register adds k to the built-ins; it panics on a duplicate name, which is
// a programming error caught by any test that imports the package.
func register(k *catalog.Kernel) {
	if _, dup := registry[k.Name]; dup {
		panic(fmt.Sprintf("variants: duplicate built-in %q", k.Name))
	}
	registry[k.Name] = k
}

// Lookup returns the built-in kernel with the given name.
func Lookup(name string) (*catalog.Kernel, bool) {
	k, ok := registry[name]
	return k, ok
}

// All returns the built-ins sorted by name.
func All() []*catalog.Kernel {
	out := make([]*catalog.Kernel, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
