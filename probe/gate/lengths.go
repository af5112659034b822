package gate

import (
	"math/rand/v2"
	"slices"

	"github.com/ktune/ktune/internal/abi"
)

// NKVs returns the gate lengths that fit the capacity, in order and
// without repeats; when none does, the capacity itself, so that a point is
// never measured ungated.
func NKVs(want []int, capacity int) []int {
	var out []int
	for _, n := range want {
		if n >= 1 && n <= capacity && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		out = []int{capacity}
	}
	return out
}

// order is the order the gate lengths run in for the i-th input set:
// ascending, descending, then shuffled with the seed, in turn. One order
// alone lets state kept on the device between launches through: a kernel
// that remembers the longest length seen is right at every step of an
// ascending walk.
func order(nkvs []int, i int, seed uint64) []int {
	out := slices.Clone(nkvs)
	slices.Sort(out)
	switch i % 3 {
	case 1:
		slices.Reverse(out)
	case 2:
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		rng.Shuffle(len(out), func(a, b int) { out[a], out[b] = out[b], out[a] })
	}
	return out
}

// Lengths are the per-sequence lengths of a gate launch at nkv for shape
// s: sequence 0 gets nkv exactly (the chunk boundaries the plan chose),
// later sequences shorter ones down to about nkv/2, so that a kernel
// reading one sequence's length for all of them (positions[0]) fails the
// gate; each at least 1 and at least the shape's q_len (the new tokens
// are part of the context, so a sequence holds at least them).
func Lengths(nkv int, s abi.Shape) []int {
	out := make([]int, s.Batch)
	for b := range out {
		out[b] = max(1, nkv-b*nkv/(2*s.Batch), s.Attention.Queries())
	}
	return out
}
