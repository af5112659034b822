package oracle

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
)

// The input sets of the attention options: each makes one misuse of its
// option move the output far past the bounds. A shape runs them only
// when it has the option (SetsFor).
const (
	// SetSinks gives the sink logits 4·(h mod 5): 0 to 16. Against rows
	// scoring about ±1 a sink of 16 holds all but e^−16·nkv of the weight
	// up to the capacity, one of 8 most of it at gate lengths and one of 0
	// little: a kernel that drops the sink, adds it to the numerator or
	// scales it with the scores is off by the sink's weight on some head
	// at every length.
	SetSinks InputSet = "sinks"
	// SetALiBi puts needles (score peakedScore) at row 0 and at the middle
	// row of every drawn span: without the bias they hold the output; with
	// it, the bias slope·(r − p) decides, and at long contexts, where it
	// dominates, suppresses them for every head but the smallest slopes. A
	// kernel that leaves out the bias, flips its sign or measures the
	// distance from the wrong end is off by the needles' weight.
	SetALiBi InputSet = "alibi"
	// SetWindow puts needles on the rows at and just past the left edge of
	// every query's window (p − window and p − window − 1): a window one row
	// too wide or too narrow, on either side, gains or loses a needle, which
	// moves the output by its share. The gate lengths place the edges inside
	// a split and on its boundaries (WindowLengths).
	SetWindow InputSet = "window"
	// SetCausal makes the q_len new tokens' rows needles: query t sees t+1
	// of them, so a mask that lets it see one more (a future token) or one
	// fewer moves its output by a share of t+2 or t+1 needles. The gate
	// lengths make the diagonal cross a split boundary (CausalLengths).
	SetCausal InputSet = "causal"
)

// SetsFor lists the input sets of shape s: Sets, then each option's set.
func SetsFor(s abi.Shape) []InputSet {
	out := slices.Clone(Sets)
	a := s.Attention
	if a.Sinks {
		out = append(out, SetSinks)
	}
	if a.ALiBi != "" {
		out = append(out, SetALiBi)
	}
	if a.Window > 0 {
		out = append(out, SetWindow)
	}
	if a.Queries() > 1 {
		out = append(out, SetCausal)
	}
	return out
}

// optionSet rewrites g's inputs into an option's set.
func (g *setGen) optionSet(set InputSet, lengths []int) error {
	in, s := g.in, g.in.Shape
	a := s.Attention
	T := a.Queries()
	switch {
	case set == SetSinks && in.Sinks != nil:
		for h := range in.Sinks {
			in.Sinks[h] = float64(4 * (h % 5))
		}
	case set == SetALiBi && in.Slopes != nil:
		g.groupQueries()
		for b := range s.Batch {
			for _, r := range []int{0, in.Rows / 2} {
				for kh := range s.KVHeads {
					g.aim(b, r, kh, peakedScore)
				}
			}
		}
	case set == SetWindow && a.Window > 0:
		g.groupQueries()
		for b, n := range lengths {
			for t := range T {
				p := n - T + t
				for _, r := range []int{p - a.Window, p - a.Window - 1} {
					if r >= 0 && r < in.Rows {
						for kh := range s.KVHeads {
							g.aim(b, r, kh, peakedScore)
						}
					}
				}
			}
		}
	case set == SetCausal && T > 1:
		g.groupQueries()
		for b, n := range lengths {
			for r := max(0, n-T); r < min(n, in.Rows); r++ {
				for kh := range s.KVHeads {
					g.aim(b, r, kh, peakedScore)
				}
			}
		}
	default:
		return fmt.Errorf("oracle: input set %q: unknown, or not for shape options %+v", set, a)
	}
	return nil
}

// WindowLengths are short and long context lengths (lengthsWhere) at
// which the last query's window of w rows (left size) has its left edge on a split boundary of ceil(n/splits)-row chunks, or one
// row inside or outside it: where a kernel that clips the window per
// split gets the edge wrong.
func WindowLengths(w, splits, capacity int) []int {
	return lengthsWhere(splits, capacity, func(n, chunk int) bool {
		e := n - 1 - w // the first row the last query sees
		if e < chunk-1 {
			return false
		}
		m := e % chunk
		return m == 0 || m == 1 || m == chunk-1
	})
}

// CausalLengths are short and long lengths (lengthsWhere) at which
// a split boundary falls between the q_len new tokens, so that the causal
// diagonal crosses from one split into the next.
func CausalLengths(qlen, splits, capacity int) []int {
	return lengthsWhere(splits, capacity, causalSplit(qlen, splits))
}

// causalSplit reports whether a split boundary of ceil(n/splits)-row
// chunks falls between the q_len new tokens of a length n.
func causalSplit(qlen, splits int) func(n, chunk int) bool {
	return func(n, chunk int) bool {
		k := (n - 1) / chunk // the last boundary at or before row n−1
		return n >= qlen && k >= 1 && k < splits && k*chunk > n-qlen
	}
}

// CausalPageLengths are short and long lengths (lengthsWhere) at which a
// boundary of pageSize-row pages falls between the q_len new tokens, so
// that the causal diagonal crosses from one page into the next (the next
// entry of the block table), and the shortest at which a page boundary
// and a split boundary both do, where ceil(n/splits)-row chunks put one
// there (only at short lengths: CausalLengths). Pages of one row, where
// every row starts a page, and q_len 1 add none.
func CausalPageLengths(qlen, pageSize, splits, capacity int) []int {
	if pageSize <= 1 || qlen <= 1 {
		return nil
	}
	page := func(n int) bool {
		k := (n - 1) / pageSize // the last page boundary at or before row n−1
		return n >= qlen && k >= 1 && k*pageSize > n-qlen
	}
	split := causalSplit(qlen, splits)
	out := lengthsWhere(splits, capacity, func(n, _ int) bool { return page(n) })
	both := lengthsWhere(splits, capacity, func(n, chunk int) bool { return page(n) && split(n, chunk) })
	for _, n := range both {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// lengthsWhere returns the two shortest lengths n ≤ capacity of which
// ok(n, ceil(n/splits)) holds, and the two shortest from 64 rows per split
// on, where a split's loop runs over several tiles.
func lengthsWhere(splits, capacity int, ok func(n, chunk int) bool) []int {
	var out []int
	for _, from := range []int{1, 64 * max(1, splits)} {
		found := 0
		for n := from; n <= capacity && found < 2; n++ {
			if ok(n, (n+splits-1)/max(1, splits)) && !slices.Contains(out, n) {
				out = append(out, n)
				found++
			}
		}
	}
	return out
}
