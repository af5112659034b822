package verdict

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/workload"
)

// DefaultMaxRegressedWeight is the share of a workload's steps that may
// sit in regressed buckets before a gate fails although the weighted
// total improves.
const DefaultMaxRegressedWeight = 0.05

// A WorkloadResult is the gate's judgement under a workload: per device,
// shape (without its batch) and probe, the expected step time of both
// sides and the buckets that regress.
type WorkloadResult struct {
	Name   string   `json:"name"`
	Source string   `json:"source"`
	Notes  []string `json:"notes,omitempty"`
	// MaxRegressedWeight is the share of the steps regressed buckets may
	// carry before the gate fails.
	MaxRegressedWeight float64         `json:"max_regressed_weight"`
	Groups             []WorkloadGroup `json:"groups"`
}

// A WorkloadGroup is the workload evaluated at one device, shape family
// and probe.
type WorkloadGroup struct {
	Device string        `json:"device"`
	Shape  string        `json:"shape"` // the shape's name; the buckets say the batch
	Probe  results.Probe `json:"probe"`
	*workload.Evaluation
	// Regression, Undecided and Reason are the group's decision.
	Regression bool   `json:"regression"`
	Undecided  bool   `json:"undecided"`
	Reason     string `json:"reason"`
}

// A sidePoint carries what the workload needs of a compared point.
type sidePoint struct {
	model      string // the shape without batch and capacity
	name       string // the shape's name for people
	batch      int
	cand, base []float64
}

// modelOf names the shape family a workload's buckets choose a batch of:
// every field but the batch, the capacity and the label.
func modelOf(s results.Shape) string {
	s.Batch, s.Capacity = 0, 0
	name := s.Name
	s.Name = ""
	return name + "|" + fmt.Sprintf("%+v", s)
}

// checkWorkload evaluates opts.Workload over the compared points.
func (res *GateResult) checkWorkload(opts GateOptions) {
	w := opts.Workload
	wr := &WorkloadResult{Name: w.Name, Source: w.Source, Notes: w.Notes, MaxRegressedWeight: opts.MaxRegressedWeight}
	type gkey struct {
		device, model string
		probe         results.Probe
	}
	type group struct {
		name       string
		cand, base workload.Side
		undecided  map[[2]int]bool // (batch, nkv) of points the samples cannot decide
	}
	groups := map[gkey]*group{}
	var order []gkey
	for i := range res.Points {
		p := &res.Points[i]
		sp := p.side
		if sp == nil {
			continue
		}
		k := gkey{p.Device, sp.model, p.Probe}
		g := groups[k]
		if g == nil {
			g = &group{name: sp.name, cand: workload.Side{}, base: workload.Side{}, undecided: map[[2]int]bool{}}
			groups[k] = g
			order = append(order, k)
		}
		if p.Undecided {
			g.undecided[[2]int{sp.batch, p.NKV}] = true
		}
		for _, s := range []struct {
			side    workload.Side
			samples []float64
		}{{g.cand, sp.cand}, {g.base, sp.base}} {
			if s.side[sp.batch] == nil {
				s.side[sp.batch] = workload.Curve{}
			}
			s.side[sp.batch][p.NKV] = s.samples
		}
	}
	for _, k := range order {
		g := groups[k]
		ev := workload.Evaluate(w, g.cand, g.base, workload.Options{Threshold: opts.Threshold})
		wg := WorkloadGroup{Device: k.device, Shape: g.name, Probe: k.probe, Evaluation: ev}
		wg.decide(opts.Threshold, opts.MaxRegressedWeight)
		// A bootstrap of a few samples is as blind as the U test on them:
		// a bucket resting on a point the gate could not decide cannot
		// pass, whatever its interval says.
		if !wg.Regression {
			var at []string
			for _, b := range ev.Buckets {
				for _, n := range []int{b.From, b.To} {
					if g.undecided[[2]int{b.Batch, n}] && !slices.Contains(at, fmt.Sprint(n)) {
						at = append(at, fmt.Sprint(n))
					}
				}
			}
			if len(at) > 0 {
				wg.Undecided = true
				wg.Reason = fmt.Sprintf("UNDECIDED: buckets rest on points whose samples cannot decide (nkv %s); %s", strings.Join(at, ", "), wg.Reason)
			}
		}
		wr.Groups = append(wr.Groups, wg)
	}
	res.Workload = wr
}

// decide judges one group: the weighted change against the threshold as
// the gate judges a point, then the regressed buckets against their
// allowed share.
func (g *WorkloadGroup) decide(threshold, maxWeight float64) {
	thr := threshold * 100
	var regressed []string
	for _, b := range g.Buckets {
		if b.Regressed {
			regressed = append(regressed, fmt.Sprintf("%s (%.1f%% of the steps) slower by %.1f%% [%+.1f%%, %+.1f%%]",
				b.Bucket, b.Weight*100, (b.Ratio.Center-1)*100, (b.Ratio.Lo-1)*100, (b.Ratio.Hi-1)*100))
		}
	}
	change := fmt.Sprintf("weighted change %+.1f%% [%+.1f%%, %+.1f%%]", (g.Ratio.Center-1)*100, (g.Ratio.Lo-1)*100, (g.Ratio.Hi-1)*100)
	switch {
	case len(g.Buckets) == 0:
		g.Undecided = true
		g.Reason = "UNDECIDED: no bucket of the workload could be evaluated"
	case g.Ratio.Center-1 > threshold && g.Ratio.Lo > 1:
		g.Regression = true
		g.Reason = fmt.Sprintf("REGRESSION: %s > %.1f%%", change, thr)
	case g.RegressedWeight > maxWeight:
		g.Regression = true
		g.Reason = fmt.Sprintf("REGRESSION hidden in the total (%s): regressed buckets carry %.1f%% of the steps > %.1f%%: %s",
			change, g.RegressedWeight*100, maxWeight*100, strings.Join(regressed, "; "))
	case len(g.Refused) > 0:
		g.Undecided = true
		var names []string
		for _, r := range g.Refused {
			names = append(names, r.Bucket.String()+": "+r.Reason)
		}
		g.Reason = fmt.Sprintf("UNDECIDED: %s over %.1f%% of the steps; not evaluated: %s", change, g.Covered*100, strings.Join(names, "; "))
	case (g.Ratio.Hi-1)*100 > thr:
		g.Undecided = true
		g.Reason = fmt.Sprintf("UNDECIDED: %s: the interval allows a slowdown beyond %.1f%%", change, thr)
	default:
		g.Reason = fmt.Sprintf("pass: %s", change)
		if len(regressed) > 0 {
			g.Reason += fmt.Sprintf("; regressed buckets carry %.1f%% of the steps ≤ %.1f%%: %s",
				g.RegressedWeight*100, maxWeight*100, strings.Join(regressed, "; "))
		}
	}
}

// workloadRegression and workloadUndecided summarise the groups.
func (wr *WorkloadResult) regression() bool {
	return slices.ContainsFunc(wr.Groups, func(g WorkloadGroup) bool { return g.Regression })
}

func (wr *WorkloadResult) undecided() bool {
	return len(wr.Groups) == 0 || slices.ContainsFunc(wr.Groups, func(g WorkloadGroup) bool { return g.Undecided })
}
