package oracle

import (
	"math"
	"testing"
)

func TestCompare(t *testing.T) {
	ref := []float64{1, -2, 0.0001, 4}
	out := []float32{1.5, -2, 0.0003, 4}
	m, err := Compare(out, ref)
	if err != nil {
		t.Fatal(err)
	}
	// Worked by hand: errors 0.5, 0, 0.0002, 0. |ref| > 1e-3 only for
	// 1, -2, 4, so MaxRel = 0.5/1. NMSE = (0.25 + 4e-8)/(1+4+1e-8+16).
	if math.Abs(m.MaxAbs-0.5) > 1e-9 {
		t.Errorf("MaxAbs %v, want 0.5", m.MaxAbs)
	}
	if math.Abs(m.MaxRel-0.5) > 1e-9 {
		t.Errorf("MaxRel %v, want 0.5 (the 0.0001 reference is below RelFloor)", m.MaxRel)
	}
	if want := (0.25 + 4e-8) / (21 + 1e-8); math.Abs(m.NMSE-want) > 1e-9 {
		t.Errorf("NMSE %v, want %v", m.NMSE, want)
	}
	if m.NaNs != 0 {
		t.Errorf("NaNs %d", m.NaNs)
	}
	if m.Pass(Bounds{MaxAbs: 0.4, MaxRel: 1, NMSE: 1}) {
		t.Error("MaxAbs 0.5 passed a 0.4 bound")
	}
	if !m.Pass(Bounds{MaxAbs: 0.5, MaxRel: 0.5, NMSE: 0.02}) {
		t.Error("metrics at the bounds did not pass")
	}
}

func TestCompareNaNNeverPasses(t *testing.T) {
	ref := []float64{1, 2, 3}
	out := []float32{1, float32(math.NaN()), float32(math.Inf(1))}
	m, err := Compare(out, ref)
	if err != nil {
		t.Fatal(err)
	}
	if m.NaNs != 2 {
		t.Errorf("NaNs %d, want 2", m.NaNs)
	}
	if m.MaxAbs != 0 || m.NMSE != 0 {
		t.Errorf("the finite element is exact, got %+v", m)
	}
	if m.Pass(Bounds{MaxAbs: math.Inf(1), MaxRel: math.Inf(1), NMSE: math.Inf(1)}) {
		t.Error("a NaN passed unbounded tolerances")
	}
}

func TestCompareLengthMismatch(t *testing.T) {
	if _, err := Compare(make([]float32, 2), make([]float64, 3)); err == nil {
		t.Error("want an error")
	}
}
