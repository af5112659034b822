package oracle

import (
	"bytes"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// Sets derived from one drawn base equal the sets drawn from scratch, and
// leave the base as it was: the gates draw the base once per kernel.
func TestFromBaseEqualsGenerateSet(t *testing.T) {
	s := abi.Shape{Name: "t", Heads: 8, KVHeads: 2, HeadDim: 32, KVDtype: "f16", Batch: 2, Capacity: 512}
	lengths := []int{200, 150}
	base, err := Generate(s, 200, 7)
	if err != nil {
		t.Fatal(err)
	}
	kept := base.Prefix(base.Rows)
	for _, set := range Sets {
		want, err := GenerateSet(set, s, 200, lengths, 8, 7)
		if err != nil {
			t.Fatal(err)
		}
		got, err := FromBase(set, base, 200, lengths, 8)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.KBytes, want.KBytes) || !bytes.Equal(got.VBytes, want.VBytes) || !slices.Equal(got.Q, want.Q) {
			t.Errorf("%s: derived from a base differs from drawn afresh", set)
		}
	}
	if !bytes.Equal(base.KBytes, kept.KBytes) || !bytes.Equal(base.VBytes, kept.VBytes) || !slices.Equal(base.Q, kept.Q) {
		t.Error("deriving the sets changed the base")
	}
	// A prefix holds each sequence's first rows.
	p := base.Prefix(50)
	for b := range s.Batch {
		for r := range 50 {
			if !slices.Equal(p.KRow(b, r, 1), base.KRow(b, r, 1)) || !slices.Equal(p.VRow(b, r, 0), base.VRow(b, r, 0)) {
				t.Fatalf("prefix row %d of sequence %d differs", r, b)
			}
		}
	}
}
