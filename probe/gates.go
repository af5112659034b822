package probe

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// devOff converts a byte offset for device pointer arithmetic.
func devOff(n int64) cuda.DevPtr { return cuda.DevPtr(n) }

// A gateVerdict is the cached outcome of one GateKey's gates.
type gateVerdict struct {
	gates []results.Gate
	pass  bool
	// ref is the fresh gate's launch on the gated module, which the point
	// runs again after its probes (timed.go).
	ref *launchBytes
	// longRun is set once the launch-count check's long run has run on
	// the group's kernel (launchcount.go).
	longRun bool
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

// gateOrder is the order the gate lengths run in for the i-th input set:
// ascending, descending, then shuffled with the seed, in turn. One order
// alone lets state kept on the device between launches through: a kernel
// that remembers the longest length seen is right at every step of an
// ascending walk.
func gateOrder(nkvs []int, i int, seed uint64) []int {
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

// A gateStep is one gate of a point: the verdict kinds it records and
// its run over the point's state, adding its verdicts to the log.
type gateStep struct {
	name  string
	kinds []results.GateKind
	run   func(r *pointRun, ctx context.Context, log *gateLog) error
}

// gateSteps are the gates a point runs, in order.
var gateSteps = []gateStep{
	// Every gate length on every input set (the stale gate on the
	// uniform set, after each length's launch).
	{"numeric", []results.GateKind{results.GateWritten, results.GateTolerance, results.GateDeterminism, results.GateBitwise, results.GateStale}, (*pointRun).numericGates},
	// The capacity and this point's own timed lengths, past the gate
	// lengths.
	{"long", []results.GateKind{results.GateTolerance}, (*pointRun).capacityGates},
	{"fresh", []results.GateKind{results.GateFresh}, (*pointRun).freshGate},
	{"replay", []results.GateKind{results.GateReplay}, (*pointRun).replayGates},
	// Opt-in (invariance.go).
	{"invariance", []results.GateKind{results.GateInvariance}, (*pointRun).invarianceGate},
	{"bounds", []results.GateKind{results.GateBounds}, (*pointRun).boundsGate},
	// The checks after every launch so far.
	{"memory", []results.GateKind{results.GateReadOnly, results.GateGuard}, (*pointRun).memoryGate},
}

// capacityGates are the long gates at the capacity and the point's own
// timed lengths.
func (r *pointRun) capacityGates(ctx context.Context, log *gateLog) error {
	s := r.p.Config.Shape
	capacity := make([]int, s.Batch)
	for i := range capacity {
		capacity[i] = s.Capacity
	}
	return r.longGates(ctx, [][]int{shapeLengths(s.Capacity, s), capacity, r.p.Config.TimedLengths()}, log)
}

// memoryGate adds the verdicts of the checks after every launch, at the
// longest gate length.
func (r *pointRun) memoryGate(_ context.Context, log *gateLog) error {
	for _, g := range r.memoryGates(slices.Max(gateNKVs(r.p.GateNKV, r.p.Config.Shape.Capacity))) {
		log.add(g)
	}
	return nil
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
	log := &gateLog{}
	for _, g := range gateSteps {
		if err := g.run(r, ctx, log); err != nil {
			// A fault ends the point: its record keeps the evidence so far.
			r.rec.Gates = slices.Clone(log.gates)
			return false, err
		}
	}
	r.found.gated = len(r.found.gates)
	v := &gateVerdict{gates: log.gates, pass: true, ref: log.ref}
	for _, g := range log.gates {
		v.pass = v.pass && g.Pass
	}
	if p.GateKey != "" {
		b.gates[p.GateKey] = v
	}
	r.rec.Gates = slices.Clone(log.gates)
	b.logf("%s: gates: %d launch pairs, %d verdicts kept, pass %v, %.2fs (drawing inputs %.2fs, oracle %.2fs; input sets: %d drawn, %d found already drawn)",
		p.Config.Variant, r.pairs-pairs, len(log.gates), v.pass, time.Since(start).Seconds(), r.tInputs.Seconds(), r.tOracle.Seconds(),
		b.inputCache().misses-misses, b.inputCache().hits-hits)
	if len(p.Waivers) > 0 {
		b.logf("%s: gates passed %v under the spec's waivers: %s", p.Config.Variant, v.pass, strings.Join(p.WaiverTexts(), "; "))
	}
	return v.pass, nil
}

// A gateLog collects verdicts. Every verdict on the uniform set is kept,
// as before there were other sets; on the other sets a record keeps every
// failure and, per kind and buffer, the passing verdict closest to its
// bound, so that a record carries the evidence without five copies of
// every length.
type gateLog struct {
	gates []results.Gate
	kept  map[string]int // index in gates of the kept pass, by kind/inputs/buffer
	// ref is the fresh gate's launch on the gated module, which the
	// point's timed gates run again after its probes (timed.go).
	ref *launchBytes
}

func (l *gateLog) add(g results.Gate) {
	if !g.Pass || g.Inputs == "" || g.Inputs == string(oracle.SetUniform) {
		l.gates = append(l.gates, g)
		return
	}
	key := string(g.Kind) + "/" + g.Inputs + "/" + g.Buffer
	if l.kept == nil {
		l.kept = map[string]int{}
	}
	if i, ok := l.kept[key]; ok {
		if g.NMSE > l.gates[i].NMSE {
			l.gates[i] = g
		}
		return
	}
	l.kept[key] = len(l.gates)
	l.gates = append(l.gates, g)
}

// numericGates runs the written, tolerance and bitwise gates at every gate
// length on every input set, each set walking the lengths in its own
// order; on the uniform set each launch is also repeated and the two
// compared byte for byte (a race or an atomic summation order shows as a
// difference).
func (r *pointRun) numericGates(ctx context.Context, log *gateLog) error {
	p, s := r.p, r.p.Config.Shape
	nkvs := gateNKVs(p.GateNKV, s.Capacity)
	rows := slices.Max(nkvs)
	for i, set := range oracle.SetsFor(s) {
		if r.skipped(set) { // the spec's waiver, in the record (waivers.go)
			r.b.logf("%s: %s inputs not run: %s", p.Config.Variant, set, p.WaiverTexts())
			continue
		}
		var in *oracle.Inputs
		var refs map[int]oracle.Output
		for _, nkv := range gateOrder(nkvs, i, p.Seed) {
			if err := ctx.Err(); err != nil {
				return err
			}
			lengths := shapeLengths(nkv, s)
			if in == nil || set.PerLength() {
				var err error
				if in, err = r.uploadSet(set, rows, lengths); err != nil {
					return err
				}
				// Every length of the set in one pass of the oracle
				// (a per-length set: its one length).
				want := nkvs
				if set.PerLength() {
					want = []int{nkv}
				}
				if refs, err = r.references(in, want); err != nil {
					return err
				}
			}
			if err := r.checkAt(set, nkv, lengths, refs[nkv], log, set == oracle.SetUniform); err != nil {
				return err
			}
		}
	}
	return nil
}

// references is the oracle's output at each gate length of nkvs (the
// lengths gateLengths gives), from one call.
func (r *pointRun) references(in *oracle.Inputs, nkvs []int) (map[int]oracle.Output, error) {
	launches := make([][]int, len(nkvs))
	for i, n := range nkvs {
		launches[i] = shapeLengths(n, r.p.Config.Shape)
	}
	t0 := time.Now()
	outs, err := r.b.inputCache().references(in, launches)
	r.tOracle += time.Since(t0)
	if err != nil {
		return nil, err
	}
	refs := make(map[int]oracle.Output, len(nkvs))
	for i, n := range nkvs {
		refs[n] = outs[i]
	}
	return refs, nil
}

// checkAt runs the point's kernel (and its twin) once at nkv on the set's
// uploaded inputs and judges the outputs against ref, the oracle's; on
// the uniform set (repeat) it also runs the
// determinism repeat and the stale-rows gate.
func (r *pointRun) checkAt(set oracle.InputSet, nkv int, lengths []int, ref oracle.Output, log *gateLog, repeat bool) error {
	p, c := r.p, &r.p.Config
	s := c.Shape
	tag := func(g results.Gate) results.Gate { g.Inputs = string(set); return g }
	o, err := r.runOutputs(r.k, c, r.geometryAt(r.g, nkv), lengths)
	if err != nil {
		return fmt.Errorf("gate run at nkv %d (%s inputs): %w", nkv, set, err)
	}
	log.add(tag(writtenGate(nkv, p.Seed, o, r.l.gatedSlots(s), s.HeadDim)))
	bounds, waiver := r.setBounds(set)
	m, err := oracle.Compare(floats(o.out), ref.Out, bounds)
	if err != nil {
		return err
	}
	log.add(tag(waived(toleranceGate(nkv, p.Seed, m, bounds), waiver)))
	if err := r.lseGate(nkv, o.lse, ref.LSE, log, tag); err != nil {
		return err
	}
	var o2, to outputs
	if repeat {
		o2, err = r.runOutputs(r.k, c, r.geometryAt(r.g, nkv), lengths)
		if err != nil {
			return fmt.Errorf("repeated gate run at nkv %d: %w", nkv, err)
		}
		log.add(tag(outputsGate(results.GateDeterminism, nkv, p.Seed, o, o2,
			"the same launch twice gave different bytes (a race, or an order of atomic updates)")))
	}
	if r.twin != nil {
		to, err = r.runOutputs(r.twin, &p.Twin.Config, r.twinG, lengths)
		if err != nil {
			return fmt.Errorf("bitwise twin %s at nkv %d: %w", p.Twin.Config.Variant, nkv, err)
		}
		for _, x := range o.named(to) {
			g := diffGate(results.GateBitwise, nkv, p.Seed, x.name, x.a, x.b)
			g.Twin = p.Twin.Config.Variant
			log.add(tag(g))
		}
	}
	if repeat {
		// On the uniform set, where the bytes to match were just made.
		if err := r.staleGate(nkv, lengths, o, log); err != nil {
			return err
		}
	}
	r.b.logf("%s: gates at nkv %d (%s): max_abs %.2g nmse %.2g", c.Variant, nkv, set, m.MaxAbs, m.NMSE)
	// No verdict keeps the bytes it judged.
	r.recycle(o.partial, o2.partial, to.partial)
	return nil
}

// freshGate runs the shortest gate length once more on the module that
// ran every gate so far and on a freshly loaded module of the same CUBIN:
// their bytes must agree. A kernel that keeps state in __device__ memory
// (the longest length seen, a counter) gives itself away here even when
// each gate length alone looked right.
func (r *pointRun) freshGate(ctx context.Context, log *gateLog) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, c := r.p, &r.p.Config
	s := c.Shape
	nkvs := gateNKVs(p.GateNKV, s.Capacity)
	nkv := slices.Min(nkvs)
	lengths := shapeLengths(nkv, s)
	if _, err := r.uploadSet(oracle.SetUniform, slices.Max(nkvs), lengths); err != nil {
		return err
	}
	g := r.geometryAt(r.g, nkv)
	before, err := r.runOutputs(r.k, c, g, lengths)
	if err != nil {
		return fmt.Errorf("fresh-module gate at nkv %d: %w", nkv, err)
	}
	k, err := r.freshModule(g)
	if err != nil {
		return err
	}
	defer r.b.gpu.unload(k)
	fresh, err := r.runOutputs(k, c, g, lengths)
	if err != nil {
		return fmt.Errorf("fresh-module gate at nkv %d, fresh module: %w", nkv, err)
	}
	log.ref = &launchBytes{nkv: nkv, outputs: before}
	gate := outputsGate(results.GateFresh, nkv, p.Seed, fresh, before,
		"a freshly loaded module differs from the module that ran the gates (state kept in device memory between launches)")
	gate.Inputs = string(oracle.SetUniform)
	log.add(gate)
	return nil
}

// outputsGate compares two runs' outputs byte for byte, buffer by buffer
// in the order of named, and reports the first that differs; why prefixes
// the detail of a difference. A pass is recorded as out's, as it was
// before lse was compared.
func outputsGate(kind results.GateKind, nkv int, seed uint64, a, b outputs, why string) results.Gate {
	var pass results.Gate
	for _, x := range a.named(b) {
		g := diffGate(kind, nkv, seed, x.name, x.a, x.b)
		if !g.Pass {
			g.Detail = why + ": " + g.Detail
			return g
		}
		if x.name == "out" {
			pass = g
		}
	}
	return pass
}

// A namedPair is one buffer of two runs' outputs.
type namedPair struct {
	name string
	a, b []byte
}

// named pairs o's buffers with b's: partial (upstream of out, so its
// difference is the cause), out, then lse when o has it.
func (o outputs) named(b outputs) []namedPair {
	out := []namedPair{{"partial", o.partial, b.partial}, {"out", o.out, b.out}}
	if o.lse != nil || b.lse != nil {
		out = append(out, namedPair{"lse", o.lse, b.lse})
	}
	return out
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

// bounds are the point's tolerance, with out's dtype for the allowance
// of its rounding (oracle.Bounds).
func (r *pointRun) bounds() oracle.Bounds {
	t := r.p.Tol
	return oracle.Bounds{MaxAbs: t.MaxAbs, MaxRel: t.MaxRel, NMSE: t.NMSE, OutDtype: r.l.outDtype}
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
func (r *pointRun) poison() error {
	d, w := r.b.gpu, r.view()
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
func (r *pointRun) readBack() (outputs, error) {
	d, w, s := r.b.gpu, r.view(), r.p.Config.Shape
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
func (r *pointRun) runOutputs(k *kernelPair, c *results.Config, g geometry, lengths []int) (outputs, error) {
	if err := r.setPositions(lengths); err != nil {
		return outputs{}, err
	}
	if err := r.poison(); err != nil {
		return outputs{}, err
	}
	if err := r.sealInputs(); err != nil {
		return outputs{}, err
	}
	if err := r.pair(k, c, g); err != nil {
		return outputs{}, err
	}
	o, err := r.readBack()
	if err != nil {
		return outputs{}, err
	}
	return o, r.afterLaunch(slices.Max(lengths))
}
