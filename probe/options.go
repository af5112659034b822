package probe

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// lseGate judges the log-sum-exp a kernel declaring lse wrote (f32
// [batch][q_len][heads] at the start of the lse buffer) against the
// oracle's, with the spec's bounds as they are: a log is not a weighted
// V, so the set's V scale does not apply. The buffer was poisoned before
// the launch, so a row the kernel did not write is a NaN here.
func (r *pointRun) lseGate(nkv int, ref []float64, log *gateLog, tag func(results.Gate) results.Gate) error {
	s := r.p.Config.Shape
	if s.Attention.LSE == "" {
		return nil
	}
	raw := make([]byte, 4*abi.QRows(s))
	if err := r.b.gpu.read(raw, r.ws.lse); err != nil {
		return fmt.Errorf("reading lse: %w", err)
	}
	got := make([]float32, len(raw)/4)
	for i := range got {
		got[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	t := r.p.Tol
	b := oracle.Bounds{MaxAbs: t.MaxAbs, MaxRel: t.MaxRel, NMSE: t.NMSE}
	m, err := oracle.Compare(got, ref, b)
	if err != nil {
		return err
	}
	g := toleranceGate(nkv, r.p.Seed, m, b)
	g.Buffer = "lse"
	log.add(tag(g))
	return nil
}

// checkOptions refuses what the probe cannot gate yet: an mla shape's V
// is dv wide and a latent one has none, and the K/V upload (kvCopies)
// writes head_dim-wide rows of both. The oracle and the input sets judge
// mla on the CPU (package oracle's tests).
func checkOptions(s abi.Shape) error {
	if s.Attention.MLA.DV != 0 {
		return fmt.Errorf("shape %s: mla (dv %d, %s): the device gates upload K and V head_dim wide; an mla kernel is judged by the oracle on the CPU only",
			s.Name, s.Attention.MLA.DV, s.Attention.MLA.Layout)
	}
	return nil
}

// shapeLengths are gateLengths for shape s, each at least its q_len: the
// new tokens are part of the context, so a sequence holds at least them.
func shapeLengths(nkv int, s abi.Shape) []int {
	out := gateLengths(nkv, s.Batch)
	for b := range out {
		out[b] = max(out[b], s.Attention.Queries())
	}
	return out
}
