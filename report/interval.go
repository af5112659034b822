package report

import (
	"math"
	"sort"

	"github.com/ktune/ktune/internal/stats"
)

// ratioCI is the confidence interval of new/old − 1 that inverts the
// Mann-Whitney U test (Hodges-Lehmann): the order statistics of the n·m
// pairwise log-ratios at the test's critical rank. A ratio, not a
// difference of medians, because kernel times scale: a change is a
// factor. Infinite bounds mean the counts are too small for an interval.
func ratioCI(old, new []float64, conf float64) (lo, hi float64) {
	n, m := len(new), len(old)
	k := uCritical(n, m, (1-conf)/2)
	if k < 1 {
		return math.Inf(-1), math.Inf(1)
	}
	d := make([]float64, 0, n*m)
	for _, y := range new {
		for _, x := range old {
			if x <= 0 || y <= 0 {
				return math.Inf(-1), math.Inf(1)
			}
			d = append(d, math.Log(y/x))
		}
	}
	sort.Float64s(d)
	return math.Exp(d[k-1]) - 1, math.Exp(d[len(d)-k]) - 1
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

// samplesToDecide estimates how many samples per side would let row be
// decided against threshold (a fraction): enough for the U test to reach
// Alpha and for the interval of the change to be finite, and, since an
// interval narrows as 1/√n, enough to bring the ratio's upper bound from
// where it is down to the threshold around the observed change.
func samplesToDecide(row *CompareRow, threshold float64) int {
	n := max(row.N1, row.N2)
	need := stats.SamplesToDecide(Alpha)
	for uCritical(need, need, (1-confidence)/2) < 1 {
		need++
	}
	half := row.RatioHi - row.DeltaPct/100
	room := threshold - row.DeltaPct/100
	if !math.IsInf(row.RatioHi, 0) && half > 0 && room > 0 {
		need = max(need, int(math.Ceil(float64(n)*(half/room)*(half/room))))
	}
	return max(need, n+1)
}
