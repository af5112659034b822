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
	// Paged is a pool of pages (paged.go): io.page_size rows each, in
	// io.page_order, found through the index buffers (block_table,
	// page_indptr, page_indices, last_page_len).
	Paged KVLayout = "paged"
)

// kvLayouts lists the layouts with the order each means, for messages and
// parsing.
var kvLayouts = []struct {
	l     KVLayout
	order string
}{
	{BSHD, "[batch][capacity][kv_heads][head_dim]"},
	{BHSD, "[batch][kv_heads][capacity][head_dim]"},
	{Paged, "pages of io.page_size rows through a block table or page indices"},
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
type Strides struct{ Row, Head, Batch, Page int64 }

// StridesOf returns K's strides in the io's layout at a shape: for a
// paged layout, the strides within a page (nhd, hnd) and Page, the
// elements between pages; Batch is then 0, since a sequence's rows are
// not at one stride. split_x has no row stride; Row and Head are 0.
func (io IO) StridesOf(d Dims) Strides {
	s := d.Shape
	w, kvh, c := int64(s.HeadDim), int64(s.KVHeads), int64(s.Capacity)
	switch io.KVLayout {
	case BHSD:
		return Strides{Row: w, Head: c * w, Batch: c * kvh * w}
	case Paged:
		P := int64(d.PageSize)
		st := Strides{Page: P * kvh * w}
		switch io.Paging.Order {
		case PageHND:
			st.Row, st.Head = w, P*w
		case PageNHD:
			st.Row, st.Head = kvh*w, w
		}
		return st
	}
	return Strides{Row: kvh * w, Head: w, Batch: c * kvh * w}
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
	Q        Dtype    // dtype of q: f32 (default), f16, bf16
	Out      Dtype    // dtype of out: f32 (default), f16, bf16
	KVLayout KVLayout // BSHD (default), BHSD or Paged
	// Paging is a Paged layout's pages; zero for the others.
	Paging Paging
	// Mask is the dtype of the additive mask buffer (f16 or f32) when a
	// launch passes mask; empty: f16.
	Mask Dtype
	// SplitCounts is the per-sequence split count an engine plans, an
	// expression of each sequence's nkv over the geometry symbols and
	// the defines, for the split_counts buffer; empty: none.
	SplitCounts string
	Partial     PartialLayout // PartialABI (default) or PartialOpaque
	// Workspace is the size in bytes of the workspace buffer, an
	// expression over the geometry symbols; empty: no workspace.
	Workspace string
}

// ABIIO is the io of the ABI (kernels/ABI.md): f32 q and out, K/V as
// [batch][capacity][kv_heads][head_dim], the gates reading the partial
// slots.
var ABIIO = IO{Q: F32, Out: F32, KVLayout: BSHD, Partial: PartialABI}

// PagedABIIO is the io of a built-in built with PAGE_SIZE: the ABI's,
// K and V in shuffled token-major pages of PAGE_SIZE rows.
var PagedABIIO = IO{Q: F32, Out: F32, KVLayout: Paged, Partial: PartialABI,
	Paging: Paging{PageSize: DefinePageSize, Order: PageNHD, Pages: PagesShuffled}}

// OrABI is the io, or the ABI's when it is zero (a point built by hand).
func (io IO) OrABI() IO {
	if io == (IO{}) {
		return ABIIO
	}
	return io
}

// HashText is the io's canonical text, for a point's hash.
func (io IO) HashText() string {
	t := "io " + string(io.Q) + " " + string(io.Out) + " " + string(io.KVLayout) + " " + string(io.Partial) + " " + io.Workspace
	// Each only when set, so that every other signature keeps its hash.
	if io.Paging != (Paging{}) {
		t += " pages " + io.Paging.PageSize + " " + string(io.Paging.Order) + " " + string(io.Paging.Pages)
	}
	if io.Mask != "" {
		t += " mask " + string(io.Mask)
	}
	if io.SplitCounts != "" {
		t += " split-counts " + io.SplitCounts
	}
	return t
}

// MaskDtype is the mask's dtype: io.mask, f16 by default.
func (io IO) MaskDtype() Dtype {
	if io.Mask == "" {
		return F16
	}
	return io.Mask
}

// Placement is where the io's layout puts K's (v false) or V's elements
// at a shape; pool is a paged layout's assignment (nil otherwise).
func (io IO) Placement(s Shape, v bool, pool *Pool) *Placement {
	w := s.HeadDim
	if v {
		w = s.Attention.VDim(s.HeadDim)
	}
	return &Placement{Layout: io.OrABI().KVLayout, Order: io.Paging.Order, Width: w, Elt: s.KVType().Bytes, V: v, Shape: s, Pool: pool}
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
