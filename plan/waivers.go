package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/spec"
)

// A Waiver is a spec's decision about one input set of a point's gates
// (spec.InputWaiver), resolved at the point: the set is skipped, or
// judged by Bounds, the set's own bounds where the spec gives them; a
// field it leaves out (zero) is not waived: the set keeps the point's
// bound there as it applies to the set (scaled by its largest |V|, as
// without a waiver), never the point's unscaled one. Every waiver goes
// into the point's hash (keys.go), its record and the gates it loosened
// (probe), so a pass never hides one.
type Waiver struct {
	Inputs string
	Skip   bool
	Bounds Tolerance
	Reason string
}

// Over is the set's bounds under the waiver: set's, with each field the
// waiver gives replaced by it.
func (w Waiver) Over(set Tolerance) Tolerance {
	for _, f := range []struct{ dst, src *float64 }{{&set.MaxAbs, &w.Bounds.MaxAbs}, {&set.MaxRel, &w.Bounds.MaxRel}, {&set.NMSE, &w.Bounds.NMSE}} {
		if *f.src != 0 {
			*f.dst = *f.src
		}
	}
	return set
}

// String is the waiver as records, logs and the hash state it: the
// bounds it gives, and those it leaves as the set's.
func (w Waiver) String() string {
	if w.Skip {
		return fmt.Sprintf("%s: not applicable (%s)", w.Inputs, w.Reason)
	}
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	var own, kept []string
	for _, f := range []struct {
		name string
		v    float64
	}{{"max_abs", w.Bounds.MaxAbs}, {"max_rel", w.Bounds.MaxRel}, {"nmse", w.Bounds.NMSE}} {
		if f.v != 0 {
			own = append(own, f.name+" "+g(f.v))
		} else {
			kept = append(kept, f.name)
		}
	}
	text := fmt.Sprintf("%s: own bounds %s", w.Inputs, strings.Join(own, " "))
	if len(kept) > 0 {
		text += ", " + strings.Join(kept, " and ") + " the set's"
	}
	return text + " (" + w.Reason + ")"
}

// waivers resolves a spec's input-set decisions.
func waivers(g *spec.Gates) []Waiver {
	var out []Waiver
	for _, iw := range g.Inputs {
		w := Waiver{Inputs: iw.Set, Skip: iw.Skip, Reason: iw.Reason}
		if !iw.Skip {
			w.Bounds = Tolerance(iw.Bounds)
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
// does not run there and a verdict on the point holds without it, then
// the spec's declaration about the rows past each length (Stale), since
// the stale gate wrote no NaN or Inf there.
func (p *Point) WaiverTexts() []string {
	var out []string
	for _, w := range p.Waivers {
		out = append(out, w.String())
	}
	if p.NeverCaptured {
		out = append(out, NeverCapturedText)
	}
	if p.Stale.Declared() {
		out = append(out, p.Stale.String())
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
		parts = append(parts, fmt.Sprintf("%s skip=%v %v %q", w.Inputs, w.Skip, w.Bounds, w.Reason))
	}
	return strings.Join(parts, "; ")
}

// StaleRows is what a spec declares its engine's cache holds past each
// length (spec.StaleRows).
type StaleRows = spec.StaleRows

// StaleFinite declares finite values only (spec.StaleFinite).
const StaleFinite = spec.StaleFinite

// A StaleWaiver is the spec's declaration about the rows past each
// sequence's length (gates.stale), resolved at the point: under Rows
// StaleFinite the stale gate writes finite values only there (the KV
// type's ±max and other large finite values, no NaN or Inf: probe's
// staleBits), and the outputs must still be identical to the bit. The
// zero value declares nothing: the stale gate writes NaN and Inf too.
// A declaration goes into the point's hash (keys.go), its record's
// waivers and every stale gate it judged (results.Gate.Waiver), so that a
// finite-only pass never reads as the full one.
type StaleWaiver struct {
	Rows   StaleRows `json:",omitempty"`
	Reason string    `json:",omitempty"`
}

// Declared reports whether the spec declared anything.
func (w StaleWaiver) Declared() bool { return w != StaleWaiver{} }

// String is the declaration as records, logs and the hash state it.
func (w StaleWaiver) String() string {
	return fmt.Sprintf("stale gate: %s rows only past each length, no NaN or Inf (%s)", w.Rows, w.Reason)
}

// staleWaiver resolves a spec's declaration about the rows past each
// length, the zero value without one.
func staleWaiver(g *spec.Gates) StaleWaiver {
	if g.Stale == nil {
		return StaleWaiver{}
	}
	return StaleWaiver{Rows: g.Stale.Rows, Reason: g.Stale.Reason}
}
