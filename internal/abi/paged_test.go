package abi

import (
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

func words(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// TestPoolIndexBytes: by hand, batch 2, capacity 40, pages of 16 rows:
// three pages per sequence, two spares, eight in all; lengths 33 and 16.
func TestPoolIndexBytes(t *testing.T) {
	s := Shape{Batch: 2, Capacity: 40, KVHeads: 1, HeadDim: 8, KVDtype: F16}
	p, err := NewPool(s, 16, PagesIdentity)
	if err != nil {
		t.Fatal(err)
	}
	if p.MaxPages != 3 || p.NumPages != 8 || !slices.Equal(p.Spare(), []int32{6, 7}) {
		t.Fatalf("pool %+v, spare %v", p, p.Spare())
	}
	d := Dims{Shape: s, PageSize: 16}
	b, err := p.IndexBytes(d, []int{33, 16})
	if err != nil {
		t.Fatal(err)
	}
	want := []int32{
		0, 1, 2, 3, 4, 5, // block_table
		0, 3, 4, // page_indptr: 3 pages, then 1
		0, 1, 2, 3, 0, 0, // page_indices (room for 6)
		1, 16, // last_page_len
	}
	if got := words(b); !slices.Equal(got, want) {
		t.Errorf("index buffers %v, want %v", got, want)
	}
	for name, at := range map[string]int64{"block_table": 0, "page_indptr": 24, "page_indices": 36, "last_page_len": 60} {
		if got := BufferNamed(name).At(d); got != at {
			t.Errorf("%s at byte %d, want %d", name, got, at)
		}
	}
	if _, err := p.IndexBytes(d, []int{41, 1}); err == nil {
		t.Error("a length past the capacity gave index buffers")
	}
}

// TestPoolShuffled: the shuffled pool is a permutation of its pages in
// which the sequences' pages are not in order, and Owner inverts it.
func TestPoolShuffled(t *testing.T) {
	s := Shape{Batch: 4, Capacity: 1000, KVHeads: 2, HeadDim: 64, KVDtype: F16}
	p, err := NewPool(s, 16, PagesShuffled)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, p.NumPages)
	inOrder := 0
	for b := range s.Batch {
		for j := range p.MaxPages {
			pg := p.Page(b, j)
			if seen[pg] {
				t.Fatalf("page %d given twice", pg)
			}
			seen[pg] = true
			if ob, oj, ok := p.Owner(pg); !ok || ob != b || oj != j {
				t.Fatalf("owner of page %d: %d, %d, %v; want %d, %d", pg, ob, oj, ok, b, j)
			}
			if pg == b*p.MaxPages+j {
				inOrder++
			}
		}
	}
	for _, pg := range p.Spare() {
		if seen[pg] {
			t.Fatalf("spare page %d is owned", pg)
		}
		if _, _, ok := p.Owner(int(pg)); ok {
			t.Fatalf("spare page %d has an owner", pg)
		}
	}
	if inOrder > p.MaxPages {
		t.Errorf("%d of %d pages at their identity place: not shuffled", inOrder, s.Batch*p.MaxPages)
	}
}

// TestMaskBytes: by hand, q_len 2, capacity 6, window 2, lengths 5 and 2:
// token t of a sequence of n rows sees rows [max(0, p−2), p] with
// p = n − 2 + t; f16 −inf is 0xFC00.
func TestMaskBytes(t *testing.T) {
	s := Shape{Batch: 2, Capacity: 6, Heads: 1, KVHeads: 1, HeadDim: 8, KVDtype: F16,
		Attention: Attention{QLen: 2, Window: 2}}
	b, err := MaskBytes(Dims{Shape: s}, []int{5, 2})
	if err != nil {
		t.Fatal(err)
	}
	const X = 0xFC00
	want := []uint16{
		X, 0, 0, 0, X, X, // sequence 0, token 0: p = 3, rows 1..3
		X, X, 0, 0, 0, X, // token 1: p = 4, rows 2..4
		0, X, X, X, X, X, // sequence 1, token 0: p = 0
		0, 0, X, X, X, X, // token 1: p = 1
	}
	for i, w := range want {
		if got := binary.LittleEndian.Uint16(b[2*i:]); got != w {
			t.Fatalf("mask element %d (sequence %d, token %d, row %d) is %#x, want %#x", i, i/12, i/6%2, i%6, got, w)
		}
	}
	f32 := Dims{Shape: s, IO: IO{Mask: F32}}
	if b, _ := MaskBytes(f32, []int{5, 2}); len(b) != 4*24 || binary.LittleEndian.Uint32(b) != 0xFF800000 {
		t.Errorf("f32 mask: %d bytes, first word %#x", len(b), binary.LittleEndian.Uint32(b))
	}
}

// TestSplitCountBytes: each sequence's count from its own nkv.
func TestSplitCountBytes(t *testing.T) {
	d := Dims{Shape: Shape{Batch: 3, Capacity: 4096, Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: F16},
		IO: IO{SplitCounts: "min(SPLITS, cdiv(nkv, 256))"}}
	b, err := SplitCountBytes(d, Defines{{Name: "SPLITS", Value: "8"}}, []int{1, 700, 4096})
	if err != nil {
		t.Fatal(err)
	}
	if got := words(b); !slices.Equal(got, []int32{1, 3, 8}) {
		t.Errorf("split counts %v, want [1 3 8]", got)
	}
	d.IO.SplitCounts = "nkv - 700"
	if _, err := SplitCountBytes(d, nil, []int{700}); err == nil || !strings.Contains(err.Error(), "at least 1") {
		t.Errorf("a count of 0: %v", err)
	}
}

// TestPagedRefuses: the strides and buffers a layout does not have.
func TestPagedRefuses(t *testing.T) {
	paged := IO{KVLayout: Paged, Paging: Paging{PageSize: "16", Order: PageNHD}}
	split := IO{KVLayout: Paged, Paging: Paging{PageSize: "16", Order: PageSplitX}}
	for _, c := range []struct {
		io      IO
		name    string
		refused bool
	}{
		{paged, "kv_batch_stride", true}, {paged, "kv_batch_bytes", true}, {paged, "kv_row_stride", false},
		{paged, "block_table", false}, {paged, "page_size", false}, {split, "kv_head_stride", true},
		{ABIIO, "block_table", true}, {ABIIO, "last_page_len", true}, {ABIIO, "max_pages", true},
		{ABIIO, "kv_batch_stride", false}, {ABIIO, "split_counts", true},
		{IO{SplitCounts: "SPLITS"}, "split_counts", false},
	} {
		if why := c.io.Refuses(c.name); (why != "") != c.refused {
			t.Errorf("%s with %s: refused %q, want refused %v", c.name, c.io.KVLayout, why, c.refused)
		}
	}
	// Within a page: nhd's rows are kv_heads × head_dim apart, hnd's
	// head_dim, and pages page_size × kv_heads × head_dim.
	s := Shape{Batch: 1, Capacity: 64, KVHeads: 4, HeadDim: 128, KVDtype: F16}
	d := Dims{Shape: s, PageSize: 16, IO: paged}
	if st := paged.StridesOf(d); st != (Strides{Row: 512, Head: 128, Page: 8192}) {
		t.Errorf("nhd strides %+v", st)
	}
	hnd := paged
	hnd.Paging.Order = PageHND
	if st := hnd.StridesOf(d); st != (Strides{Row: 128, Head: 2048, Page: 8192}) {
		t.Errorf("hnd strides %+v", st)
	}
}
