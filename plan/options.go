package plan

import (
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
)

// optionGateNKV adds to the gate lengths those the shape's attention
// options need: where the window's left edge meets a split boundary
// (oracle.WindowLengths) and where the new tokens straddle one
// (oracle.CausalLengths) and, in a paged cache of pageSize-row pages
// (0: contiguous), a page boundary and both at once
// (oracle.CausalPageLengths); lengths below q_len are raised to it (the
// new tokens are part of the context). A plain shape's lengths, and so
// its hash, are as they were; so are a contiguous point's.
func optionGateNKV(nkvs []int, s abi.Shape, splits, pageSize int) []int {
	a := s.Attention
	if a.Window == 0 && a.Queries() == 1 {
		return nkvs
	}
	out := slices.Clone(nkvs)
	if a.Window > 0 {
		out = append(out, oracle.WindowLengths(a.Window, splits, s.Capacity)...)
	}
	if T := a.Queries(); T > 1 {
		out = append(out, oracle.CausalLengths(T, splits, s.Capacity)...)
		out = append(out, oracle.CausalPageLengths(T, pageSize, splits, s.Capacity)...)
		for i := range out {
			out[i] = max(out[i], T)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
