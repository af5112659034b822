package probe

import (
	"fmt"
	"slices"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/plan"
)

// The gates' inputs: an input set drawn (or found drawn) for the point
// and uploaded into its workspace (gate.Session.UploadSet).

// uploadSet generates one input set (rows rows per sequence; the peaked
// set only as many as the longest length) and uploads it.
func (r *session) uploadSet(set oracle.InputSet, rows int, lengths []int) (*oracle.Inputs, error) {
	p, start := r.p, time.Now()
	key := keyOf(p)
	baseRows := baseRowsFor(rows, p.Config.Shape)
	if set.PerLength() {
		rows = slices.Max(lengths)
	}
	// An earlier kernel of the shape may have derived the set already
	// (inputcache.go).
	sk := keyOfSet(key, set, rows, baseRows, lengths, r.l.splits, r.l.qDtype)
	in, err := r.b.inputCache().set(sk, func() (*oracle.Inputs, error) {
		// A set whose rows nest, derived for a kernel of longer gate
		// lengths (another SPLITS): its first rows.
		if set != oracle.SetUniform && set.RowsNest(p.Config.Shape.KVType()) {
			if l := r.b.inputCache().longer(sk); l != nil {
				return l.View(rows), nil
			}
		}
		// One uniform base per gated kernel, drawn once: the sets and the
		// peaked set's per-length inputs derive from it (oracle.FromBase).
		// The backend keeps the last base for the points after the first of
		// a group, which judge their own timed lengths (package gate's long.go): the bytes
		// are a function of (shape, rows, seed) alone, and a sequence's first
		// rows do not depend on how many are drawn.
		if r.base == nil || !baseServes(r.base.Rows, baseRows, p.Config.Shape) {
			if c := r.b.base; c != nil && c.key == key && baseServes(c.in.Rows, baseRows, p.Config.Shape) {
				r.base = c.in
			} else {
				base, err := oracle.Generate(p.Config.Shape, baseRows, p.Seed)
				if err != nil {
					return nil, fmt.Errorf("generating gate inputs: %w", err)
				}
				r.base = base
				r.b.base = &cachedBase{key: key, in: base}
			}
		}
		in, err := oracle.FromBaseShared(set, r.base, rows, lengths, r.l.splits)
		if err != nil {
			return nil, fmt.Errorf("generating %s gate inputs: %w", set, err)
		}
		return sharedSet(in, r.base), nil
	})
	if err != nil {
		return nil, err
	}
	r.tInputs += time.Since(start)
	if set == oracle.SetUniform && r.ws.uniform == (uploaded{key, in.Rows}) {
		return in, nil // on the device already, and nothing has written over it since
	}
	r.ws.uniform = uploaded{}
	if in.Rows > r.ws.tiled.rows {
		r.ws.tiled = uploaded{} // the rows it tiled from are overwritten
	}
	if err := r.upload(in); err != nil {
		return nil, err
	}
	if set == oracle.SetUniform {
		r.ws.uniform = uploaded{key, in.Rows}
	}
	return in, nil
}

// An inputsKey is what gate inputs are drawn from: the shape (its label
// aside) and the seed.
type inputsKey struct {
	shape abi.Shape
	seed  uint64
}

func keyOf(p *plan.Point) inputsKey {
	s := p.Config.Shape
	s.Name = ""
	return inputsKey{s, p.Seed}
}

// A cachedBase is a base drawn for an earlier point.
type cachedBase struct {
	key inputsKey
	in  *oracle.Inputs
}

// upload writes q and the generated rows of K and V; rows past in.Rows keep
// the workspace's random fill (or an earlier gate's inputs, random too).
func (r *session) upload(in *oracle.Inputs) error {
	w, s := r.ws, r.p.Config.Shape
	if err := checkOptions(s); err != nil {
		return err
	}
	// In the signature's q dtype and K/V layout (io.go).
	if err := r.writeInput(w.q, 0, qUpload(r.l, in)); err != nil {
		return fmt.Errorf("uploading q: %w", err)
	}
	// A scaled type's scales are the set's own (oracle.Inputs.ScaleBytes).
	if sb := in.ScaleBytes(); sb != nil {
		if err := r.writeInput(w.kvScale, 0, sb); err != nil {
			return fmt.Errorf("uploading kv_scale: %w", err)
		}
	}
	// The ALiBi slopes and sink logits are the set's too (the sinks set
	// rewrites them).
	if hb := in.HeadParamBytes(); hb != nil {
		if err := r.writeInput(w.headParams, 0, hb); err != nil {
			return fmt.Errorf("uploading head_params: %w", err)
		}
	}
	ks, vs := splitKV(w.kvCopies(s, packedOf(in)))
	if err := r.writeInputs(w.k, ks); err != nil {
		return fmt.Errorf("uploading K: %w", err)
	}
	if err := r.writeInputs(w.v, vs); err != nil {
		return fmt.Errorf("uploading V: %w", err)
	}
	return nil
}

// splitKV are the K and the V writes of cs, each in cs's order; a copy
// without V (a latent mla cache: V is K's) writes K only.
func splitKV(cs []kvCopy) (ks, vs []bufCopy) {
	ks = make([]bufCopy, 0, len(cs))
	vs = make([]bufCopy, 0, len(cs))
	for _, c := range cs {
		ks = append(ks, bufCopy{c.dst, c.k})
		if c.v != nil {
			vs = append(vs, bufCopy{c.vdst, c.v})
		}
	}
	return ks, vs
}

// A span is one copy: n bytes from offset src of the oracle's K or V to
// offset dst of the device buffer.
type span struct{ dst, src, n int64 }

// rowSpans places the oracle's rows rows of each sequence (stride rows
// per sequence, oracle.Inputs.Strides) at the start of that sequence's capacity
// rows on the device ([batch][capacity][kv_heads][head_dim]).
func rowSpans(s abi.Shape, rows, stride int, rowBytes int64) []span {
	out := make([]span, s.Batch)
	for seq := range out {
		out[seq] = span{
			dst: int64(seq) * int64(s.Capacity) * rowBytes,
			src: int64(seq) * int64(stride) * rowBytes,
			n:   int64(rows) * rowBytes,
		}
	}
	return out
}
