package probe

import (
	"testing"

	"github.com/ktune/ktune/internal/results"
)

func TestClockArithmetic(t *testing.T) {
	if got := clockMHz(1_980_000, 1_000_000); got != 1980 {
		t.Errorf("clockMHz = %v", got)
	}
	if clockMHz(5, 0) != 0 {
		t.Error("zero time")
	}
	// 75% of 1980 is 1485.
	if got := throttled([]float64{1980, 1500, 1484, 900}, 1980); got != 2 {
		t.Errorf("throttled = %d, want 2", got)
	}
	if got := threadShare(8, 256, 2048); got != 1 {
		t.Errorf("occupancy = %v", got)
	}
	if got := threadShare(16, 32, 2048); got != 0.25 {
		t.Errorf("occupancy = %v", got)
	}
}

// TestPointGeometry: the probe launches what the plan resolved, the ABI's
// default included (the plan is its one home).
func TestPointGeometry(t *testing.T) {
	p := planned(t, abiSpec, nil)
	g := pointGeometry(p.Points[0])
	if g.grid != [3]int{8, 28, 16} || g.block != [3]int{32, 1, 1} || g.cgrid != [3]int{28, 16, 1} || g.cblock != [3]int{128, 1, 1} || len(g.steps) != 2 {
		t.Errorf("d2: %+v", g)
	}
}

func TestFailedGates(t *testing.T) {
	gs := []results.Gate{
		{Kind: "written", NKV: 1, Pass: true},
		{Kind: "tolerance", NKV: 29, Detail: "max_abs 1 > 0.002"},
		{Kind: "bitwise", NKV: 29}, {Kind: "bitwise", NKV: 52}, {Kind: "replay", NKV: 1},
	}
	got := failedGates(gs)
	want := "4 gate(s) failed: tolerance at nkv 29: max_abs 1 > 0.002; bitwise at nkv 29; bitwise at nkv 52; 1 more"
	if got != want {
		t.Errorf("failedGates = %q\nwant %q", got, want)
	}
}
