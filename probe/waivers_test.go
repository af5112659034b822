package probe

import (
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A kernel that flushes f16 subnormals fails the subnormal input set
// alone. Without a waiver it fails its gates; with the set's own bounds
// it passes, every gate judged under them names the waiver and the
// record lists it; with the set not applicable it passes without a
// subnormal gate, and the record says why. A kernel that also fails
// another set fails whatever the subnormal waiver says.
func TestInputSetWaivers(t *testing.T) {
	const reason = "tmp_out is f16, as the engine keeps it"
	bounds := func(p *plan.Point) {
		p.Waivers = []plan.Waiver{{Inputs: "subnormal", Bounds: plan.Tolerance{MaxAbs: 1, MaxRel: 1, NMSE: 1}, Reason: reason}}
	}
	// nmse alone: the elementwise bounds stay the set's (scaled by its
	// tiny V), so flushed outputs still fail; they were once the point's
	// unscaled ones, and the waiver passed what it did not name.
	nmseOnly := func(p *plan.Point) {
		p.Waivers = []plan.Waiver{{Inputs: "subnormal", Bounds: plan.Tolerance{NMSE: 1}, Reason: reason}}
	}
	skip := func(p *plan.Point) { p.Waivers = []plan.Waiver{{Inputs: "subnormal", Skip: true, Reason: reason}} }
	for _, c := range []struct {
		name   string
		m      fakeModel
		edit   func(*plan.Point)
		status results.Status
		waiver string
	}{
		{"no waiver", fakeModel{ftz: true}, nil, results.StatusGateFailed, ""},
		{"own bounds", fakeModel{ftz: true}, bounds, results.StatusOK, "subnormal: own bounds max_abs 1 max_rel 1 nmse 1 (" + reason + ")"},
		{"not applicable", fakeModel{ftz: true}, skip, results.StatusOK, "subnormal: not applicable (" + reason + ")"},
		{"fails another set too", fakeModel{ftz: true, skipNewest: 64}, bounds, results.StatusGateFailed, "subnormal: own bounds"},
		{"nmse alone", fakeModel{ftz: true}, nmseOnly, results.StatusGateFailed, "subnormal: own bounds nmse 1, max_abs and max_rel the set's (" + reason + ")"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = c.m
			p := fakePoint(c.name, 100)
			if c.edit != nil {
				c.edit(p)
			}
			rec := run(t, fakeBackend(t, f), p)
			if rec.Status != c.status {
				t.Fatalf("status %s (failed %v), want %s", rec.Status, failedKinds(rec.Gates), c.status)
			}
			got := strings.Join(rec.Waivers, "; ")
			if c.waiver == "" && got != "" || !strings.Contains(got, c.waiver) {
				t.Errorf("record's waivers %q, want %q", got, c.waiver)
			}
			var subnormal []results.Gate
			for _, g := range rec.Gates {
				if g.Inputs == "subnormal" && g.Kind == results.GateTolerance {
					subnormal = append(subnormal, g)
				}
			}
			switch c.name {
			case "no waiver":
				if !slices.Contains(failedKinds(rec.Gates), "tolerance/subnormal") || len(failedKinds(rec.Gates)) != 1 {
					t.Errorf("failed %v, want tolerance/subnormal alone", failedKinds(rec.Gates))
				}
			case "own bounds":
				if len(subnormal) == 0 {
					t.Fatal("no subnormal tolerance gate")
				}
				for _, g := range subnormal {
					if g.Waiver != c.waiver || !g.Pass {
						t.Errorf("subnormal gate %+v: want a pass naming the waiver", g)
					}
				}
			case "not applicable":
				if len(subnormal) != 0 {
					t.Errorf("%d subnormal gates run, want none", len(subnormal))
				}
			case "fails another set too":
				if !slices.Contains(failedKinds(rec.Gates), "tolerance/peaked") {
					t.Errorf("failed %v, want tolerance/peaked", failedKinds(rec.Gates))
				}
			}
			for _, g := range rec.Gates {
				if g.Inputs != "subnormal" && g.Waiver != "" {
					t.Errorf("gate %s/%s names a waiver of another set: %q", g.Kind, g.Inputs, g.Waiver)
				}
			}
		})
	}
}
