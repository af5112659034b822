package oracle

import (
	"math"
	"runtime"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// References gives, at every length of a multi-length call, the bits the
// two-pass oracle it replaced gives at that length alone, on every input
// set, whatever the number of cores.
func TestReferencesEqualTwoPassBitForBit(t *testing.T) {
	s := abi.Shape{Heads: 8, KVHeads: 2, HeadDim: 32, KVDtype: "f16", Batch: 3, Capacity: 512}
	nkvs := []int{1, 7, 8, 9, 63, 64, 65, 200, 301}
	launches := make([][]int, len(nkvs))
	for i, n := range nkvs {
		launches[i] = []int{n, max(1, n-n/3), max(0, n-200)} // ragged, one sequence idle
	}
	for _, procs := range []int{1, 3} {
		prev := runtime.GOMAXPROCS(procs)
		for _, set := range Sets {
			in, err := GenerateSet(set, s, 301, launches[len(launches)-1], 8, 5)
			if err != nil {
				t.Fatal(err)
			}
			got, err := References(in, launches)
			if err != nil {
				t.Fatal(err)
			}
			for i, nkv := range launches {
				want, err := twoPassReference(in, nkv)
				if err != nil {
					t.Fatal(err)
				}
				for e := range want {
					if math.Float64bits(got[i].Out[e]) != math.Float64bits(want[e]) {
						t.Fatalf("%d cores, %s, lengths %v, element %d: %v, the two-pass oracle %v", procs, set, nkv, e, got[i].Out[e], want[e])
					}
				}
				one, err := Reference(in, nkv)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(one, got[i].Out) {
					t.Fatalf("%s, lengths %v: alone and in a multi-length call differ", set, nkv)
				}
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}

// untile spells tiled inputs out: rows rows per sequence, row r a copy of
// row r mod in.Rows.
func untile(in *Inputs, rows int) *Inputs {
	s := in.Shape
	out := &Inputs{Shape: s, Seed: in.Seed, Rows: rows, Q: in.Q, Slopes: in.Slopes, Sinks: in.Sinks}
	per := s.KVHeads * s.HeadDim
	for b := range s.Batch {
		for r := range rows {
			src := (b*in.Rows + r%in.Rows) * per
			out.K = append(out.K, in.K[src:src+per]...)
			if in.V != nil {
				out.V = append(out.V, in.V[src:src+per]...)
			}
		}
	}
	return out
}

// On tiled inputs a length past the drawn rows is the oracle of the rows
// spelled out: the same math, summed folded onto the drawn rows.
func TestReferencesTiled(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "f16", Batch: 2, Capacity: 1000}
	in, err := Generate(s, 37, 3)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := References(in, [][]int{{38, 1}}); err == nil {
		t.Fatal("38 rows of 37 drawn, not tiled: want an error")
	}
	in.Tiled = true
	launches := [][]int{{37, 36}, {38, 74}, {1000, 555}}
	got, err := References(in, launches)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := References(in, [][]int{{1001, 1}}); err == nil {
		t.Fatal("past the capacity: want an error")
	}
	full := untile(in, 1000)
	for i, nkv := range launches {
		want, err := twoPassReference(full, nkv)
		if err != nil {
			t.Fatal(err)
		}
		for e := range want {
			if d := math.Abs(got[i].Out[e] - want[e]); d > 1e-14 {
				t.Fatalf("lengths %v, element %d: tiled %v, spelled out %v", nkv, e, got[i].Out[e], want[e])
			}
		}
	}
}

// A sequence's rows do not depend on how many are drawn: a gate can draw
// a longer base without changing the rows every shorter length saw.
func TestGenerateRowsIndependentOfCount(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 8, KVDtype: "bf16", Batch: 3, Capacity: 512}
	a, err := Generate(s, 300, 9)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(s, 130, 9)
	if err != nil {
		t.Fatal(err)
	}
	for seq := range 3 {
		for r := range 130 {
			for kh := range 2 {
				if !slices.Equal(a.KRow(seq, r, kh), b.KRow(seq, r, kh)) || !slices.Equal(a.VRow(seq, r, kh), b.VRow(seq, r, kh)) {
					t.Fatalf("sequence %d row %d: 300 rows drawn and 130 drawn differ", seq, r)
				}
			}
		}
	}
	if slices.Equal(a.KRow(0, 0, 0), a.KRow(1, 0, 0)) || slices.Equal(a.KRow(0, 0, 0), a.VRow(0, 0, 0)) {
		t.Fatal("two sequences, or K and V, drew the same row")
	}
}
