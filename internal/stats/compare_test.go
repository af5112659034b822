package stats

import (
	"math"
	"testing"
)

func TestMinP(t *testing.T) {
	cases := []struct {
		n, m int
		want float64
	}{
		{3, 3, 0.1},       // 2/20
		{5, 5, 2.0 / 252}, // the fewest equal samples that can reach 0.05
		{4, 4, 2.0 / 70},  // 0.029: 4 per side already can
		{1, 10, 2.0 / 11}, // one sample is never enough at 0.05
		{0, 5, 1},
	}
	for _, c := range cases {
		if got := MinP(c.n, c.m); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("MinP(%d, %d) = %g, want %g", c.n, c.m, got, c.want)
		}
	}
	if n := SamplesToDecide(0.05); n != 4 {
		t.Errorf("SamplesToDecide(0.05) = %d, want 4 (2/70 < 0.05 ≤ 2/20)", n)
	}
}

// A 2x slower candidate with three samples a side is not "the same": the
// test cannot decide, and says so.
func TestCompareUndecidable(t *testing.T) {
	c := Compare([]float64{10, 10.1, 10.2}, []float64{20, 20.2, 20.4}, 0.05)
	if c.Decidable || c.Significant {
		t.Fatalf("3 vs 3: decidable %v significant %v, want neither", c.Decidable, c.Significant)
	}
	if math.Abs(c.Ratio-2) > 1e-9 {
		t.Errorf("ratio %g, want 2", c.Ratio)
	}
	if len(c.Warnings) == 0 {
		t.Error("no warning for an undecidable comparison")
	}
}

func TestCompareDecides(t *testing.T) {
	old := []float64{10, 10.1, 10.2, 10.1, 10.0, 10.3, 10.2, 10.1}
	same := []float64{10.1, 10.0, 10.2, 10.3, 10.1, 10.2, 10.0, 10.1}
	slow := []float64{11, 11.1, 11.2, 11.1, 11.0, 11.3, 11.2, 11.1}
	if c := Compare(old, slow, 0.05); !c.Decidable || !c.Significant || c.Ratio < 1.09 {
		t.Errorf("10%% slower: %+v", c)
	}
	if c := Compare(old, same, 0.05); !c.Decidable || c.Significant {
		t.Errorf("same: decidable %v significant %v p %g", c.Decidable, c.Significant, c.P)
	}
	if lo, hi := Compare(old, slow, 0.05).Range(); !(lo > 0.05 && hi < 0.15) {
		t.Errorf("range of a 10%% slowdown %g..%g", lo, hi)
	}
	if c := Compare(nil, slow, 0.05); c.Decidable || c.Significant || c.P != 1 {
		t.Errorf("empty side: %+v", c)
	}
}

// MinP agrees with benchmath's own p for fully separated samples, the
// case where the test's p is smallest.
func TestMinPMatchesBenchmath(t *testing.T) {
	for _, n := range []int{3, 4, 5, 6} {
		var a, b []float64
		for i := range n {
			a = append(a, 10+float64(i)*0.01)
			b = append(b, 20+float64(i)*0.01)
		}
		c := Compare(a, b, 0.05)
		if math.Abs(c.P-MinP(n, n)) > 1e-9 {
			t.Errorf("%d vs %d separated: benchmath p %g, MinP %g", n, n, c.P, MinP(n, n))
		}
	}
}
