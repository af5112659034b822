package dispatch

import (
	"math"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
)

// mergeRanges turns the decisions of one shape (ascending nkv) into
// contiguous ranges covering 1 … ∞.
func mergeRanges(decs []*decision.Decision) []Range {
	var out []Range
	for i, d := range decs {
		if i == 0 || d.Winner.ID != decs[i-1].Winner.ID {
			lo := 1
			if i > 0 {
				lo = boundary(decs[i-1].NKV, d.NKV)
				out[len(out)-1].MaxNKV = lo
			}
			out = append(out, Range{MinNKV: lo})
		}
		r := &out[len(out)-1]
		med := d.Winner.Median
		if d.Rule == RuleUnmeasured {
			med = 0 // the arm was measured at other nkv only
		}
		r.Picks = append(r.Picks, Pick{NKV: d.NKV, MedianNS: med, Rule: d.Rule, Margin: d.Margin})
		// Fields from the largest measured nkv: each pick overwrites.
		fill(r, d.Winner.Rec, med, d.Margin)
	}
	return out
}

// boundary is the first nkv of the upper range when the winner changes
// between measured lo < hi: the midpoint in log space, kept in (lo, hi].
func boundary(lo, hi int) int {
	b := int(math.Round(math.Sqrt(float64(lo) * float64(hi))))
	return min(max(b, lo+1), hi)
}

func fill(r *Range, rec *results.Record, median float64, margin string) {
	c := rec.Config
	r.Variant, r.Kernel = c.Variant, c.Kernel
	r.Defines = c.Defines.Sorted()
	r.Splits = c.Splits
	r.Grid, r.Block = c.Grid, c.Block
	r.CombineGrid, r.CombineBlock = c.CombineGrid, c.CombineBlock
	r.MedianNS, r.Margin = median, margin
}
