package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe/gate"
)

// devOff converts a byte offset for device pointer arithmetic.
func devOff(n int64) cuda.DevPtr { return cuda.DevPtr(n) }

// A gateVerdict is the cached outcome of one GateKey's gates.
type gateVerdict struct {
	gates []results.Gate
	pass  bool
	// ref is the fresh gate's launch on the gated module, which the point
	// runs again after its probes (timed.go).
	ref *gate.Launch
	// longRun is set once the launch-count check's long run has run on
	// the group's kernel (launchcount.go).
	longRun bool
}

// gate runs the gates of the point, or copies the verdict of an earlier
// point with the same GateKey: the gates depend on the compiled kernel and
// the shape, never on the timed nkv, and the first point of a group runs
// all of them (the replay gate included, whatever the probes), so a
// failure fails every point of the group.
func (r *pointRun) gate(ctx context.Context) (bool, error) {
	b, p := r.b, r.p
	if v, ok := b.gates[p.GateKey]; ok && p.GateKey != "" {
		r.rec.Gates = slices.Clone(v.gates)
		if !v.pass {
			return false, nil
		}
		return r.timedLengthGate(ctx)
	}
	start, pairs := time.Now(), r.pairs
	hits, misses := b.inputCache().hits, b.inputCache().misses
	log := &gate.Log{}
	for _, g := range gate.Registry {
		if err := g.Run(ctx, r, log); err != nil {
			// A fault ends the point: its record keeps the evidence so far.
			r.rec.Gates = slices.Clone(log.Gates)
			return false, err
		}
	}
	v := &gateVerdict{gates: log.Gates, pass: log.Pass(), ref: log.Reference}
	if p.GateKey != "" {
		b.gates[p.GateKey] = v
	}
	r.rec.Gates = slices.Clone(log.Gates)
	b.logf("%s: gates: %d launch pairs, %d verdicts kept, pass %v, %.2fs (drawing inputs %.2fs, oracle %.2fs; input sets: %d drawn, %d found already drawn)",
		p.Config.Variant, r.pairs-pairs, len(log.Gates), v.pass, time.Since(start).Seconds(), r.tInputs.Seconds(), r.tOracle.Seconds(),
		b.inputCache().misses-misses, b.inputCache().hits-hits)
	if len(p.Waivers) > 0 {
		b.logf("%s: gates passed %v under the spec's waivers: %s", p.Config.Variant, v.pass, strings.Join(p.WaiverTexts(), "; "))
	}
	return v.pass, nil
}

// uploadSet generates one input set (rows rows per sequence; the peaked
// set only as many as the longest length) and uploads it.
func (r *pointRun) uploadSet(set oracle.InputSet, rows int, lengths []int) (*oracle.Inputs, error) {
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
		// a group, which judge their own timed lengths (long.go): the bytes
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
func (r *pointRun) upload(in *oracle.Inputs) error {
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

// setPositions writes every input derived from the lengths: the ABI's
// positions and seqlens, and a paged layout's index buffers, the mask and
// the split counts where the point has them (pages.go). It runs before
// every launch at new lengths and between graph replays, so a kernel
// that kept any of them from an earlier step reads the wrong rows.
func (r *pointRun) setPositions(lengths []int) error {
	if err := r.writeInput(r.ws.positions, 0, positionBytes(lengths)); err != nil {
		return fmt.Errorf("uploading positions: %w", err)
	}
	writes, at, err := r.lengthInputs(lengths)
	if err != nil {
		return err
	}
	for i, wr := range writes {
		if err := r.writeInput(at[i], wr.off, wr.b); err != nil {
			return fmt.Errorf("uploading the length-derived inputs: %w", err)
		}
	}
	return nil
}

// poison fills the current set's outputs with the poison pattern: partial,
// out and a declared lse.
func (r *pointRun) poison(set qSet) error {
	d, w := r.b.gpu, r.view(set)
	if err := d.fill32(w.partial, poison, r.l.Partial); err != nil {
		return fmt.Errorf("poisoning partial: %w", err)
	}
	if err := d.fill32(w.out, outPoison(r.l), r.l.Out); err != nil {
		return fmt.Errorf("poisoning out: %w", err)
	}
	// The set's own lse (the second set has its own too, timed.go).
	if r.p.Config.Shape.Attention.LSE != "" {
		if err := d.fill32(w.lse, poison, r.l.Lse); err != nil {
			return fmt.Errorf("poisoning lse: %w", err)
		}
	}
	return nil
}

// outputs are what one launch pair left in the buffers the gates read:
// partial (the ABI's slots, empty when it is opaque), out as f32, and the
// lse rows of a variant that declares lse (nil otherwise).
type outputs struct {
	partial, out, lse []byte
}

// readBack waits for the stream and copies the outputs of the current set
// back, trimmed to their unaligned sizes.
func (r *pointRun) readBack(set qSet) (outputs, error) {
	d, w, s := r.b.gpu, r.view(set), r.p.Config.Shape
	if err := d.sync(); err != nil {
		return outputs{}, fmt.Errorf("running the kernels: %w", err)
	}
	// partial only when the signature declares the ABI's slots; out in
	// its declared dtype, returned as f32 (io.go); lse f32
	// [batch][q_len][heads] at the start of its buffer.
	o := outputs{partial: r.takeSpare(r.l.gatedSlots(s) * r.l.pstr * 4), out: make([]byte, outBytes(r.l, s))}
	if len(o.partial) > 0 {
		if err := d.read(o.partial, w.partial); err != nil {
			return outputs{}, fmt.Errorf("reading partial: %w", err)
		}
	}
	if err := d.read(o.out, w.out); err != nil {
		return outputs{}, fmt.Errorf("reading out: %w", err)
	}
	o.out = outToF32(r.l, o.out)
	if s.Attention.LSE != "" {
		o.lse = make([]byte, 4*abi.QRows(s))
		if err := d.read(o.lse, w.lse); err != nil {
			return outputs{}, fmt.Errorf("reading lse: %w", err)
		}
	}
	return o, nil
}

// runOutputs launches one pair at the given lengths over poisoned outputs
// and returns every output the gates read, lse included.
func (r *pointRun) runOutputs(k *kernelPair, c *results.Config, g geometry, lengths []int, set qSet) (outputs, error) {
	if err := r.setPositions(lengths); err != nil {
		return outputs{}, err
	}
	if err := r.poison(set); err != nil {
		return outputs{}, err
	}
	if err := r.sealInputs(); err != nil {
		return outputs{}, err
	}
	if err := r.pair(k, c, g, set); err != nil {
		return outputs{}, err
	}
	o, err := r.readBack(set)
	if err != nil {
		return outputs{}, err
	}
	return o, r.afterLaunch(slices.Max(lengths))
}
