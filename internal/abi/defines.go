package abi

import (
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
	// or not they declare it). A record's config.splits holds its value
	// for tables.
	DefineSplits = "SPLITS"
	// DefineHeadDim and the KV type's defines (kvtype.Defines: KV_F16 for
	// every kernel, KV_BF16 and KV_FP8 for their types only) are derived
	// from the shape; a spec may not set them, and tables leave them out
	// because the shape already says them.
	DefineHeadDim = "HEAD_DIM"
	// DefinePSTR is fixed by the ABI (PartialStride); a spec may not set
	// it.
	DefinePSTR = "PSTR"
)

// The defines of a shape's attention options (kernels/ABI.md, "Paged KV,
// several query tokens, soft-cap and sinks"), passed only for a shape with
// the option, so a plain shape's kernels build as they always did: QLEN
// the query tokens per sequence (above 1), SOFTCAP=1 with a soft-cap (its
// value is the softcap argument), SINKS=1 with sinks (the sinks buffer).
const (
	DefineQLen    = "QLEN"
	DefineSoftcap = "SOFTCAP"
	DefineSinks   = "SINKS"
)

// DefinePageSize is the built-ins' paged form (kernels/ABI.md): above 0,
// K and V are a pool of pages of that many rows, token-major, through
// block_table; its point's io is then PagedABIIO. A user kernel says
// its pages in its io instead, page_size naming the define if it likes.
const DefinePageSize = "PAGE_SIZE"

// Derived reports whether a define is derived from the shape.
func Derived(name string) bool {
	return name == DefineHeadDim || slices.Contains(kvtype.Defines, name) ||
		name == DefineQLen || name == DefineSoftcap || name == DefineSinks
}

// ShapeDefines returns the defines derived from a shape.
func ShapeDefines(s Shape) map[string]string {
	m := s.KVType().ShapeDefines()
	m[DefineHeadDim] = strconv.Itoa(s.HeadDim)
	if q := s.Attention.Queries(); q > 1 {
		m[DefineQLen] = strconv.Itoa(q)
	}
	if s.Attention.Softcap > 0 {
		m[DefineSoftcap] = "1"
	}
	if s.Attention.Sinks {
		m[DefineSinks] = "1"
	}
	return m
}

// A Define is one compile-time -D definition.
type Define struct {
	Name  string `json:"name"`
	Value string `json:"value"`
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
