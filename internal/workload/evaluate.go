package workload

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	"github.com/ktune/ktune/internal/stats"
)

// A Curve is one kernel's measured samples (ns) at one batch, by nkv.
type Curve map[int][]float64

// A Side is one kernel's curves by batch.
type Side map[int]Curve

// Options control Evaluate.
type Options struct {
	// Threshold is the tolerated slowdown (0.02 = 2%): a bucket slower
	// than the baseline by more, with a bootstrap interval above 1,
	// regresses.
	Threshold float64
	// Resamples is the bootstrap's replicate count; 0 means 2000.
	Resamples int
}

// An Estimate is a value with its 95% bootstrap interval.
type Estimate struct {
	Center float64 `json:"center"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// A BucketResult is one bucket's times under both kernels.
type BucketResult struct {
	Bucket
	// Interpolated is set when a side was not measured at the bucket's
	// nkv and its time is interpolated between From and To, the measured
	// nkv around it (From = To = NKV when both sides were measured there).
	Interpolated bool `json:"interpolated"`
	From         int  `json:"from_nkv"`
	To           int  `json:"to_nkv"`
	// Cand and Base are the sides' times at the bucket (ns); Ratio is
	// Cand/Base (>1: the candidate is slower).
	Cand  Estimate `json:"candidate_ns"`
	Base  Estimate `json:"baseline_ns"`
	Ratio Estimate `json:"ratio"`
	// Regressed: Ratio exceeds 1 + Threshold and its interval lies above 1.
	Regressed bool `json:"regressed"`
}

// A Refusal is a bucket that cannot be evaluated, and why.
type Refusal struct {
	Bucket
	Reason string `json:"reason"`
}

// An Evaluation is a workload's expected step time under two kernels.
type Evaluation struct {
	Buckets []BucketResult `json:"buckets"`
	Refused []Refusal      `json:"refused,omitempty"`
	// Covered is the weight of the evaluated buckets (1 when none was
	// refused); the expected times sum over those alone.
	Covered float64 `json:"covered"`
	// Cand and Base are the expected attention time of one step (ns):
	// Σ weight · time over the evaluated buckets. Ratio is Cand/Base.
	Cand  Estimate `json:"candidate_ns"`
	Base  Estimate `json:"baseline_ns"`
	Ratio Estimate `json:"ratio"`
	// RegressedWeight is the weight of the regressed buckets.
	RegressedWeight float64 `json:"regressed_weight"`
}

// A pointRef is one measured point of one side.
type pointRef struct {
	side       int // 0 candidate, 1 baseline
	batch, nkv int
}

// A term is one measured point's share in a bucket's time.
type term struct {
	p      int // index into the points
	factor float64
}

// Evaluate computes w's expected step time under cand and base. Buckets
// outside either side's measured nkv range at their batch are refused.
func Evaluate(w *Workload, cand, base Side, opt Options) *Evaluation {
	if opt.Resamples == 0 {
		opt.Resamples = 2000
	}
	ev := &Evaluation{}
	var points []pointRef
	index := map[pointRef]int{}
	use := func(pr pointRef) int {
		if i, ok := index[pr]; ok {
			return i
		}
		index[pr] = len(points)
		points = append(points, pr)
		return len(points) - 1
	}
	type plan struct {
		res    BucketResult
		terms  [2][]term
		weight float64
	}
	var plans []plan
	for _, b := range w.Buckets {
		pl := plan{res: BucketResult{Bucket: b, From: b.NKV, To: b.NKV}, weight: b.Weight}
		ok := true
		for s, side := range []Side{cand, base} {
			name := [2]string{"candidate", "baseline"}[s]
			c := side[b.Batch]
			if len(c) == 0 {
				ev.Refused = append(ev.Refused, Refusal{b, fmt.Sprintf("the %s was not measured at batch %d", name, b.Batch)})
				ok = false
				break
			}
			lo, hi, found := bracket(c, b.NKV)
			if !found {
				nkvs := sortedNKV(c)
				ev.Refused = append(ev.Refused, Refusal{b, fmt.Sprintf("nkv %d is outside the %s's measured range %d–%d at batch %d: not extrapolated",
					b.NKV, name, nkvs[0], nkvs[len(nkvs)-1], b.Batch)})
				ok = false
				break
			}
			if lo == hi {
				pl.terms[s] = []term{{use(pointRef{s, b.Batch, lo}), 1}}
				continue
			}
			pl.res.Interpolated = true
			pl.res.From, pl.res.To = min(pl.res.From, lo), max(pl.res.To, hi)
			f := float64(b.NKV-lo) / float64(hi-lo)
			pl.terms[s] = []term{{use(pointRef{s, b.Batch, lo}), 1 - f}, {use(pointRef{s, b.Batch, hi}), f}}
		}
		if ok {
			plans = append(plans, pl)
			ev.Covered += b.Weight
		}
	}
	if len(plans) == 0 {
		return ev
	}
	samples := make([][]float64, len(points))
	medians := make([]float64, len(points))
	for i, pr := range points {
		samples[i] = [2]Side{cand, base}[pr.side][pr.batch][pr.nkv]
		medians[i] = median(slices.Clone(samples[i]))
	}
	// One pass computes every statistic from a vector of point medians:
	// per bucket the two times and their ratio, then the totals.
	nStat := 3*len(plans) + 3
	eval := func(med []float64, out []float64) {
		var tc, tb float64
		for i, pl := range plans {
			var t [2]float64
			for s := range 2 {
				for _, tm := range pl.terms[s] {
					t[s] += tm.factor * med[tm.p]
				}
			}
			out[3*i], out[3*i+1], out[3*i+2] = t[0], t[1], t[0]/t[1]
			tc += pl.weight * t[0]
			tb += pl.weight * t[1]
		}
		n := 3 * len(plans)
		out[n], out[n+1], out[n+2] = tc, tb, tc/tb
	}
	center := make([]float64, nStat)
	eval(medians, center)
	reps := make([][]float64, nStat)
	for i := range reps {
		reps[i] = make([]float64, opt.Resamples)
	}
	// A fixed seed: the same samples give the same interval on every run.
	rng := rand.New(rand.NewPCG(0x6b74756e65, uint64(len(points))))
	med := make([]float64, len(points))
	out := make([]float64, nStat)
	buf := []float64{}
	for r := range opt.Resamples {
		for i, s := range samples {
			buf = buf[:0]
			for range s {
				buf = append(buf, s[rng.IntN(len(s))])
			}
			med[i] = median(buf)
		}
		eval(med, out)
		for j, v := range out {
			reps[j][r] = v
		}
	}
	est := func(j int) Estimate {
		sort.Float64s(reps[j])
		return Estimate{Center: center[j], Lo: stats.Quantile(reps[j], 0.025), Hi: stats.Quantile(reps[j], 0.975)}
	}
	for i, pl := range plans {
		r := pl.res
		r.Cand, r.Base, r.Ratio = est(3*i), est(3*i+1), est(3*i+2)
		r.Regressed = r.Ratio.Center-1 > opt.Threshold && r.Ratio.Lo > 1
		if r.Regressed {
			ev.RegressedWeight += r.Weight
		}
		ev.Buckets = append(ev.Buckets, r)
	}
	n := 3 * len(plans)
	ev.Cand, ev.Base, ev.Ratio = est(n), est(n+1), est(n+2)
	return ev
}

// bracket returns the measured nkv at or around n: lo = hi = n when n was
// measured, else the nearest below and above; found is false beyond the
// measured range.
func bracket(c Curve, n int) (lo, hi int, found bool) {
	if len(c[n]) > 0 {
		return n, n, true
	}
	lo, hi = math.MinInt, math.MaxInt
	for m, s := range c {
		if len(s) == 0 {
			continue
		}
		if m < n && m > lo {
			lo = m
		}
		if m > n && m < hi {
			hi = m
		}
	}
	return lo, hi, lo != math.MinInt && hi != math.MaxInt
}

func sortedNKV(c Curve) []int {
	out := make([]int, 0, len(c))
	for n, s := range c {
		if len(s) > 0 {
			out = append(out, n)
		}
	}
	slices.SortFunc(out, cmp.Compare)
	return out
}

// median sorts x in place and returns its median.
func median(x []float64) float64 {
	sort.Float64s(x)
	return stats.Quantile(x, 0.5)
}
