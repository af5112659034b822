package probe

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// devOff converts a byte offset for device pointer arithmetic.
func devOff(n int64) cuda.DevPtr { return cuda.DevPtr(n) }

// A gateVerdict is the cached outcome of one GateKey's gates.
type gateVerdict struct {
	gates  []results.Gate
	pass   bool
	replay bool // the replay gate ran (only needed with the graph probe)
}

// gateNKVs returns the gate lengths that fit the capacity, in order and
// without repeats; when none does, the capacity itself, so that a point is
// never measured ungated.
func gateNKVs(want []int, capacity int) []int {
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

// gate runs the gates of the point, or copies the verdict of an earlier
// point with the same GateKey: the gates depend on the compiled kernel and
// the shape, never on the timed nkv.
func (r *pointRun) gate(ctx context.Context) (bool, error) {
	b, p := r.b, r.p
	needReplay := slices.Contains(p.Probes, results.ProbeGraph)
	if v, ok := b.gates[p.GateKey]; ok && p.GateKey != "" && (v.replay || !needReplay) {
		r.rec.Gates = slices.Clone(v.gates)
		return v.pass, nil
	}
	gates, err := r.numericGates(ctx)
	if err != nil {
		return false, err
	}
	if needReplay {
		rg, err := r.replayGates(ctx)
		if err != nil {
			return false, err
		}
		gates = append(gates, rg...)
	}
	v := &gateVerdict{gates: gates, pass: true, replay: needReplay}
	for _, g := range gates {
		v.pass = v.pass && g.Pass
	}
	if p.GateKey != "" {
		b.gates[p.GateKey] = v
	}
	r.rec.Gates = slices.Clone(gates)
	return v.pass, nil
}

// numericGates runs the written, tolerance and bitwise gates at every gate
// length, on fresh inputs seeded with p.Seed.
func (r *pointRun) numericGates(ctx context.Context) ([]results.Gate, error) {
	b, p, c := r.b, r.p, &r.p.Config
	s := c.Shape
	nkvs := gateNKVs(p.GateNKV, s.Capacity)
	in, err := oracle.Generate(s, slices.Max(nkvs), p.Seed)
	if err != nil {
		return nil, fmt.Errorf("generating gate inputs: %w", err)
	}
	if err := r.upload(in); err != nil {
		return nil, err
	}
	bounds := oracle.Bounds{MaxAbs: p.Tol.MaxAbs, MaxRel: p.Tol.MaxRel, NMSE: p.Tol.NMSE}
	slots := r.l.gatedSlots(s)
	var gates []results.Gate
	for _, nkv := range nkvs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lengths := gateLengths(nkv, s.Batch)
		partial, out, err := r.runOnce(r.k, c, r.geometryAt(r.g, nkv), lengths)
		if err != nil {
			return nil, fmt.Errorf("gate run at nkv %d: %w", nkv, err)
		}
		gates = append(gates, writtenGate(nkv, p.Seed, partial, out, slots, s.HeadDim))

		ref, err := oracle.Reference(in, lengths)
		if err != nil {
			return nil, err
		}
		m, err := oracle.Compare(floats(out), ref, bounds)
		if err != nil {
			return nil, err
		}
		gates = append(gates, toleranceGate(nkv, p.Seed, m, bounds))

		if r.twin != nil {
			tp, to, err := r.runOnce(r.twin, &p.Twin.Config, r.twinG, lengths)
			if err != nil {
				return nil, fmt.Errorf("bitwise twin %s at nkv %d: %w", p.Twin.Config.Variant, nkv, err)
			}
			for _, x := range []struct {
				name string
				a, b []byte
			}{{"partial", partial, tp}, {"out", out, to}} {
				g := diffGate(results.GateBitwise, nkv, p.Seed, x.name, x.a, x.b)
				g.Twin = p.Twin.Config.Variant
				gates = append(gates, g)
			}
		}
		b.logf("%s: gates at nkv %d: max_abs %.2g nmse %.2g", c.Variant, nkv, m.MaxAbs, m.NMSE)
	}
	return gates, nil
}

// upload writes q and the generated rows of K and V; rows past in.Rows keep
// the workspace's random fill (or an earlier gate's inputs, random too).
func (r *pointRun) upload(in *oracle.Inputs) error {
	b, w, s := r.b, r.ws, r.p.Config.Shape
	// A synchronous copy does not order itself after work on a
	// non-default stream: an earlier point's launches may still read q.
	if err := b.stream.Synchronize(); err != nil {
		return fmt.Errorf("waiting for the stream: %w", err)
	}
	// In the signature's q dtype and K/V layout (io.go).
	if err := b.ctx.CopyHtoD(w.q, qUpload(r.l, in)); err != nil {
		return fmt.Errorf("uploading q: %w", err)
	}
	for _, cp := range kvCopies(r.l, s, in.Rows, in.KBytes, in.VBytes) {
		if err := b.ctx.CopyHtoD(w.k+devOff(cp.dst), cp.k); err != nil {
			return fmt.Errorf("uploading K: %w", err)
		}
		if err := b.ctx.CopyHtoD(w.v+devOff(cp.dst), cp.v); err != nil {
			return fmt.Errorf("uploading V: %w", err)
		}
	}
	return nil
}

// A span is one copy: n bytes from offset src of the oracle's K or V to
// offset dst of the device buffer.
type span struct{ dst, src, n int64 }

// rowSpans places the oracle's rows rows of each sequence (packed, rows
// per sequence) at the start of that sequence's capacity rows on the
// device ([batch][capacity][kv_heads][head_dim]).
func rowSpans(s results.Shape, rows int, rowBytes int64) []span {
	out := make([]span, s.Batch)
	for seq := range out {
		out[seq] = span{
			dst: int64(seq) * int64(s.Capacity) * rowBytes,
			src: int64(seq) * int64(rows) * rowBytes,
			n:   int64(rows) * rowBytes,
		}
	}
	return out
}

// setPositions writes the ABI's positions for lengths.
func (r *pointRun) setPositions(lengths []int) error {
	if err := r.b.stream.Synchronize(); err != nil {
		return fmt.Errorf("waiting for the stream: %w", err)
	}
	if err := r.b.ctx.CopyHtoD(r.ws.positions, positionBytes(lengths)); err != nil {
		return fmt.Errorf("uploading positions: %w", err)
	}
	return nil
}

// poison fills partial and out with the poison pattern.
func (r *pointRun) poison() error {
	b, w := r.b, r.ws
	if err := b.ctx.MemsetD32Async(w.partial, poison, r.l.Partial/4, b.stream); err != nil {
		return fmt.Errorf("poisoning partial: %w", err)
	}
	if err := b.ctx.MemsetD32Async(w.out, outPoison(r.l), r.l.Out/4, b.stream); err != nil {
		return fmt.Errorf("poisoning out: %w", err)
	}
	return nil
}

// readBack waits for the stream and copies partial and out back, trimmed
// to their unaligned sizes.
func (r *pointRun) readBack() (partial, out []byte, err error) {
	b, w, s := r.b, r.ws, r.p.Config.Shape
	if err := b.stream.Synchronize(); err != nil {
		return nil, nil, fmt.Errorf("running the kernels: %w", err)
	}
	// partial only when the signature declares the ABI's slots; out in
	// its declared dtype, returned as f32 (io.go).
	partial = make([]byte, r.l.gatedSlots(s)*r.l.pstr*4)
	out = make([]byte, outBytes(r.l, s))
	if len(partial) > 0 {
		if err := b.ctx.CopyDtoH(partial, w.partial); err != nil {
			return nil, nil, fmt.Errorf("reading partial: %w", err)
		}
	}
	if err := b.ctx.CopyDtoH(out, w.out); err != nil {
		return nil, nil, fmt.Errorf("reading out: %w", err)
	}
	return partial, outToF32(r.l, out), nil
}

// runOnce launches one pair at the given lengths over poisoned outputs and
// returns both buffers.
func (r *pointRun) runOnce(k *kernelPair, c *results.Config, g geometry, lengths []int) (partial, out []byte, err error) {
	if err := r.setPositions(lengths); err != nil {
		return nil, nil, err
	}
	if err := r.poison(); err != nil {
		return nil, nil, err
	}
	if err := r.b.launchPair(k, c, g, r.ws); err != nil {
		return nil, nil, err
	}
	return r.readBack()
}

// writtenGate checks that the kernels overwrote every element the ABI
// says they write: all of out, and p[0], p[1], p[4..4+head_dim) of every
// partial slot (idle splits included: they must write −inf, 0, 0).
func writtenGate(nkv int, seed uint64, partial, out []byte, slots, headDim int) results.Gate {
	g := results.Gate{Kind: results.GateWritten, NKV: nkv, Seed: seed, FirstDiff: -1}
	np, fp := unwritten(partial, partialWords(slots, headDim))
	no, fo := unwritten(out, outWords(len(out)/4))
	g.Pass = np == 0 && no == 0
	g.DiffBytes = 4 * (np + no)
	// The partial buffer is upstream of out: its first hole is the cause.
	switch {
	case np > 0:
		g.Buffer, g.FirstDiff = "partial", fp
	case no > 0:
		g.Buffer, g.FirstDiff = "out", fo
	}
	if !g.Pass {
		g.Detail = fmt.Sprintf("%d partial and %d out floats still hold the poison", np, no)
		if np > 0 {
			pstr := headDim + 4
			word := fp / 4
			g.Detail += fmt.Sprintf(" (first: slot %d word %d)", word/pstr, word%pstr)
		}
	}
	return g
}

// toleranceGate judges the oracle metrics.
func toleranceGate(nkv int, seed uint64, m oracle.Metrics, b oracle.Bounds) results.Gate {
	g := results.Gate{
		Kind: results.GateTolerance, NKV: nkv, Seed: seed, Pass: m.Pass(b),
		MaxAbs: m.MaxAbs, MaxRel: m.MaxRel, NMSE: m.NMSE, NaNs: m.NaNs,
	}
	if g.Pass {
		return g
	}
	var why []string
	if m.NaNs > 0 {
		why = append(why, fmt.Sprintf("%d NaN/Inf outputs", m.NaNs))
	}
	if m.Outside > 0 {
		why = append(why, fmt.Sprintf("%d outputs outside |err| <= %.3g + %.3g*|ref| (worst %.3gx the bound; max_abs %.3g, max_rel %.3g)",
			m.Outside, b.MaxAbs, b.MaxRel, m.Worst, m.MaxAbs, m.MaxRel))
	}
	if m.NMSE > b.NMSE {
		why = append(why, fmt.Sprintf("nmse %.3g > %.3g", m.NMSE, b.NMSE))
	}
	g.Detail = strings.Join(why, ", ")
	return g
}

// diffGate compares two buffers byte for byte.
func diffGate(kind string, nkv int, seed uint64, buffer string, a, b []byte) results.Gate {
	n, first := diffBytes(a, b)
	g := results.Gate{Kind: kind, NKV: nkv, Seed: seed, Pass: n == 0, DiffBytes: n, FirstDiff: first, Buffer: buffer}
	if n > 0 {
		g.Detail = fmt.Sprintf("%d of %d %s bytes differ, first at byte %d", n, max(len(a), len(b)), buffer, first)
	}
	return g
}
