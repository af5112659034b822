package probe

import (
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// lseGate judges the log-sum-exp a kernel declaring lse wrote (raw, f32
// [batch][q_len][heads] from the start of the lse buffer, readBack)
// against the oracle's. The buffer was poisoned before the launch, so a
// row the kernel did not write is a NaN here.
func (r *pointRun) lseGate(nkv int, raw []byte, ref []float64, log *gateLog, tag func(results.Gate) results.Gate) error {
	if r.p.Config.Shape.Attention.LSE == "" {
		return nil
	}
	g, err := r.lseTolerance(nkv, raw, ref)
	if err != nil {
		return err
	}
	log.add(tag(g))
	return nil
}

// lseTolerance is the tolerance verdict on lse, with the spec's bounds as
// they are: a log is not a weighted V, so the set's V scale does not
// apply.
func (r *pointRun) lseTolerance(nkv int, raw []byte, ref []float64) (results.Gate, error) {
	t := r.p.Tol
	b := oracle.Bounds{MaxAbs: t.MaxAbs, MaxRel: t.MaxRel, NMSE: t.NMSE}
	m, err := oracle.Compare(floats(raw), ref, b)
	if err != nil {
		return results.Gate{}, err
	}
	g := toleranceGate(nkv, r.p.Seed, m, b)
	g.Buffer = "lse"
	return g, nil
}

// checkOptions refuses what the probe cannot gate: a latent mla cache
// whose V the oracle reads from K's first dv channels must have dv ≤
// head_dim (the spec refuses it too; a record built by hand may not).
func checkOptions(s abi.Shape) error {
	if m := s.Attention.MLA; m.DV > s.HeadDim && m.Layout == abi.MLALatent {
		return fmt.Errorf("shape %s: mla dv %d is wider than the latent K rows (head_dim %d)", s.Name, m.DV, s.HeadDim)
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
