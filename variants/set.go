package variants

import "github.com/ktune/ktune/internal/catalog"

// Builtins returns a Set holding every registered built-in kernel.
func Builtins() catalog.Set {
	s := make(catalog.Set, len(registry))
	for n, k := range registry {
		s[n] = k
	}
	return s
}
