package abi

import "fmt"

// A KVLayout is the order of K's and V's elements in their buffers.
type KVLayout string

// The KV layouts a signature's io may declare.
const (
	// BSHD is [batch][capacity][kv_heads][head_dim], the ABI's.
	BSHD KVLayout = "bshd"
	// BHSD is [batch][kv_heads][capacity][head_dim].
	BHSD KVLayout = "bhsd"
)

// kvLayouts lists the layouts with the order each means, for messages and
// parsing.
var kvLayouts = []struct {
	l     KVLayout
	order string
}{
	{BSHD, "[batch][capacity][kv_heads][head_dim]"},
	{BHSD, "[batch][kv_heads][capacity][head_dim]"},
}

// ParseKVLayout parses a kv_layout.
func ParseKVLayout(s string) (KVLayout, error) {
	var want []string
	for _, k := range kvLayouts {
		if string(k.l) == s {
			return k.l, nil
		}
		want = append(want, fmt.Sprintf("%s (%s)", k.l, k.order))
	}
	return "", fmt.Errorf("want %s, got %q", joinOr(want), s)
}

// Strides are the element strides of one K/V row, one KV head's rows and
// one sequence's rows in a layout (the signature's kv_row_stride,
// kv_head_stride and kv_batch_stride).
type Strides struct{ Row, Head, Batch int64 }

// StridesOf returns the strides of the layout at a shape.
func (l KVLayout) StridesOf(s Shape) Strides {
	d, kvh, c := int64(s.HeadDim), int64(s.KVHeads), int64(s.Capacity)
	if l == BHSD {
		return Strides{Row: d, Head: c * d, Batch: c * kvh * d}
	}
	return Strides{Row: kvh * d, Head: d, Batch: c * kvh * d}
}

// Offset is the element offset of row r of KV head h of sequence b.
func (l KVLayout) Offset(s Shape, b, r, h int) int64 {
	st := l.StridesOf(s)
	return int64(b)*st.Batch + int64(r)*st.Row + int64(h)*st.Head
}

// A PartialLayout says what the partial buffer holds.
type PartialLayout string

// The partial layouts: the ABI's slots, which the gates inspect, or opaque
// scratch of the same size that they do not.
const (
	PartialABI    PartialLayout = "abi"
	PartialOpaque PartialLayout = "opaque"
)

// ParsePartialLayout parses io.partial.
func ParsePartialLayout(s string) (PartialLayout, error) {
	switch PartialLayout(s) {
	case PartialABI, PartialOpaque:
		return PartialLayout(s), nil
	}
	return "", fmt.Errorf("want %s (the ABI's slots, inspected by the gates) or %s (scratch the gates ignore), got %q",
		PartialABI, PartialOpaque, s)
}

// IO declares the dtypes and layouts of a signature's buffers.
type IO struct {
	Q        Dtype         // dtype of q: f32 (default), f16, bf16
	Out      Dtype         // dtype of out: f32 (default), f16, bf16
	KVLayout KVLayout      // BSHD (default) or BHSD
	Partial  PartialLayout // PartialABI (default) or PartialOpaque
	// Workspace is the size in bytes of the workspace buffer, an
	// expression over the geometry symbols; empty: no workspace.
	Workspace string
}

// ABIIO is the io of the ABI (kernels/ABI.md): f32 q and out, K/V as
// [batch][capacity][kv_heads][head_dim], the gates reading the partial
// slots.
var ABIIO = IO{Q: F32, Out: F32, KVLayout: BSHD, Partial: PartialABI}

// OrABI is the io, or the ABI's when it is zero (a point built by hand).
func (io IO) OrABI() IO {
	if io == (IO{}) {
		return ABIIO
	}
	return io
}

// HashText is the io's canonical text, for a point's hash.
func (io IO) HashText() string {
	return "io " + string(io.Q) + " " + string(io.Out) + " " + string(io.KVLayout) + " " + string(io.Partial) + " " + io.Workspace
}

func joinOr(s []string) string {
	switch len(s) {
	case 0:
		return ""
	case 1:
		return s[0]
	}
	out := ""
	for i, x := range s[:len(s)-1] {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out + " or " + s[len(s)-1]
}
