package results

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/kvtype"
)

// The defines with a meaning to ktune itself. Every other define is the
// kernel's own business, passed through as -D.
const (
	// DefineSplits is the define every kernel takes: the number of KV
	// splits per head (part of the ABI, so it applies to built-ins whether
	// or not they declare it). Config.Splits holds its value for tables.
	DefineSplits = "SPLITS"
	// DefineHeadDim and the KV type's defines (kvtype.Defines: KV_F16 for
	// every kernel, KV_BF16 and KV_FP8 for their types only) are derived
	// from the shape; a spec may not set them, and tables leave them out
	// because the shape already says them.
	DefineHeadDim = "HEAD_DIM"
)

// Derived reports whether a define is derived from the shape.
func Derived(name string) bool { return name == DefineHeadDim || slices.Contains(kvtype.Defines, name) }

// ShapeDefines returns the defines derived from a shape.
func ShapeDefines(s Shape) map[string]string {
	m := kvtype.Of(s.KVDtype).ShapeDefines()
	m[DefineHeadDim] = strconv.Itoa(s.HeadDim)
	return m
}

// Defines is a list of defines sorted by name.
type Defines []Define

// SortDefines returns the defines of m sorted by name.
func SortDefines(m map[string]string) Defines {
	out := make(Defines, 0, len(m))
	for n, v := range m {
		out = append(out, Define{Name: n, Value: v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Sorted returns a copy sorted by name (a record written by hand or by
// another tool need not be).
func (ds Defines) Sorted() Defines {
	out := slices.Clone(ds)
	slices.SortStableFunc(out, func(a, b Define) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// String renders the defines as "NAME=VALUE NAME=VALUE".
func (ds Defines) String() string { return ds.Join(" ") }

// Join renders the defines as NAME=VALUE separated by sep.
func (ds Defines) Join(sep string) string {
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = d.Name + "=" + d.Value
	}
	return strings.Join(parts, sep)
}

// Without returns the defines other than the named ones.
func (ds Defines) Without(names ...string) Defines {
	return slices.DeleteFunc(slices.Clone(ds), func(d Define) bool { return slices.Contains(names, d.Name) })
}

// Own returns the defines the shape does not already say (neither
// HEAD_DIM nor the KV type's).
func (ds Defines) Own() Defines {
	return slices.DeleteFunc(slices.Clone(ds), func(d Define) bool { return Derived(d.Name) })
}

// Get returns the value of the named define and whether it is set.
func (ds Defines) Get(name string) (string, bool) {
	for _, d := range ds {
		if d.Name == name {
			return d.Value, true
		}
	}
	return "", false
}

// Probes are the measurement methods, in their canonical order.
var Probes = []Probe{ProbeCold, ProbeHot, ProbeGraph}

// ProbeNames returns the probe names, for messages.
func ProbeNames() []string {
	out := make([]string, len(Probes))
	for i, p := range Probes {
		out[i] = string(p)
	}
	return out
}

// ParseProbe parses one probe name.
func ParseProbe(s string) (Probe, error) {
	p := Probe(strings.TrimSpace(s))
	if !slices.Contains(Probes, p) {
		return "", fmt.Errorf("unknown probe %q: want %s", s, strings.Join(ProbeNames(), ", "))
	}
	return p, nil
}

// ParseProbes parses a comma-separated probe list such as "cold,hot";
// repeats are dropped.
func ParseProbes(s string) ([]Probe, error) {
	var out []Probe
	for _, name := range strings.Split(s, ",") {
		p, err := ParseProbe(name)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}
