package main

import (
	"io"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

// TestCompileFacts compiles a spec's points with NVRTC alone and reads
// their facts: every point of a built-in kernel builds and has the
// registers of its partial kernel; the two nkv of one configuration
// share one kernel, so their facts agree.
func TestCompileFacts(t *testing.T) {
	needNVRTC(t)
	path := buildCheckSpec(t)
	s, err := spec.Load(path, variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	pl, err := plan.Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	facts, err := compileFacts("sm_90", pl.Points, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != len(pl.Points) || len(pl.Points) != 2 {
		t.Fatalf("facts of %d points, plan has %d", len(facts), len(pl.Points))
	}
	a, b := facts[pl.Points[0].Hash], facts[pl.Points[1].Hash]
	if !a.Builds || len(a.Resources) == 0 || a.Resources[0].Registers <= 0 {
		t.Errorf("facts %+v", a)
	}
	if len(a.Resources) != len(b.Resources) || a.Resources[0] != b.Resources[0] {
		t.Errorf("one kernel, two facts: %+v, %+v", a, b)
	}
}
