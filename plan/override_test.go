package plan

import (
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// An override goes through plan building: the hashes it gives come from
// keys, like every point's, and change exactly when what the point
// measures changes.
func TestOverrideHashesThroughKeys(t *testing.T) {
	s := load(t, "testdata/mixed.yaml", testKernels(t))
	build := func(o Override) *Plan {
		t.Helper()
		p, err := BuildFrom(s, "sm_90", fixedFS, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	hashes := func(p *Plan) []string {
		var out []string
		for _, pt := range p.Points {
			out = append(out, pt.Hash)
		}
		return out
	}
	base := build(Override{})
	var same []results.Probe
	for _, name := range s.Probes {
		same = append(same, results.Probe(name))
	}
	if got := hashes(build(Override{Probes: same})); !slices.Equal(got, hashes(base)) {
		t.Error("an override that changes nothing changed the hashes")
	}
	ng := build(Override{NoGates: true})
	for i, pt := range ng.Points {
		one := []int{slices.Max(base.Points[i].GateNKV)} // the longest gate length, not the capacity
		if pt.Hash == base.Points[i].Hash || !slices.Equal(pt.GateNKV, one) || pt.Twin != nil || pt.ReplayNKV != nil || pt.CaptureNKV != 0 {
			t.Errorf("no-gates point %d: hash %s (was %s), gate lengths %v, twin %v", i, pt.Hash, base.Points[i].Hash, pt.GateNKV, pt.Twin != nil)
		}
	}
	if !slices.Equal(hashes(build(Override{NoGates: true})), hashes(ng)) {
		t.Error("the same override gave other hashes a second time: a no-gates sweep would not resume")
	}
	hot := build(Override{Probes: []results.Probe{results.ProbeHot}})
	if hot.Points[0].Hash == base.Points[0].Hash || !slices.Equal(hot.Points[0].Probes, []results.Probe{results.ProbeHot}) {
		t.Error("a probe override did not change the point")
	}
	// A screening copy is hashed the same way: distinct per sample count,
	// stable, and never above the spec's maximum.
	p := base.Points[0]
	a, b := p.WithSamples(3), p.WithSamples(4)
	if a.Hash == p.Hash || a.Hash == b.Hash || a.Hash != p.WithSamples(3).Hash {
		t.Errorf("screening hashes %s %s of %s: want distinct and stable", a.Hash, b.Hash, p.Hash)
	}
	if max := p.Measure.MaxSamples; max > 0 {
		if c := p.WithSamples(max + 10); c.Measure.MaxSamples != max {
			t.Errorf("screening above the maximum %d takes %d", max, c.Measure.MaxSamples)
		}
	}
}

// pdl: true builds the kernels with PDL=1, launches every kernel of the
// step after the first programmatically, and hashes both; the variants
// that do not depend on it keep their hashes.
func TestPDLVariant(t *testing.T) {
	s := load(t, "testdata/mixed.yaml", testKernels(t))
	base, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.Variants {
		if s.Variants[i].Name == "tr4" {
			s.Variants[i].PDL = true
		}
	}
	p, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	for i, pt := range p.Points {
		pdl := pt.Config.Variant == "tr4"
		if v, ok := pt.Config.Define(DefinePDL); ok != pdl || (pdl && v != "1") {
			t.Errorf("point %d (%s): PDL define %q %v", i, pt.Config.Variant, v, ok)
		}
		if len(pt.Launches) < 2 {
			t.Fatalf("point %d: %d launches", i, len(pt.Launches))
		}
		if pt.Launches[0].Programmatic || pt.Launches[1].Programmatic != pdl {
			t.Errorf("point %d (%s): programmatic %v %v", i, pt.Config.Variant, pt.Launches[0].Programmatic, pt.Launches[1].Programmatic)
		}
		// td2's twin is tr4: its gate key moved, and with it td2's hash.
		if changed := pt.Hash != base.Points[i].Hash; changed != (pdl || pt.Config.Variant == "td2") {
			t.Errorf("point %d (%s): hash changed %v", i, pt.Config.Variant, changed)
		}
	}
}
