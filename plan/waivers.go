package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/spec"
)

// A Waiver is a spec's decision about one input set of a point's gates
// (spec.InputWaiver), resolved at the point: the set is skipped, or
// judged by Tol, the set's own bounds with the point's for the fields
// the spec left out. Every waiver goes into the point's hash (keys.go),
// its record and the gates it loosened (probe), so a pass never hides one.
type Waiver struct {
	Inputs string
	Skip   bool
	Tol    Tolerance
	Reason string
}

// String is the waiver as records, logs and the hash state it.
func (w Waiver) String() string {
	if w.Skip {
		return fmt.Sprintf("%s: not applicable (%s)", w.Inputs, w.Reason)
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return fmt.Sprintf("%s: own bounds max_abs %s max_rel %s nmse %s (%s)", w.Inputs, g(w.Tol.MaxAbs), g(w.Tol.MaxRel), g(w.Tol.NMSE), w.Reason)
}

// waivers resolves a spec's input-set decisions against a point's bounds.
func waivers(g *spec.Gates, tol Tolerance) []Waiver {
	var out []Waiver
	for _, iw := range g.Inputs {
		w := Waiver{Inputs: iw.Set, Skip: iw.Skip, Reason: iw.Reason}
		if !iw.Skip {
			w.Tol = tol
			for _, f := range []struct{ dst, src *float64 }{{&w.Tol.MaxAbs, &iw.Bounds.MaxAbs}, {&w.Tol.MaxRel, &iw.Bounds.MaxRel}, {&w.Tol.NMSE, &iw.Bounds.NMSE}} {
				if *f.src != 0 {
					*f.dst = *f.src
				}
			}
		}
		out = append(out, w)
	}
	return out
}

// WaiverFor returns the point's waiver of an input set, if it has one.
func (p *Point) WaiverFor(set string) (Waiver, bool) {
	for _, w := range p.Waivers {
		if w.Inputs == set {
			return w, true
		}
	}
	return Waiver{}, false
}

// WaiverTexts are the point's waivers as text, for its record: its
// input-set waivers, then, for a variant the engine never captures in a
// CUDA graph (graph: never), NeverCapturedText, since the replay gate
// does not run there and a verdict on the point holds without it.
func (p *Point) WaiverTexts() []string {
	var out []string
	for _, w := range p.Waivers {
		out = append(out, w.String())
	}
	if p.NeverCaptured {
		out = append(out, NeverCapturedText)
	}
	return out
}

// NeverCapturedText is the waiver a point of a graph: never variant
// records: the gate and the probe its spec leaves out, and why.
const NeverCapturedText = "replay gate: not run, nor the graph probe (graph: never: the engine never captures this kernel in a CUDA graph)"

// waiverText is the hash text of a point's waivers, "" without any.
func waiverText(ws []Waiver) string {
	var parts []string
	for _, w := range ws {
		parts = append(parts, fmt.Sprintf("%s skip=%v %v %q", w.Inputs, w.Skip, w.Tol, w.Reason))
	}
	return strings.Join(parts, "; ")
}
