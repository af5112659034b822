package oracle

import (
	"github.com/ktune/ktune/internal/abi"
	"math"
	"testing"

	"github.com/ktune/ktune/internal/kvtype"
)

func TestCompare(t *testing.T) {
	ref := []float64{1, -2, 0.0001, 4}
	out := []float32{1.5, -2, 0.0003, 4}
	m, err := Compare(out, ref, Bounds{MaxAbs: 0.1, MaxRel: 0.1, NMSE: 1})
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
	// Element-wise bound 0.1 + 0.1·|ref|: the 0.5 error on ref 1 (limit
	// 0.2) is outside, 2.5× the bound; the 0.0002 error on ref 1e-4 (limit
	// 0.10001) is inside.
	if m.Outside != 1 || math.Abs(m.Worst-2.5) > 1e-9 {
		t.Errorf("Outside %d Worst %v, want 1 and 2.5", m.Outside, m.Worst)
	}
	if m.Pass(Bounds{MaxAbs: 0.1, MaxRel: 0.1, NMSE: 1}) {
		t.Error("an element outside its bound passed")
	}
}

// TestCompareAbsOrRel: an element passes on the absolute OR the relative
// part of its bound (allclose), so a small error on a near-zero output,
// large relative to it, does not fail a kernel whose outputs are all
// within the absolute bound.
func TestCompareAbsOrRel(t *testing.T) {
	ref := []float64{2e-3, 1}
	out := []float32{2e-3 + 1.5e-4, 1 + 0.01}
	b := Bounds{MaxAbs: 2e-4, MaxRel: 0.02, NMSE: 1e-3}
	m, err := Compare(out, ref, b)
	if err != nil {
		t.Fatal(err)
	}
	if m.MaxRel < 0.07 {
		t.Fatalf("MaxRel %v: the test needs a large relative error on the small output", m.MaxRel)
	}
	if m.Outside != 0 || !m.Pass(b) {
		t.Errorf("within 2e-4 + 0.02·|ref| everywhere, got %+v", m)
	}
	tight := Bounds{MaxAbs: 1e-4, MaxRel: 0.005, NMSE: 1e-3}
	m, _ = Compare(out, ref, tight)
	if m.Outside != 2 || m.Pass(tight) {
		t.Errorf("both elements exceed 1e-4 + 0.005·|ref|, got %+v", m)
	}
}

func TestCompareNaNNeverPasses(t *testing.T) {
	ref := []float64{1, 2, 3}
	out := []float32{1, float32(math.NaN()), float32(math.Inf(1))}
	inf := Bounds{MaxAbs: math.Inf(1), MaxRel: math.Inf(1), NMSE: math.Inf(1)}
	m, err := Compare(out, ref, inf)
	if err != nil {
		t.Fatal(err)
	}
	if m.NaNs != 2 {
		t.Errorf("NaNs %d, want 2", m.NaNs)
	}
	if m.MaxAbs != 0 || m.NMSE != 0 {
		t.Errorf("the finite element is exact, got %+v", m)
	}
	if m.Pass(inf) {
		t.Error("a NaN passed unbounded tolerances")
	}
}

func TestCompareLengthMismatch(t *testing.T) {
	if _, err := Compare(make([]float32, 2), make([]float64, 3), Bounds{}); err == nil {
		t.Error("want an error")
	}
}

func TestHalfULP(t *testing.T) {
	for _, c := range []struct {
		dtype abi.Dtype
		x     float64
		want  float64
	}{
		{"f16", 1, 0x1p-11}, {"f16", 1.5, 0x1p-11}, {"f16", 2, 0x1p-10}, {"f16", -3, 0x1p-10},
		{"f16", 1e-6, 0x1p-25}, {"f16", 0, 0x1p-25}, // subnormals: spacing 2^-24
		{"bf16", 1, 0x1p-8}, {"f32", 1, 0}, {"", 5, 0},
	} {
		if got := HalfULP(c.dtype, c.x); got != c.want {
			t.Errorf("HalfULP(%s, %g) = %g, want %g", c.dtype, c.x, got, c.want)
		}
	}
}

// An f16-out kernel that rounds correctly passes on tiny outputs; the
// same error on f32 outputs fails, and an error beyond the format's
// rounding fails in both.
func TestCompareOutDtype(t *testing.T) {
	ref := []float64{3.1e-7, 5.3e-7, 1.7e-6, 2.9e-6}
	out := make([]float32, len(ref))
	for i, r := range ref {
		out[i] = float32(kvtype.F16ToF64(kvtype.F32ToF16(float32(r)))) // what an f16 store holds
	}
	b := Bounds{MaxAbs: 1e-9, MaxRel: 2e-2, NMSE: 1e-6}
	if m, _ := Compare(out, ref, b); m.Pass(b) {
		t.Errorf("f32 bounds passed f16-rounded outputs: %+v", m)
	}
	b.OutDtype = "f16"
	if m, _ := Compare(out, ref, b); !m.Pass(b) {
		t.Errorf("f16 rounding failed f16-out bounds: %+v", m)
	}
	out[2] *= 1.1 // a 10% error: the kernel's, not the format's
	if m, _ := Compare(out, ref, b); m.Pass(b) {
		t.Errorf("a 10%% error passed: %+v", m)
	}
}
