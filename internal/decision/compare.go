package decision

import (
	"math"
	"strconv"

	"golang.org/x/perf/benchmath"

	"github.com/ktune/ktune/internal/stats"
)

// Alpha is the significance level of every comparison ktune makes (the
// landing gate, compare, what to ship, the dispatch table and the
// search's drops): a difference whose Mann-Whitney U p-value is not below
// it is noise.
const Alpha = 0.05

// AlphaText is Alpha as help texts and messages print it ("0.05"), so
// that none types the level again.
func AlphaText() string { return strconv.FormatFloat(Alpha, 'f', -1, 64) }

// A Change is the comparison of an old and a new sample of one probe at
// one point: stats.Compare at Alpha, with the interval of the change.
type Change struct {
	// Old and New are the medians with their 95% confidence intervals (ns).
	Old, New benchmath.Summary
	// DeltaPct is the Hodges-Lehmann estimate of new/old − 1 in percent
	// (the median of the ratios of every new sample to every old one),
	// whatever P says: the centre of RatioLo..RatioHi, the estimate that
	// goes with the U test. The ratio of the two medians is another
	// estimator, which need not lie inside that interval.
	DeltaPct float64
	// P is the Mann-Whitney U p-value; Significant is P < Alpha.
	P           float64
	N1, N2      int
	Significant bool
	// RatioLo and RatioHi are the 95% confidence interval of new/old − 1
	// (a fraction) that goes with the U test: the Hodges-Lehmann interval
	// of the shift between the samples' logarithms. They are infinite
	// when the sample counts are too small for an interval.
	RatioLo, RatioHi float64
	// Powerless is set when the sample counts cannot reach Alpha at all:
	// the smallest p-value the U test can give with N1 and N2 samples is
	// above it, so "not significant" says nothing.
	Powerless bool
	Warnings  []string
}

// Compare compares two samples of one probe (ns) at Alpha through
// stats.Compare, the one test of "are these two samples different".
func Compare(old, new []float64) Change {
	c := stats.Compare(old, new, Alpha)
	ch := Change{Old: c.Old, New: c.New, P: c.P, N1: c.N1, N2: c.N2, Significant: c.Significant, Powerless: !c.Decidable,
		RatioLo: c.ChangeLo, RatioHi: c.ChangeHi}
	if !math.IsNaN(c.Change) {
		ch.DeltaPct = c.Change * 100
	}
	for _, w := range append(append(c.Warnings, ch.Old.Warnings...), ch.New.Warnings...) {
		ch.Warnings = append(ch.Warnings, w.Error())
	}
	return ch
}

// SamplesToDecide estimates how many samples per side would let c be
// decided against threshold (a fraction): enough for the U test to reach
// Alpha and for the interval of the change to be finite, and, since an
// interval narrows as 1/√n, enough to bring the ratio's upper bound from
// where it is down to the threshold around the observed change.
func SamplesToDecide(c *Change, threshold float64) int {
	n := max(c.N1, c.N2)
	need := max(stats.SamplesToDecide(Alpha), stats.SamplesForInterval(stats.Confidence))
	half := c.RatioHi - c.DeltaPct/100
	room := threshold - c.DeltaPct/100
	if !math.IsInf(c.RatioHi, 0) && half > 0 && room > 0 {
		need = max(need, int(math.Ceil(float64(n)*(half/room)*(half/room))))
	}
	return max(need, n+1)
}
