package oracle

import (
	"fmt"
	"slices"
)

// Sequences returns a batch of len(seqs) sequences whose sequence i is
// in's sequence seqs[i] (a sequence may repeat): its query tokens and its
// K and V rows, the same values and bytes, with in's per-head scales,
// slopes and sinks. The invariance gate places one sequence at every
// position of batches of several sizes this way, so that only its
// company changes. A set with patched rows (peaked) is refused: its
// patches are kept apart from its arrays.
func (in *Inputs) Sequences(seqs []int) (*Inputs, error) {
	if in.kPatch != nil {
		return nil, fmt.Errorf("selecting sequences: a set with patched K rows cannot be rearranged")
	}
	if in.Tiled {
		return nil, fmt.Errorf("selecting sequences: tiled inputs hold rows only the device has")
	}
	s := in.Shape
	for _, b := range seqs {
		if b < 0 || b >= s.Batch {
			return nil, fmt.Errorf("selecting sequences: sequence %d of a batch of %d", b, s.Batch)
		}
	}
	out := &Inputs{Shape: s, Seed: in.Seed, Rows: in.Rows,
		KScale: slices.Clone(in.KScale), VScale: slices.Clone(in.VScale),
		Slopes: slices.Clone(in.Slopes), Sinks: slices.Clone(in.Sinks)}
	out.Shape.Batch = len(seqs)
	qn := s.Attention.Queries() * s.Heads * s.HeadDim
	out.Q = make([]float32, 0, len(seqs)*qn)
	for _, b := range seqs {
		out.Q = append(out.Q, in.Q[b*qn:(b+1)*qn]...)
	}
	kStride, vStride := in.Strides()
	out.K, out.KBytes = in.pick(in.K, in.KBytes, s.HeadDim, kStride, seqs)
	out.V, out.VBytes = in.pick(in.V, in.VBytes, s.Attention.VDim(s.HeadDim), vStride, seqs)
	return out, nil
}

// pick copies the first Rows rows of sequences seqs of one of in's arrays
// (stride rows per sequence, rows width wide per KV head) into packed new
// ones, in seqs's order.
func (in *Inputs) pick(x []float64, raw []byte, width, stride int, seqs []int) ([]float64, []byte) {
	if x == nil {
		return nil, nil
	}
	elt := in.Shape.KVType().Bytes
	n := in.Rows * in.Shape.KVHeads * width // elements of one sequence
	vals, bytes := make([]float64, 0, len(seqs)*n), make([]byte, 0, len(seqs)*n*elt)
	for _, b := range seqs {
		at := b * stride * in.Shape.KVHeads * width
		vals = append(vals, x[at:at+n]...)
		bytes = append(bytes, raw[at*elt:(at+n)*elt]...)
	}
	return vals, bytes
}
