package gate

import (
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// Input-set waivers (plan.Waiver) in the gates: a skipped set is not run,
// a set with bounds of its own is judged by them as written, and every
// tolerance gate judged under a waiver names it (results.Gate.Waiver), as
// every stale gate names the spec's declaration that the cache is finite
// past each length (plan.StaleWaiver, numeric.go); the record lists the
// point's waivers (results.Record.Waivers), whether or not a gate used
// them, so that a pass never hides one.

// setBounds are the tolerance bounds of one input set at the point: the
// point's (base) scaled as the set says (oracle.InputSet.Bounds), with
// each bound the spec's waiver gives the set in its place (not scaled by
// its |V|: the owner wrote them for this set); waiver is the waiver's
// text, "" when none applies. A bound the waiver leaves out stays the
// set's: a waiver of nmse alone loosens nmse alone.
func setBounds(p *plan.Point, base oracle.Bounds, set oracle.InputSet) (b oracle.Bounds, waiver string) {
	b = set.Bounds(base, p.Config.Shape)
	if w, ok := p.WaiverFor(string(set)); ok && !w.Skip {
		t := w.Over(plan.Tolerance{MaxAbs: b.MaxAbs, MaxRel: b.MaxRel, NMSE: b.NMSE})
		b.MaxAbs, b.MaxRel, b.NMSE = t.MaxAbs, t.MaxRel, t.NMSE
		return b, w.String()
	}
	return b, ""
}

// skipped reports whether the spec says set does not apply to the kernel.
func skipped(p *plan.Point, set oracle.InputSet) bool {
	w, ok := p.WaiverFor(string(set))
	return ok && w.Skip
}

// waived marks a gate judged under a waiver.
func waived(g results.Gate, waiver string) results.Gate {
	g.Waiver = waiver
	return g
}
