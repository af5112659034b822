package report

import (
	"math"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// The exact distribution of U gives the critical values of the published
// tables (two-sided α=0.05: U ≤ 0 at 4+4, 2 at 5+5, 3 at 3+10, 23 at 10+10, 127 at
// 20+20) and the smallest p stats.MinP computes, and the normal
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
		if got, want := 2*c[0]/total, stats.MinP(nm[0], nm[1]); math.Abs(got-want) > 1e-9*want {
			t.Errorf("%d+%d: smallest p %g, stats.MinP %g", nm[0], nm[1], got, want)
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
	for _, r := range loadH200(t, "slice.jsonl") {
		if !r.Landed {
			continue
		}
		m := r.Probe(results.ProbeCold)
		if m == nil || len(m.SamplesNS) < 10 {
			continue
		}
		twice := make([]float64, len(m.SamplesNS))
		for i, v := range m.SamplesNS {
			twice[i] = 2 * v
		}
		lo, hi := ratioCI(m.SamplesNS, twice, confidence)
		if !(lo <= 1 && 1 <= hi) || math.IsInf(hi, 0) {
			t.Errorf("nkv=%d: ×2 gives [%+.3f, %+.3f], want an interval around +1", r.Config.NKV, lo, hi)
		}
		lo, hi = ratioCI(m.SamplesNS, m.SamplesNS, confidence)
		if !(lo <= 0 && 0 <= hi) {
			t.Errorf("nkv=%d: itself gives [%+.3f, %+.3f], want an interval around 0", r.Config.NKV, lo, hi)
		}
		if lo, hi := ratioCI(m.SamplesNS[:3], twice[:3], confidence); !math.IsInf(lo, -1) || !math.IsInf(hi, 1) {
			t.Errorf("3+3 samples: [%g, %g], want no interval", lo, hi)
		}
	}
}

// With 3 samples a side, a change of 2x is not "~": the test could never
// have rejected equality, and compare says so with "?".
func TestCompareFewSamplesIsNotSame(t *testing.T) {
	var old []results.Record
	for _, r := range loadH200(t, "slice.jsonl") {
		if r.Landed {
			for i := range r.Probes {
				r.Probes[i].SamplesNS = r.Probes[i].SamplesNS[:3]
			}
			old = append(old, r)
		}
	}
	c, err := Compare(old, scaledVariant(old, "d2", 2))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range c.Rows {
		if !r.Powerless || r.Delta() != "?" {
			t.Errorf("%s nkv=%d %s: delta %q, powerless %v; want \"?\"", r.Config, r.NKV, r.Probe, r.Delta(), r.Powerless)
		}
	}
}
