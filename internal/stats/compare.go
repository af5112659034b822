package stats

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"golang.org/x/perf/benchmath"
)

// Confidence is the level of every confidence interval ktune prints.
const Confidence = 0.95

// A Comparison says whether two samples of timings differ, and whether the
// test could have said so at all. It is the one place where ktune decides
// "are these two samples different": compare, gate, the dispatch table and
// the search strategies all ask it.
//
// The test is Mann-Whitney U on the raw samples (benchmath's AssumeNothing):
// kernel times are a floor plus a right tail, far from normal. Like
// benchmath, a comparison carries its warnings next to its numbers; unlike
// a bare p-value, it also knows its power: with n and m samples and no
// ties, the smallest two-sided p the test can return is 2/C(n+m, n), so
// 3 against 3 can never go below 0.1 and "not significant" there means
// nothing. Decidable is false in that case, and callers must say
// "undecided", never "same".
type Comparison struct {
	Old, New benchmath.Summary // median with its Confidence interval
	N1, N2   int               // sample counts
	P        float64           // Mann-Whitney U two-sided p-value
	Alpha    float64           // significance level asked for
	// MinP is the smallest p the test can reach at these sample counts.
	MinP float64
	// Decidable reports MinP < Alpha: the test can reject at Alpha.
	Decidable bool
	// Significant reports P < Alpha (and so Decidable).
	Significant bool
	// Ratio is New's median over Old's (>1: New is slower).
	Ratio float64
	// Change is the Hodges-Lehmann estimate of New/Old − 1: the median of
	// the pairwise log-ratios, the point estimate of the same statistic
	// ChangeLo and ChangeHi bound, so it always lies between them (the
	// ratio of medians need not). NaN without samples on both sides.
	Change float64
	// ChangeLo and ChangeHi bound New/Old − 1 at Confidence: the interval
	// that inverts the same U test (changeInterval); ±Inf when the sample
	// counts are too small for one.
	ChangeLo, ChangeHi float64
	// Warnings are benchmath's, and ours when the test cannot decide.
	Warnings []error
}

// Compare compares old and new samples (any order; they are not modified)
// at significance level alpha.
func Compare(old, new []float64, alpha float64) Comparison {
	th := benchmath.DefaultThresholds
	th.CompareAlpha = alpha
	so := benchmath.NewSample(slices.Clone(old), &th)
	sn := benchmath.NewSample(slices.Clone(new), &th)
	c := Comparison{N1: len(old), N2: len(new), Alpha: alpha, MinP: MinP(len(old), len(new)), Ratio: math.NaN()}
	c.Change, c.ChangeLo, c.ChangeHi = changeInterval(old, new, Confidence)
	if len(old) > 0 {
		c.Old = benchmath.AssumeNothing.Summary(so, Confidence)
	}
	if len(new) > 0 {
		c.New = benchmath.AssumeNothing.Summary(sn, Confidence)
	}
	if len(old) == 0 || len(new) == 0 {
		c.P = 1
		c.Warnings = append(c.Warnings, fmt.Errorf("no samples on one side (%d vs %d)", len(old), len(new)))
		return c
	}
	cmp := benchmath.AssumeNothing.Compare(so, sn)
	c.P = cmp.P
	c.Warnings = append(c.Warnings, cmp.Warnings...)
	c.Decidable = c.MinP < alpha
	c.Significant = c.Decidable && c.P < alpha
	if c.Old.Center > 0 {
		c.Ratio = c.New.Center / c.Old.Center
	}
	if !c.Decidable {
		n := SamplesToDecide(alpha)
		c.Warnings = append(c.Warnings, fmt.Errorf("%d vs %d samples cannot reach α=%.2g (smallest p %.3g): need %d per side",
			c.N1, c.N2, alpha, c.MinP, n))
	}
	return c
}

// MinP is the smallest two-sided p-value of a Mann-Whitney U test of n
// against m samples without ties: both orderings that put every sample of
// one side before the other, 2/C(n+m, n).
func MinP(n, m int) float64 {
	if n == 0 || m == 0 {
		return 1
	}
	// log C(n+m, n) through lgamma: exact enough and no overflow.
	a, _ := math.Lgamma(float64(n + m + 1))
	b, _ := math.Lgamma(float64(n + 1))
	c, _ := math.Lgamma(float64(m + 1))
	return math.Min(1, 2*math.Exp(-(a-b-c)))
}

// SamplesToDecide is the smallest equal sample count per side at which a
// Mann-Whitney test can reach alpha.
func SamplesToDecide(alpha float64) int {
	for n := 1; n < 1000; n++ {
		if MinP(n, n) < alpha {
			return n
		}
	}
	return 1000
}

// SamplesForInterval is the smallest equal sample count per side for
// which the interval of the change at level conf is finite.
func SamplesForInterval(conf float64) int {
	n := 1
	for uCritical(n, n, (1-conf)/2) < 1 && n < 1000 {
		n++
	}
	return n
}

// changeInterval is the Hodges-Lehmann estimate of new/old − 1 (the median
// of the n·m pairwise log-ratios) with the confidence interval that inverts
// the Mann-Whitney U test: the order statistics of the same log-ratios at
// the test's critical rank. A ratio, not a difference of medians, because
// kernel times scale: a change is a factor. Infinite bounds mean the counts
// are too small for an interval; est is NaN when there is nothing to pair.
func changeInterval(old, new []float64, conf float64) (est, lo, hi float64) {
	n, m := len(new), len(old)
	est, lo, hi = math.NaN(), math.Inf(-1), math.Inf(1)
	d := make([]float64, 0, n*m)
	for _, y := range new {
		for _, x := range old {
			if x <= 0 || y <= 0 {
				return est, lo, hi
			}
			d = append(d, math.Log(y/x))
		}
	}
	if len(d) == 0 {
		return est, lo, hi
	}
	sort.Float64s(d)
	est = math.Exp(Quantile(d, 0.5)) - 1
	if k := uCritical(n, m, (1-conf)/2); k >= 1 {
		lo, hi = math.Exp(d[k-1])-1, math.Exp(d[len(d)-k])-1
	}
	return est, lo, hi
}

// uCritical is the largest k with P(U ≤ k−1) ≤ tail for samples of n and
// m values without ties: the rank of the interval's bounds among the
// pairwise differences; 0 means no k qualifies (too few samples). The exact
// distribution is used while it is small to count, the normal
// approximation with continuity correction beyond, where the two agree.
func uCritical(n, m int, tail float64) int {
	if n == 0 || m == 0 {
		return 0
	}
	if n*m > 400 {
		mu := float64(n*m) / 2
		sd := math.Sqrt(float64(n*m*(n+m+1)) / 12)
		z := -math.Sqrt2 * math.Erfcinv(2*tail) // the standard normal's tail quantile
		return max(0, int(math.Floor(mu+z*sd+0.5)))
	}
	counts := uCounts(n, m)
	total := 0.0
	for _, c := range counts {
		total += c
	}
	k, cum := 0, 0.0
	for k < len(counts) {
		cum += counts[k]
		if cum/total > tail {
			break
		}
		k++
	}
	return k
}

// uCounts returns, for u = 0…n·m, how many orderings of n and m distinct
// values give the U statistic u: the coefficients of the Gaussian binomial
// [n+m choose n], by c(i, j, u) = c(i−1, j, u−j) + c(i, j−1, u) (the largest
// value belongs to one side or the other).
func uCounts(n, m int) []float64 {
	prev := make([][]float64, m+1) // row i−1: prev[j][u]
	for j := range prev {
		prev[j] = []float64{1}
	}
	for i := 1; i <= n; i++ {
		cur := make([][]float64, m+1)
		cur[0] = []float64{1}
		for j := 1; j <= m; j++ {
			c := make([]float64, i*j+1)
			for u, v := range prev[j] {
				c[u+j] += v
			}
			for u, v := range cur[j-1] {
				c[u] += v
			}
			cur[j] = c
		}
		prev = cur
	}
	return prev[m]
}

// String renders the test the way benchstat does ("p=0.002 n=10",
// "p=0.100 n=3+4"), so tables built on it read like benchstat's.
func (c Comparison) String() string {
	return benchmath.Comparison{P: c.P, N1: c.N1, N2: c.N2, Alpha: c.Alpha}.String()
}
