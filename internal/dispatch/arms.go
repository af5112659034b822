package dispatch

import (
	"cmp"
	"fmt"
	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/stats"
	"math"
	"slices"
)

// Rules of a table limited to a few arms (Options.MaxArms).
const (
	// RuleArms: the per-nkv winner's configuration has no range of its
	// own within the arm limit; this arm is the cheapest that covers the
	// nkv (Margin gives its cost against the winner).
	RuleArms decision.Rule = "arms"
	// RuleUnmeasured: the arm covering this nkv was not measured here;
	// the table extends its range over the point (Table.Missing names it).
	RuleUnmeasured decision.Rule = "unmeasured"
)

// unmeasuredPenalty is added to the estimated log-cost of a
// configuration at an nkv where it was not measured (about 5%): of two
// arms that look alike, the measured one is preferred.
const unmeasuredPenalty = 0.05

// limitArms rewrites decs (one shape, ascending nkv, every one decided)
// so that at most maxArms ranges remain, and returns the points the
// limited table rests on without a measurement: for every nkv, each arm
// of the table not measured there (it might have won there).
//
// The decisions of decide stay the reference: when they already form at
// most maxArms ranges they are kept as they are. Otherwise the ranges
// are the ones of least total cost, the sum over nkv of log(median of the
// range's configuration / median of the nkv's winner), found by dynamic
// programming over contiguous segments. A configuration not measured at
// an nkv of its segment is assumed to keep its standing against the
// winners of its nearest measured nkv (the mean log-cost there, in log-nkv
// distance, of the nearest below and above), plus unmeasuredPenalty;
// every such point is named in the result, since the table rests there on
// an assumption, not a measurement. Equal costs go to the
// configuration the decisions chose at more nkv, then to the order of
// decide's tie rules (landed, smaller SPLITS, name).
//
// weights, when set, multiply each nkv's cost where the limit applies
// (an nkv the engine never runs costs nothing).
func limitArms(decs []*decision.Decision, maxArms int, alpha float64, weights []float64) (missing []Missing) {
	if len(decs) == 0 || maxArms <= 0 {
		return nil
	}
	if ranges := countRanges(decs); ranges > maxArms {
		assignArms(decs, maxArms, alpha, weights)
	}
	arms := map[string]*candidate{}
	var ids []string
	for _, d := range decs {
		if arms[d.Winner.ID] == nil {
			arms[d.Winner.ID] = d.Winner
			ids = append(ids, d.Winner.ID)
		}
	}
	for _, d := range decs {
		for _, id := range ids {
			if !measuredAt(d, id) {
				missing = append(missing, Missing{NKV: d.NKV, Config: arms[id].Label, Variant: arms[id].Rec.Config.Variant,
					Defines: arms[id].Rec.Config.Defines.Sorted(), Spec: arms[id].Rec.Config.Spec})
			}
		}
	}
	return missing
}

func countRanges(decs []*decision.Decision) int {
	n := 0
	for i, d := range decs {
		if i == 0 || d.Winner.ID != decs[i-1].Winner.ID {
			n++
		}
	}
	return n
}

func measuredAt(d *decision.Decision, id string) bool {
	return slices.ContainsFunc(d.Cands, func(c *candidate) bool { return c.ID == id })
}

// assignArms chooses at most maxArms contiguous ranges of least cost and
// makes each range's configuration the decision at its nkv.
func assignArms(decs []*decision.Decision, maxArms int, alpha float64, weights []float64) {
	// Every configuration measured at some nkv of the shape, in the
	// preference order of equal costs.
	wins := map[string]int{}
	byID := map[string]*candidate{}
	for _, d := range decs {
		wins[d.Winner.ID]++
		for _, c := range d.Cands {
			if byID[c.ID] == nil {
				byID[c.ID] = c
			}
		}
	}
	configs := make([]*candidate, 0, len(byID))
	for _, c := range byID {
		configs = append(configs, c)
	}
	slices.SortFunc(configs, func(a, b *candidate) int {
		return cmp.Or(cmp.Compare(wins[b.ID], wins[a.ID]), -cmpBool(a.Landed, b.Landed),
			cmp.Compare(a.Rec.Config.Splits, b.Rec.Config.Splits), cmp.Compare(a.ID, b.ID))
	})
	m := len(decs)
	// cost[c][k]: configuration c at nkv k.
	cost := make([][]float64, len(configs))
	for ci, c := range configs {
		cost[ci] = make([]float64, m)
		measured := make([]bool, m)
		for k, d := range decs {
			if at := candidateAt(d, c.ID); at != nil {
				cost[ci][k], measured[k] = math.Log(at.Median/d.Winner.Median), true
			}
		}
		for k := range decs {
			if !measured[k] {
				cost[ci][k] = estimateCost(decs, cost[ci], measured, k) + unmeasuredPenalty
			}
		}
		if weights != nil {
			for k := range decs {
				// A tiny floor keeps an nkv of no traffic from being
				// given to any arm at all when the costs tie.
				cost[ci][k] *= weights[k] + 1e-9
			}
		}
	}
	// seg(i, j) is the cheapest configuration over decs[i..j] and its cost.
	seg := func(i, j int) (int, float64) {
		best, bestCost := -1, math.Inf(1)
		for ci := range configs {
			s := 0.0
			for k := i; k <= j; k++ {
				s += cost[ci][k]
			}
			if s < bestCost-1e-12 {
				best, bestCost = ci, s
			}
		}
		return best, bestCost
	}
	// f[s][j]: the least cost of decs[0..j-1] in s ranges; from[s][j] the
	// start of the last range.
	inf := math.Inf(1)
	f := make([][]float64, maxArms+1)
	from := make([][]int, maxArms+1)
	for s := range f {
		f[s] = make([]float64, m+1)
		from[s] = make([]int, m+1)
		for j := range f[s] {
			f[s][j] = inf
		}
	}
	f[0][0] = 0
	for s := 1; s <= maxArms; s++ {
		for j := 1; j <= m; j++ {
			for i := s - 1; i < j; i++ {
				if math.IsInf(f[s-1][i], 1) {
					continue
				}
				_, c := seg(i, j-1)
				if v := f[s-1][i] + c; v < f[s][j]-1e-12 {
					f[s][j], from[s][j] = v, i
				}
			}
		}
	}
	bestS := 1
	for s := 2; s <= maxArms; s++ {
		if f[s][m] < f[bestS][m]-1e-12 {
			bestS = s
		}
	}
	for s, j := bestS, m; s > 0; s-- {
		i := from[s][j]
		ci, _ := seg(i, j-1)
		for k := i; k < j; k++ {
			setArm(decs[k], configs[ci], alpha)
		}
		j = i
	}
}

// estimateCost is a configuration's log-cost at nkv index k where it was
// not measured: the nearest measured nkv's below and above, weighted by
// their distance in log nkv, or the one side there is.
func estimateCost(decs []*decision.Decision, cost []float64, measured []bool, k int) float64 {
	lo, hi := -1, -1
	for j := k - 1; j >= 0; j-- {
		if measured[j] {
			lo = j
			break
		}
	}
	for j := k + 1; j < len(decs); j++ {
		if measured[j] {
			hi = j
			break
		}
	}
	switch {
	case lo < 0:
		return cost[hi]
	case hi < 0:
		return cost[lo]
	}
	x := func(i int) float64 { return math.Log(float64(decs[i].NKV)) }
	f := (x(k) - x(lo)) / (x(hi) - x(lo))
	return (1-f)*cost[lo] + f*cost[hi]
}

// setArm makes c the decision at d, saying why when it is not the
// winner decide chose.
func setArm(d *decision.Decision, c *candidate, alpha float64) {
	if d.Winner.ID == c.ID {
		return
	}
	winner := d.Winner
	at := candidateAt(d, c.ID)
	if at == nil {
		d.Winner, d.Rule = c, RuleUnmeasured
		d.Margin = fmt.Sprintf("not measured here; %s wins among those measured (%s ns)", winner.Label, formatNS(winner.Median))
		return
	}
	d.Winner, d.Rule = at, RuleArms
	d.Margin = fmt.Sprintf("%+.1f%% vs %s, the winner here (%s); within the arm limit", (at.Median/winner.Median-1)*100, winner.Label, stats.Compare(winner.Samples, at.Samples, alpha))
}

func candidateAt(d *decision.Decision, id string) *candidate {
	for _, c := range d.Cands {
		if c.ID == id {
			return c
		}
	}
	return nil
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
