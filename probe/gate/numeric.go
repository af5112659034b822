package gate

import (
	"context"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// numeric runs the written, tolerance and bitwise gates at every gate
// length on every input set, each set walking the lengths in its own
// order; on the uniform set each launch is also repeated and the two
// compared byte for byte (a race or an atomic summation order shows as a
// difference), and the stale gate runs.
var numeric = Gate{
	Name: "numeric",
	Kinds: []results.GateKind{results.GateWritten, results.GateTolerance, results.GateDeterminism,
		results.GateBitwise, results.GateStale},
	Settings: []string{"GateNKV", "Tol", "Waivers", "Twin", "Stale"},
	Run:      runNumeric,
}

func runNumeric(ctx context.Context, s Session, log *Log) error {
	p := s.Point()
	shape := p.Config.Shape
	nkvs := NKVs(p.GateNKV, shape.Capacity)
	rows := slices.Max(nkvs)
	for i, set := range oracle.SetsFor(shape) {
		if skipped(p, set) { // the spec's waiver, in the record (waivers.go)
			s.Logf("%s: %s inputs not run: %s", p.Config.Variant, set, p.WaiverTexts())
			continue
		}
		var in *oracle.Inputs
		var refs map[int]oracle.Output
		for _, nkv := range order(nkvs, i, p.Seed) {
			if err := ctx.Err(); err != nil {
				return err
			}
			lengths := Lengths(nkv, shape)
			if in == nil || set.PerLength() {
				var err error
				if in, err = s.UploadSet(set, rows, lengths); err != nil {
					return err
				}
				// Every length of the set in one pass of the oracle
				// (a per-length set: its one length).
				want := nkvs
				if set.PerLength() {
					want = []int{nkv}
				}
				if refs, err = references(s, in, want); err != nil {
					return err
				}
			}
			if err := checkAt(s, set, nkv, lengths, refs[nkv], log, set == oracle.SetUniform); err != nil {
				return err
			}
		}
	}
	return nil
}

// references is the oracle's output at each gate length of nkvs (the
// lengths Lengths gives), from one call.
func references(s Session, in *oracle.Inputs, nkvs []int) (map[int]oracle.Output, error) {
	launches := make([][]int, len(nkvs))
	for i, n := range nkvs {
		launches[i] = Lengths(n, s.Point().Config.Shape)
	}
	outs, err := s.References(in, launches)
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
// the uniform set (repeat) it also runs the determinism repeat and the
// stale-rows gate.
func checkAt(s Session, set oracle.InputSet, nkv int, lengths []int, ref oracle.Output, log *Log, repeat bool) error {
	p := s.Point()
	c := &p.Config
	shape := c.Shape
	tag := func(g results.Gate) results.Gate { g.Inputs = string(set); return g }
	k := s.Kernel()
	o, err := s.Launch(k, nkv, lengths)
	if err != nil {
		return fmt.Errorf("gate run at nkv %d (%s inputs): %w", nkv, set, err)
	}
	log.Add(tag(Written(nkv, p.Seed, o, s.GatedSlots(), shape.HeadDim)))
	bounds, waiver := setBounds(p, s.Bounds(), set)
	m, err := oracle.Compare(floats(o.Out), ref.Out, bounds)
	if err != nil {
		return err
	}
	log.Add(tag(waived(Tolerance(nkv, p.Seed, m, bounds), waiver)))
	if err := lse(p, nkv, o.LSE, ref.LSE, log, tag); err != nil {
		return err
	}
	var o2, to Outputs
	if repeat {
		o2, err = s.Launch(k, nkv, lengths)
		if err != nil {
			return fmt.Errorf("repeated gate run at nkv %d: %w", nkv, err)
		}
		log.Add(tag(Same(results.GateDeterminism, nkv, p.Seed, o, o2,
			"the same launch twice gave different bytes (a race, or an order of atomic updates)")))
	}
	if twin := s.Twin(); twin != nil {
		to, err = s.Launch(twin, nkv, lengths)
		if err != nil {
			return fmt.Errorf("bitwise twin %s at nkv %d: %w", p.Twin.Config.Variant, nkv, err)
		}
		for _, x := range o.named(to) {
			g := diffGate(results.GateBitwise, nkv, p.Seed, x.name, x.a, x.b)
			g.Twin = p.Twin.Config.Variant
			log.Add(tag(g))
		}
	}
	if repeat {
		// On the uniform set, where the bytes to match were just made.
		if err := stale(s, nkv, lengths, o, log); err != nil {
			return err
		}
	}
	s.Logf("%s: gates at nkv %d (%s): max_abs %.2g nmse %.2g", c.Variant, nkv, set, m.MaxAbs, m.NMSE)
	// No verdict keeps the bytes it judged.
	s.Recycle(o.Partial, o2.Partial, to.Partial)
	return nil
}

// stale runs the point's kernel at nkv over uniform inputs whose rows
// past each length hold NaN, Inf and large values (Session.StaleLaunch),
// and compares with fill, the launch over the workspace's finite fill
// (partial, out and a declared lse, byte for byte): rows past the length
// may not change a single bit. Past each sequence's length an engine's
// cache holds whatever was there (uninitialised pages, a recycled
// sequence's rows, NaN), and a kernel that masks a tile past the length
// by multiplying with a zero weight (0·NaN = NaN) is right on a finite
// fill. Where the spec declares the engine's cache finite there
// (plan.Point.Stale), the rows hold large finite values alone, and the
// verdict names the declaration (its waiver), so that it never reads as
// the verdict over NaN and Inf.
func stale(s Session, nkv int, lengths []int, fill Outputs, log *Log) error {
	p := s.Point()
	if !slices.ContainsFunc(lengths, func(n int) bool { return n < p.Config.Shape.Capacity }) {
		return nil // every sequence at the capacity: nothing lies past it
	}
	o, err := s.StaleLaunch(nkv, lengths)
	if err != nil {
		return fmt.Errorf("stale-rows gate at nkv %d: %w", nkv, err)
	}
	what := "NaN, Inf and large values in the rows past each length changed the outputs (they reached them)"
	if p.Stale.Declared() {
		what = "large finite values in the rows past each length changed the outputs (they reached them)"
	}
	g := Same(results.GateStale, nkv, p.Seed, fill, o, what)
	g.Inputs = string(oracle.SetUniform)
	if p.Stale.Declared() {
		g = waived(g, p.Stale.String())
	}
	log.Add(g)
	return nil
}
