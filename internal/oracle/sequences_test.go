package oracle

import (
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// TestSequences: a sequence moved to another place of another batch keeps
// its query, its rows and so its oracle output, bit for bit (the
// invariance gate's premise); a set with patched rows is refused.
func TestSequences(t *testing.T) {
	s := abi.Shape{Name: "t", Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "bf16", Batch: 3, Capacity: 64}
	in, err := Generate(s, 40, 9)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := in.Sequences([]int{2, 0, 2})
	if err != nil {
		t.Fatal(err)
	}
	if sel.Shape.Batch != 3 || sel.Rows != in.Rows {
		t.Fatalf("batch %d rows %d", sel.Shape.Batch, sel.Rows)
	}
	for i, b := range []int{2, 0, 2} {
		for h := range s.Heads {
			if !slices.Equal(sel.QRow(i, 0, h), in.QRow(b, 0, h)) {
				t.Errorf("q of position %d head %d is not sequence %d's", i, h, b)
			}
		}
		for r := range in.Rows {
			for kh := range s.KVHeads {
				if !slices.Equal(sel.KRow(i, r, kh), in.KRow(b, r, kh)) || !slices.Equal(sel.VRow(i, r, kh), in.VRow(b, r, kh)) {
					t.Fatalf("row %d of position %d is not sequence %d's", r, i, b)
				}
			}
		}
	}
	// The oracle's output of sequence 2 at 33 rows, alone and at the
	// selection's positions 0 and 2 (with other company and lengths).
	alone, err := in.Sequences([]int{2})
	if err != nil {
		t.Fatal(err)
	}
	a, err := References(alone, [][]int{{33}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := References(sel, [][]int{{33, 17, 33}})
	if err != nil {
		t.Fatal(err)
	}
	row := len(a[0].Out)
	if !slices.Equal(a[0].Out, b[0].Out[:row]) || !slices.Equal(a[0].Out, b[0].Out[2*row:]) {
		t.Error("the oracle's output of one sequence depends on its company")
	}
	if _, err := in.Sequences([]int{3}); err == nil || !strings.Contains(err.Error(), "sequence 3 of a batch of 3") {
		t.Errorf("out of range: %v", err)
	}
	peaked, err := FromBaseShared(SetPeaked, in, 40, []int{33, 33, 33}, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := peaked.Sequences([]int{0}); err == nil && peaked.kPatch != nil {
		t.Error("a set with patched rows was rearranged")
	}
}
