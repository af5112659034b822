package abi

import (
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
		want []int32
	}{
		{Planned{Name: "chunks", Kind: PlanPerSeq, Count: "cdiv(nkv, CHUNK)"}, []int32{1, 3, 1}},
		{Planned{Name: "o_indptr", Kind: PlanPrefix, Count: "cdiv(nkv, CHUNK)"}, []int32{0, 1, 4, 5}},
		{Planned{Name: "request_indices", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "i", Length: "batch * cdiv(capacity, CHUNK)"},
			[]int32{0, 1, 1, 1, 2, 0, 0, 0, 0, 0, 0, 0}},
		{Planned{Name: "kv_tile_indices", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "j", Length: "batch * cdiv(capacity, CHUNK)"},
			[]int32{0, 0, 1, 2, 0, 0, 0, 0, 0, 0, 0, 0}},
		{Planned{Name: "block_valid_mask", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "1", Length: "batch * cdiv(capacity, CHUNK)", Pad: 0},
			[]int32{1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0}},
		{Planned{Name: "last_rows", Kind: PlanExpand, Count: "cdiv(nkv, CHUNK)", Value: "min(CHUNK, nkv - j * CHUNK)", Length: "8", Pad: -1},
			[]int32{1, 256, 256, 88, 256, -1, -1, -1}},
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
	} {
		if p.String() == base.String() {
			t.Errorf("%+v has the text of %+v", p, base)
		}
	}
	if n := reflect.TypeOf(base).NumField(); n != 6 {
		t.Errorf("Planned has %d fields: cover the new one above", n)
	}
}
