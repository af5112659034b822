package oracle

import (
	"math"
	"math/rand/v2"

	"github.com/ktune/ktune/internal/abi"
)

// StandardSlopes are the ALiBi slopes of the ALiBi paper for heads query
// heads: for n a power of two, head h (from 0) gets 2^(−8(h+1)/n); for
// other counts, the slopes of the largest power of two n below heads,
// then every other slope of 2n (2^(−4(2i+1)/n)) for the remaining heads,
// as the reference implementation and the engines compute them. Each is
// rounded to float32, the type a kernel computes or reads them in.
func StandardSlopes(heads int) []float64 {
	n := 1
	for n*2 <= heads {
		n *= 2
	}
	out := make([]float64, 0, heads)
	for h := range n {
		out = append(out, float64(float32(math.Exp2(-8*float64(h+1)/float64(n)))))
	}
	for i := 0; len(out) < heads; i++ {
		out = append(out, float64(float32(math.Exp2(-4*float64(2*i+1)/float64(n)))))
	}
	return out
}

// drawOptions draws the per-head values of the shape's options from the
// query's stream, after q: the sink logits (uniform in [−2, 2], the range
// of trained sinks, which makes them matter without dominating; the
// sinks set rewrites them to dominate) and, for ALiBi from a buffer,
// slopes drawn around the standard ones (×[0.5, 2]), so that a kernel
// that computes the formula instead of reading the buffer is off.
func (in *Inputs) drawOptions(rng *rand.Rand) {
	s, a := in.Shape, in.Shape.Attention
	if a.Sinks {
		in.Sinks = make([]float64, s.Heads)
		for h := range in.Sinks {
			in.Sinks[h] = float64(float32(4*rng.Float64() - 2))
		}
	}
	switch a.ALiBi {
	case abi.ALiBiStandard:
		in.Slopes = StandardSlopes(s.Heads)
	case abi.ALiBiBuffer:
		in.Slopes = StandardSlopes(s.Heads)
		for h := range in.Slopes {
			in.Slopes[h] = float64(float32(in.Slopes[h] * math.Exp2(2*rng.Float64()-1)))
		}
	}
}
