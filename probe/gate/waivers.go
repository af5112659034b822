package gate

import (
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// Input-set waivers (plan.Waiver) in the gates: a skipped set is not run,
// a set with bounds of its own is judged by them as written, and every
// tolerance gate judged under a waiver names it (results.Gate.Waiver);
// the record lists the point's waivers (results.Record.Waivers), whether
// or not a gate used them, so that a pass never hides one.

// setBounds are the tolerance bounds of one input set at the point: the
// set's own when the spec gives it some (not scaled by its |V|: the
// owner wrote them for this set), else the point's (base) scaled as the
// set says (oracle.InputSet.Bounds); waiver is the waiver's text, ""
// when none applies.
func setBounds(p *plan.Point, base oracle.Bounds, set oracle.InputSet) (b oracle.Bounds, waiver string) {
	if w, ok := p.WaiverFor(string(set)); ok && !w.Skip {
		return oracle.Bounds{MaxAbs: w.Tol.MaxAbs, MaxRel: w.Tol.MaxRel, NMSE: w.Tol.NMSE, OutDtype: base.OutDtype}, w.String()
	}
	return set.Bounds(base, p.Config.Shape), ""
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
