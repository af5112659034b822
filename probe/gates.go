package probe

// The gates' step of a run: the gates of package gate (gate.Registry) run
// over the point's session (session.go), once per GateKey.

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/probe/gate"
)

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
		if g.Run == nil {
			continue // recorded elsewhere (g.By)
		}
		if err := g.Run(ctx, &r.session, log); err != nil {
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
	if len(p.Waivers) > 0 || p.Stale.Declared() {
		b.logf("%s: gates passed %v under the spec's waivers: %s", p.Config.Variant, v.pass, strings.Join(p.WaiverTexts(), "; "))
	}
	return v.pass, nil
}

// timedLengthGate judges a point whose group's gates ran on an earlier
// point at its own timed lengths, when they pass the gate lengths
// (gate.TimedLengths); a failure fails the point and the group.
func (r *pointRun) timedLengthGate(ctx context.Context) (bool, error) {
	log := &gate.Log{}
	if err := gate.TimedLengths(ctx, &r.session, log); err != nil {
		return false, err
	}
	r.rec.Gates = append(r.rec.Gates, log.Gates...)
	pass := log.Pass()
	if v := r.b.gates[r.p.GateKey]; !pass && v != nil {
		v.pass = false
		for _, g := range log.Gates {
			if !g.Pass {
				v.gates = append(v.gates, g)
			}
		}
	}
	return pass, nil
}
