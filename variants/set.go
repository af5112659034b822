package variants

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/ktune/ktune/internal/results"
)

// A Set is a collection of kernels looked up by name. The spec and the
// planner take a Set rather than reading the registry themselves, so that a
// test can plan against kernels it defines without touching the built-ins.
type Set map[string]*Kernel

// Builtins returns a Set holding every registered built-in kernel.
func Builtins() Set {
	s := make(Set, len(registry))
	for n, k := range registry {
		s[n] = k
	}
	return s
}

// NewSet returns a Set of the given kernels; a duplicate name is an error.
func NewSet(ks ...*Kernel) (Set, error) {
	s := make(Set, len(ks))
	for _, k := range ks {
		if _, dup := s[k.Name]; dup {
			return nil, fmt.Errorf("variants: duplicate kernel %q", k.Name)
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
func (k *Kernel) Accepts(s results.Shape, defines map[string]string) error {
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
