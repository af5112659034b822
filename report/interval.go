package report

import (
	"math"

	"github.com/ktune/ktune/internal/stats"
)

// samplesToDecide estimates how many samples per side would let row be
// decided against threshold (a fraction): enough for the U test to reach
// Alpha and for the interval of the change to be finite, and, since an
// interval narrows as 1/√n, enough to bring the ratio's upper bound from
// where it is down to the threshold around the observed change.
func samplesToDecide(row *CompareRow, threshold float64) int {
	n := max(row.N1, row.N2)
	need := max(stats.SamplesToDecide(Alpha), stats.SamplesForInterval(confidence))
	half := row.RatioHi - row.DeltaPct/100
	room := threshold - row.DeltaPct/100
	if !math.IsInf(row.RatioHi, 0) && half > 0 && room > 0 {
		need = max(need, int(math.Ceil(float64(n)*(half/room)*(half/room))))
	}
	return max(need, n+1)
}
