package abi

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ktune/ktune/internal/expr"
)

// Inputs derived from the lengths besides the positions: the additive mask
// llama.cpp passes instead of lengths, and the split count each sequence
// gets from an engine's planner. Like the positions, the probe writes them
// again at every length a gate or a probe runs at, and between graph
// replays.

// Rows is the rows query token t of a sequence of nkv rows attends,
// [lo, hi): the cache up to its own position (the new tokens are the
// last q_len rows, each sees those before it), within the window.
func (a Attention) Rows(nkv, t int) (lo, hi int) {
	p := nkv - a.Queries() + t // the query's position
	lo, hi = 0, p+1
	if a.Window > 0 {
		lo = max(0, p-a.Window)
	}
	return lo, hi
}

// MaskBytes is the additive mask for the lengths, [batch][q_len][capacity]
// in the io's mask dtype: 0 on the rows a query token attends, −inf on
// every other row, those past the length included.
func MaskBytes(d Dims, lengths []int) ([]byte, error) {
	s := d.Shape
	t := d.IO.MaskDtype().Type()
	T := s.Attention.Queries()
	out := make([]byte, MaskElems(s)*int64(t.Bytes))
	ninf := t.Encode(math.Inf(-1))
	for b, nkv := range lengths {
		if nkv < T || nkv > s.Capacity {
			return nil, fmt.Errorf("sequence %d: nkv %d outside %d..capacity %d", b, nkv, T, s.Capacity)
		}
		for q := range T {
			lo, hi := s.Attention.Rows(nkv, q)
			row := (b*T + q) * s.Capacity
			for r := range s.Capacity {
				if r < lo || r >= hi {
					t.PutBits(out, row+r, ninf)
				}
			}
		}
	}
	return out, nil
}

// SplitCountBytes is io.split_counts at each sequence's nkv, int32.
func SplitCountBytes(d Dims, defines Defines, lengths []int) ([]byte, error) {
	x, err := expr.Parse(d.IO.SplitCounts)
	if err != nil {
		return nil, fmt.Errorf("io.split_counts %q: %w", d.IO.SplitCounts, err)
	}
	env := d.Env(defines)
	out := make([]byte, 4*len(lengths))
	for b, nkv := range lengths {
		env["nkv"] = int64(nkv)
		n, err := x.Eval(env)
		if err != nil {
			return nil, fmt.Errorf("io.split_counts %q at nkv %d: %w", d.IO.SplitCounts, nkv, err)
		}
		if n < 1 || n > math.MaxInt32 {
			return nil, fmt.Errorf("io.split_counts %q is %d at nkv %d: want a count of at least 1", d.IO.SplitCounts, n, nkv)
		}
		binary.LittleEndian.PutUint32(out[4*b:], uint32(n))
	}
	return out, nil
}
