// Package stats summarizes timing samples and decides when a probe has
// taken enough of them: order statistics that are robust to the long right
// tail of GPU timings (a preempted sample, a clock ramp), and a stopping
// rule in the spirit of nvbench's (minimum samples, a noise bound, a time
// budget) that says so when it stops for budget rather than for noise.
package stats

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Quantile returns the p-quantile (0 ≤ p ≤ 1) of sorted by linear
// interpolation between the closest ranks: with h = (n−1)·p, it is
// x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]) (Hyndman–Fan type 7, the default of
// R and NumPy). The median of an even count is then the mean of the two
// middle values, and the quartiles of 1..5 are 2 and 4. sorted must be in
// ascending order and non-empty.
func Quantile(sorted []float64, p float64) float64 {
	h := float64(len(sorted)-1) * p
	lo := int(math.Floor(h))
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
}

// Summary holds order statistics of a sample set (all in ns).
type Summary struct {
	N        int     `json:"n"`
	Median   float64 `json:"median"`
	Min      float64 `json:"min"`
	Max      float64 `json:"max"`
	Q1       float64 `json:"q1"`
	Q3       float64 `json:"q3"`
	RelNoise float64 `json:"rel_noise"` // (Q3-Q1)/Median
}

// Summarize returns the order statistics of ns (any order; ns is not
// modified). RelNoise = (Q3 − Q1)/median is 0 when the median is not
// positive (an empty set, or timings that cannot be real), so that the
// record stays valid JSON; Rule never treats such a set as converged.
func Summarize(ns []float64) Summary {
	if len(ns) == 0 {
		return Summary{}
	}
	x := slices.Clone(ns)
	slices.Sort(x)
	s := Summary{
		N:      len(x),
		Min:    x[0],
		Max:    x[len(x)-1],
		Median: Quantile(x, 0.5),
		Q1:     Quantile(x, 0.25),
		Q3:     Quantile(x, 0.75),
	}
	if s.Median > 0 {
		s.RelNoise = (s.Q3 - s.Q1) / s.Median
	}
	return s
}

// A Rule is a probe's stopping rule.
type Rule struct {
	Warmup     int           // untimed launches before the first sample (the caller runs them)
	MinSamples int           // never stop for noise before this many samples
	MaxSamples int           // never take more than this many (0: no limit)
	MaxNoise   float64       // stop once RelNoise ≤ MaxNoise
	Budget     time.Duration // stop once this much time is spent (0: no limit)
}

// A Verdict is the rule's answer after a sample.
type Verdict struct {
	More      bool   // take another sample
	Converged bool   // when stopping: the noise bound was met
	Note      string // when stopping unconverged: why
}

// Decide says whether to take another sample, given the samples so far and
// the time spent on this probe. At least one sample is always taken. The
// budget wins over MinSamples: a kernel so slow that the minimum would
// overrun the budget stops, unconverged, with a note, rather than holding
// the sweep hostage.
func (r Rule) Decide(samples []float64, elapsed time.Duration) Verdict {
	n := len(samples)
	if n == 0 {
		return Verdict{More: true}
	}
	s := Summarize(samples)
	quiet := s.Median > 0 && s.RelNoise <= r.MaxNoise
	if quiet && n >= r.MinSamples {
		return Verdict{Converged: true}
	}
	noise := fmt.Sprintf("noise %.1f%% > %.1f%%", 100*s.RelNoise, 100*r.MaxNoise)
	if quiet {
		noise = fmt.Sprintf("fewer than the %d samples required", r.MinSamples)
	}
	if r.MaxSamples > 0 && n >= r.MaxSamples {
		return Verdict{Note: fmt.Sprintf("stopped at the %d-sample limit: %s", r.MaxSamples, noise)}
	}
	if r.Budget > 0 && elapsed >= r.Budget {
		return Verdict{Note: fmt.Sprintf("time budget %v spent after %d samples: %s", r.Budget, n, noise)}
	}
	return Verdict{More: true}
}
