package stats

import (
	"encoding/json"
	"math"
	"os"
	"strings"
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
	if c := Compare(old, slow, 0.05); !(c.ChangeLo > 0.05 && c.ChangeHi < 0.15) {
		t.Errorf("interval of a 10%% slowdown %g..%g", c.ChangeLo, c.ChangeHi)
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

// The exact distribution of U gives the critical values of the published
// tables (two-sided α=0.05: U ≤ 0 at 4+4, 2 at 5+5, 3 at 3+10, 23 at 10+10, 127 at
// 20+20) and the smallest p MinP computes, and the normal
// approximation takes over without a jump.
func TestUCritical(t *testing.T) {
	for _, tc := range []struct{ n, m, k int }{{3, 3, 0}, {4, 4, 1}, {5, 5, 3}, {10, 10, 24}, {20, 20, 128}, {3, 10, 4}} {
		if got := uCritical(tc.n, tc.m, 0.025); got != tc.k {
			t.Errorf("uCritical(%d, %d) = %d, want %d", tc.n, tc.m, got, tc.k)
		}
	}
	for _, nm := range [][2]int{{3, 3}, {4, 7}, {10, 10}} {
		c := uCounts(nm[0], nm[1])
		total := 0.0
		for _, v := range c {
			total += v
		}
		if got, want := 2*c[0]/total, MinP(nm[0], nm[1]); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%d+%d: smallest p %g, MinP %g", nm[0], nm[1], got, want)
		}
	}
	exact, approx := uCritical(20, 20, 0.025), uCritical(21, 20, 0.025)
	if approx < exact || approx > exact+10 {
		t.Errorf("uCritical 20+20 exact %d, 21+20 normal %d", exact, approx)
	}
}

// The interval of the ratio holds the true factor: the landed samples
// of slice.jsonl against themselves ×2 (every pairwise ratio then
// brackets 2), and against themselves (it brackets 1).
func TestRatioCI(t *testing.T) {
	for _, r := range sliceCold(t) {
		if !r.Landed {
			continue
		}
		m := r
		if len(m.SamplesNS) < 10 {
			continue
		}
		twice := make([]float64, len(m.SamplesNS))
		for i, v := range m.SamplesNS {
			twice[i] = 2 * v
		}
		est, lo, hi := changeInterval(m.SamplesNS, twice, Confidence)
		if !(lo <= 1 && 1 <= hi) || math.IsInf(hi, 0) || math.Abs(est-1) > 1e-12 {
			t.Errorf("nkv=%d: ×2 gives %+.3f [%+.3f, %+.3f], want +1 inside an interval around +1", r.Config.NKV, est, lo, hi)
		}
		est, lo, hi = changeInterval(m.SamplesNS, m.SamplesNS, Confidence)
		if !(lo <= 0 && 0 <= hi) || est != 0 {
			t.Errorf("nkv=%d: itself gives %+.3f [%+.3f, %+.3f], want 0 inside an interval around 0", r.Config.NKV, est, lo, hi)
		}
		if est, lo, hi := changeInterval(m.SamplesNS[:3], twice[:3], Confidence); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) || math.Abs(est-1) > 1e-12 {
			t.Errorf("3+3 samples: %g [%g, %g], want +1 with no interval", est, lo, hi)
		}
	}
}

// The point estimate of the change lies inside its own interval for every
// pair of landed sample sets of slice.jsonl: Change is the median of the
// log-ratios whose order statistics bound it, where the ratio of medians
// can fall outside (the shapes of the two distributions differ).
func TestChangeInsideInterval(t *testing.T) {
	var sets [][]float64
	for _, m := range sliceCold(t) {
		if len(m.SamplesNS) >= 10 {
			sets = append(sets, m.SamplesNS)
		}
	}
	if len(sets) < 2 {
		t.Fatalf("%d cold sample sets in slice.jsonl, want at least 2", len(sets))
	}
	for i := 1; i < len(sets); i++ {
		c := Compare(sets[i-1], sets[i], 0.05)
		if !(c.ChangeLo <= c.Change && c.Change <= c.ChangeHi) {
			t.Errorf("pair %d: change %+.4f outside [%+.4f, %+.4f]", i, c.Change, c.ChangeLo, c.ChangeHi)
		}
	}
}

// A coldSet is one record's cold samples in the committed slice.jsonl,
// read here rather than through package results, which records Summary
// and so sits above stats.
type coldSet struct {
	Landed    bool
	SamplesNS []float64
	Config    struct{ NKV int }
}

// sliceCold returns the cold sample sets of the committed slice.jsonl,
// in file order.
func sliceCold(t *testing.T) []coldSet {
	t.Helper()
	data, err := os.ReadFile("../../experiments/results/h200/slice.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []coldSet
	for line := range strings.Lines(string(data)) {
		var r struct {
			Landed bool `json:"landed"`
			Config struct {
				NKV int `json:"nkv"`
			} `json:"config"`
			Probes []struct {
				Probe     string    `json:"probe"`
				SamplesNS []float64 `json:"samples_ns"`
			} `json:"probes"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		for _, p := range r.Probes {
			if p.Probe == "cold" {
				c := coldSet{Landed: r.Landed, SamplesNS: p.SamplesNS}
				c.Config.NKV = r.Config.NKV
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		t.Fatal("slice.jsonl holds no cold samples")
	}
	return out
}
