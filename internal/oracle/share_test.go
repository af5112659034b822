package oracle

import (
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// TestFromBaseSharedIsFromBase: a set that shares its base's arrays holds
// the values and bytes FromBase's copy holds, row for row, and the oracle
// gives the same bits on both, at the base's rows and fewer, untiled and
// tiled; and the base is left as it was.
func TestFromBaseSharedIsFromBase(t *testing.T) {
	t.Parallel()
	for _, s := range []abi.Shape{
		{Name: "f16", Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "f16", Batch: 3, Capacity: 4096},
		{Name: "bf16", Heads: 8, KVHeads: 4, HeadDim: 32, KVDtype: "bf16", Batch: 2, Capacity: 4096},
		{Name: "e4m3-head", Heads: 8, KVHeads: 4, HeadDim: 32, KVDtype: "fp8e4m3", KVScale: kvtype.ScaleHead, Batch: 2, Capacity: 4096},
		optShape,
		mlaShape,
	} {
		const splits, seed = 8, 11
		base, err := Generate(s, 637, seed)
		if err != nil {
			t.Fatal(err)
		}
		before := inputsDigest(base)
		for _, rows := range []int{637, 600, 5} {
			for _, set := range SetsFor(s) {
				lengths := make([]int, s.Batch)
				for i := range lengths {
					lengths[i] = max(s.Attention.Queries(), rows-97*i, 1)
				}
				want, err := FromBase(set, base, rows, lengths, splits)
				if err != nil {
					t.Fatal(err)
				}
				got, err := FromBaseShared(set, base, rows, lengths, splits)
				if err != nil {
					t.Fatal(err)
				}
				if k, v := got.Strides(); set.sharesV(s.KVType()) && rows < base.Rows && (v != base.Rows || set == SetUniform && k != base.Rows) {
					t.Errorf("%s %s rows %d: strides %d, %d: nothing shared", s.Name, set, rows, k, v)
				}
				if k, _ := got.Strides(); set == SetLarge && !s.KVType().Scaled && rows < base.Rows && k != base.Rows {
					t.Errorf("%s large rows %d: K of stride %d, want the base's %d rows but for the spike rows", s.Name, rows, k, base.Rows)
				}
				if g, w := inputsDigest(got.Prefix(got.Rows)), inputsDigest(want.Prefix(want.Rows)); g != w || got.Rows != want.Rows {
					t.Errorf("%s %s rows %d: shared inputs %s (%d rows), FromBase's %s (%d rows)", s.Name, set, rows, g, got.Rows, w, want.Rows)
				}
				launches := [][]int{lengths}
				if !set.PerLength() {
					launches = append(launches, slices.Repeat([]int{max(1, s.Attention.Queries())}, s.Batch), slices.Repeat([]int{max(got.Rows, s.Attention.Queries())}, s.Batch))
				}
				check := func(what string, a, b *Inputs, launches [][]int) {
					ga, err := References(a, launches)
					if err != nil {
						t.Fatal(err)
					}
					gb, err := References(b, launches)
					if err != nil {
						t.Fatal(err)
					}
					if x, y := outputsDigest(ga), outputsDigest(gb); x != y {
						t.Errorf("%s %s rows %d %s: references %s on the shared set, %s on FromBase's", s.Name, set, rows, what, x, y)
					}
				}
				check("", got, want, launches)
				if set.RowsNest(s.KVType()) && rows < base.Rows {
					// A view of the set at more rows is the set.
					longer, err := FromBaseShared(set, base, base.Rows, lengths, splits)
					if err != nil {
						t.Fatal(err)
					}
					v := longer.View(rows)
					if g, w := inputsDigest(v.Prefix(v.Rows)), inputsDigest(want.Prefix(want.Rows)); g != w || v.Rows != want.Rows {
						t.Errorf("%s %s rows %d: a view of %d rows %s, FromBase's %s", s.Name, set, rows, base.Rows, g, w)
					}
					check("view", v, want, launches)
				}
				if set == SetUniform {
					tg, tw := *got, *want
					tg.Tiled, tw.Tiled = true, true
					check("tiled", &tg, &tw, [][]int{slices.Repeat([]int{2*rows + 13}, s.Batch), slices.Repeat([]int{s.Capacity}, s.Batch)})
				}
			}
		}
		if inputsDigest(base) != before {
			t.Errorf("%s: deriving the sets changed the base", s.Name)
		}
	}
}
