package abi

import (
	"encoding/binary"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestPlannedGenerators: FlashInfer's planner arrays for a chunk of 256
// rows over three sequences of 1, 600 and 256 rows: per-sequence chunk
// counts, their exclusive prefix sums (o_indptr), the request and tile
// index of every work item (expand), padded to a fixed length with a
// validity mask.
func TestPlannedGenerators(t *testing.T) {
	env := Dims{Shape: Shape{Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: F16, Batch: 3, Capacity: 1024}, Splits: 4, IO: ABIIO}.Env(nil)
	env["CHUNK"] = 256
	nkv := []int{1, 600, 256}
	for _, c := range []struct {
		p    Planned
		want []int64
	}{
		{Planned{Name: "chunks", Kind: PlanPerSeq, Count: "cdiv(nkv, CHUNK)"}, []int64{1, 3, 1}},
		{Planned{Name: "o_indptr", Kind: PlanPrefix, Count: "cdiv(nkv, CHUNK)"}, []int64{0, 1, 4, 5}},
		{Planned{Name: "request_indices", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "i", Length: "batch * cdiv(capacity, CHUNK)"},
			[]int64{0, 1, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0}},
		{Planned{Name: "kv_tile_indices", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "j", Length: "batch * cdiv(capacity, CHUNK)"},
			[]int64{0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0}},
		{Planned{Name: "block_valid_mask", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "1", Length: "batch * cdiv(capacity, CHUNK)", Pad: 0},
			[]int64{1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}},
		{Planned{Name: "last_rows", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "min(CHUNK, nkv - j * CHUNK)", Length: "8", Pad: -1},
			[]int64{1, 256, 256, 88, 256, -1, -1, -1}},
		// A chunk sized from the step's longest sequence (600 rows: 3 chunks
		// of 256, each sequence split at that size), as FlashInfer's
		// planner sizes it from the longest sequence's pages.
		{Planned{Name: "tiles_by_longest", Kind: PlanPerSeq, Count: "cdiv(nkv, cdiv(max_nkv, 3))"}, []int64{1, 3, 2}},
	} {
		got, err := c.p.Generate(env, nkv)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("%s: %v (%v), want %v", c.p.Name, got, err, c.want)
		}
	}
	over := Planned{Name: "tiles", Kind: PlanExpand, Count: "cdiv(nkv, 16)", Value: "j", Length: "8"}
	if _, err := over.Generate(env, nkv); err == nil || !strings.Contains(err.Error(), "more than its 8 entries") {
		t.Errorf("an expand past its length: %v", err)
	}
	if _, err := (&Planned{Name: "x", Kind: PlanExpand, Count: "1", Value: "i"}).Generate(env, nkv); err == nil {
		t.Error("an expand without a length generated")
	}
	a, err := ParseArg("planned:request_indices")
	if err != nil || !a.IsPlanned() || !a.IsBuffer() || a.String() != "planned:request_indices" {
		t.Errorf("planned argument %+v (%v)", a, err)
	}
}

// TestPlannedTextCoversEveryField: changing any field of a planned
// array's declaration changes its text, the point's hash text.
func TestPlannedTextCoversEveryField(t *testing.T) {
	base := Planned{Name: "a", Kind: PlanExpand, Count: "1", Value: "j", Length: "4", Pad: 0}
	for _, p := range []Planned{
		{Name: "b", Kind: PlanExpand, Count: "1", Value: "j", Length: "4"},
		{Name: "a", Kind: PlanPerSeq, Count: "1", Value: "j", Length: "4"},
		{Name: "a", Kind: PlanExpand, Count: "2", Value: "j", Length: "4"},
		{Name: "a", Kind: PlanExpand, Count: "1", Value: "i", Length: "4"},
		{Name: "a", Kind: PlanExpand, Count: "1", Value: "j", Length: "5"},
		{Name: "a", Kind: PlanExpand, Count: "1", Value: "j", Length: "4", Pad: -1},
		{Name: "a", Kind: PlanExpand, Count: "1", Value: "j", Length: "4", Elem: PlannedBool},
	} {
		if p.String() == base.String() {
			t.Errorf("%+v has the text of %+v", p, base)
		}
	}
	if i32 := (Planned{Name: "a", Kind: PlanExpand, Count: "1", Value: "j", Length: "4", Elem: PlannedI32}); i32.String() != base.String() {
		t.Errorf("an explicit i32 array has another text than the default: %q, %q", i32.String(), base.String())
	}
	if n := reflect.TypeOf(base).NumField(); n != 7 {
		t.Errorf("Planned has %d fields: cover the new one above", n)
	}
}

// TestPlannedEntryTypes: an array's entries are laid out at their C
// type's size (FlashInfer's bool block_valid_mask one byte an entry, so
// that entry k is the k-th byte the kernel reads), the layout text
// round-trips, and a value the type cannot hold is refused.
func TestPlannedEntryTypes(t *testing.T) {
	env := Dims{Shape: Shape{Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: F16, Batch: 2, Capacity: 1024}, Splits: 4, IO: ABIIO}.Env(nil)
	decls := []Planned{
		{Name: "o_indptr", Kind: PlanPrefix, Count: "cdiv(nkv, 256)"},
		{Name: "mask", Kind: PlanExpand, Count: "cdiv(nkv, 256)", Value: "1", Length: "8", Elem: PlannedBool},
		{Name: "wide", Kind: PlanPerSeq, Count: "nkv + 4294967296", Elem: PlannedI64},
	}
	var bufs []PlannedBuf
	for i := range decls {
		b, err := decls[i].Buf(env)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	if got := ParsePlannedText(PlannedText(bufs)); !reflect.DeepEqual(got, bufs) {
		t.Errorf("layout text %q reads back as %+v, want %+v", PlannedText(bufs), got, bufs)
	}
	d := Dims{Planned: bufs}
	spans := d.PlannedSpans()
	if spans[1].Offset != 16 || spans[2].Offset != 32 || d.plannedEnd() != 32+16 {
		t.Errorf("spans %+v end %d: want o_indptr at 0 (12 bytes), mask at 16 (8 bytes), wide at 32 (16 bytes)", spans, d.plannedEnd())
	}
	img, err := PlannedBytes(d, decls, env, []int{600, 1})
	if err != nil {
		t.Fatal(err)
	}
	if want := []byte{1, 1, 1, 1, 0, 0, 0, 0}; !slices.Equal(img[16:24], want) {
		t.Errorf("bool mask bytes %v, want %v", img[16:24], want)
	}
	if got := binary.LittleEndian.Uint64(img[32:]); got != 4294967296+600 {
		t.Errorf("i64 entry 0 = %d", got)
	}
	if got := binary.LittleEndian.Uint32(img[8:]); got != 4 {
		t.Errorf("i32 o_indptr[2] = %d, want 4", got)
	}
	for _, bad := range []Planned{
		{Name: "m", Kind: PlanPerSeq, Count: "2", Elem: PlannedBool},
		{Name: "m", Kind: PlanPerSeq, Count: "256", Elem: PlannedU8},
		{Name: "m", Kind: PlanPerSeq, Count: "-1", Elem: PlannedU8},
		{Name: "m", Kind: PlanPerSeq, Count: "4294967296"},
		{Name: "m", Kind: PlanExpand, Count: "1", Value: "1", Length: "4", Pad: -1, Elem: PlannedBool},
	} {
		if _, err := bad.Generate(env, []int{600, 1}); err == nil || !strings.Contains(err.Error(), "does not fit") {
			t.Errorf("%+v: %v, want a value that does not fit refused", bad, err)
		}
	}
	// Declarations and layout that disagree on the entry size.
	if _, err := PlannedBytes(Dims{Planned: []PlannedBuf{{Name: "mask", Entries: 8}}}, decls[1:2], env, []int{1, 1}); err == nil {
		t.Error("a bool array laid out with 4-byte entries was written")
	}
}

// TestPointee: what a struct member may point at for each argument: index
// arrays element by element (an int64 or bool pointer over int32 entries
// is another array), q and out also in vectors of their elements, and
// nothing judged where the size is not known.
func TestPointee(t *testing.T) {
	io := IO{Q: F16, Out: F32}
	planned := []Planned{{Name: "mask", Elem: PlannedBool}, {Name: "idx"}}
	for _, c := range []struct {
		arg  string
		n    int
		want bool
	}{
		{"planned:mask", 1, true}, {"planned:mask", 4, false},
		{"planned:idx", 4, true}, {"planned:idx", 1, false}, {"planned:idx", 8, false},
		{"block_table", 4, true}, {"block_table", 8, false}, {"seqlens", 2, false},
		{"q", 2, true}, {"q", 4, true}, {"q", 16, true}, {"q", 1, false}, {"q", 3, false},
		{"out", 4, true}, {"out", 2, false}, {"out", 16, true},
		{"k", 2, true}, {"k", 7, true}, // K's type is the shape's: not judged here
		{"planned:idx", 0, true}, // void* or no pointer
		{"scratch:tmp", 3, true}, {"null", 5, true},
	} {
		a, err := ParseArg(c.arg)
		if err != nil {
			t.Fatal(err)
		}
		if got := PointeeOf(a, io, planned, 0).Holds(c.n, false); got != c.want {
			t.Errorf("%s read by a %d-byte pointee: %v, want %v", c.arg, c.n, got, c.want)
		}
	}
	// K and V at a point whose K/V type is known (one byte, fp8): an
	// 8-bit pointer or a vector of them, never a half one.
	k, _ := ParseArg("k")
	if p := PointeeOf(k, io, nil, 1); !p.Holds(1, false) || !p.Holds(16, false) || p.Holds(0, false) != true || PointeeOf(k, io, nil, 2).Holds(1, false) {
		t.Errorf("k at a 1-byte K/V type: %+v", p)
	}
}
