package report

import (
	"math"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// The smallest p-value of the U test for n+n samples: benchmath's own
// table (uTestMinP in anone.go) for n = 3 and 4, and the 3+3 case that
// lets "within noise" hide a 2x slowdown.
func TestMinUTestP(t *testing.T) {
	for _, tc := range []struct {
		n, m int
		want float64
	}{{3, 3, 0.1}, {4, 4, 0.02857142857142857}, {5, 5, 0.007936507936507936}, {3, 200, 2.0 / 1373701}} {
		if got := minUTestP(tc.n, tc.m); math.Abs(got-tc.want) > 1e-12*tc.want {
			t.Errorf("minUTestP(%d, %d) = %g, want %g", tc.n, tc.m, got, tc.want)
		}
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
