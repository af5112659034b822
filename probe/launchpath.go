package probe

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// The one launch path of a point: every launch of the gates and the
// probes writes the lengths' inputs, poisons the outputs of its set of q
// and outputs, seals the inputs, enqueues the pair, reads the outputs back
// and runs the checks that follow every launch (inputs.go, guards.go).

// A qSet is one of the workspace's two sets of q and outputs: the timed
// launches alternate between them (timed.go); every other launch runs on
// the first.
type qSet int

const (
	firstSet qSet = 0
	altSet   qSet = 1
)

// pair enqueues one pair of k on set: the one launch path of a point,
// which the gates, the probes and graph capture all go through.
func (r *session) pair(k *kernelPair, c *results.Config, g geometry, set qSet) error {
	r.pairs++
	return r.b.gpu.launch(k, c, g, r.view(set))
}

// view is the workspace as a pair on set sees it: on altSet, q, partial,
// out and lse are the second set's.
func (r *session) view(set qSet) *workspace {
	if set != altSet {
		return r.ws
	}
	v := *r.ws
	v.q, v.partial, v.out, v.lse = r.ws.qAlt, r.ws.partialAlt, r.ws.outAlt, r.ws.lseAlt
	return &v
}

// devOff converts a byte offset for device pointer arithmetic.
func devOff(n int64) cuda.DevPtr { return cuda.DevPtr(n) }

// setPositions writes every input derived from the lengths: the ABI's
// positions and seqlens, and a paged layout's index buffers, the mask and
// the split counts where the point has them (pages.go). It runs before
// every launch at new lengths and between graph replays, so a kernel
// that kept any of them from an earlier step reads the wrong rows.
func (r *session) setPositions(lengths []int) error {
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
func (r *session) poison(set qSet) error {
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
func (r *session) readBack(set qSet) (outputs, error) {
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
func (r *session) runOutputs(k *kernelPair, c *results.Config, g geometry, lengths []int, set qSet) (outputs, error) {
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
