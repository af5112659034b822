package decision

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// A Candidate is one configuration's measurement at one point, as the
// dispatch table weighs it.
type Candidate struct {
	ID      string // identity across nkv: kernel, variant, defines, geometry
	Label   string // "d2 NR=4 SPLITS=32", for people
	Rec     *results.Record
	Samples []float64 // of the probe that decides, ns
	Median  float64
	Landed  bool
}

// A Decision is the outcome at one measured nkv.
type Decision struct {
	NKV    int
	Cands  []*Candidate // every candidate, fastest median first
	Tied   []*Candidate // the fastest and those not significantly slower
	Winner *Candidate   // nil until decided
	Rule   Rule
	Margin string
}

// Rule is the reason a configuration won at one nkv.
type Rule string

// The rules, in the order they are tried.
const (
	RuleOnly        Rule = "only"        // the only candidate that passed its gates
	RuleSignificant Rule = "significant" // faster than the runner-up beyond noise
	RuleLanded      Rule = "landed"      // tied within noise; the landed configuration
	RuleNeighbours  Rule = "neighbours"  // tied; wins at more neighbouring nkv
	RuleSplits      Rule = "splits"      // tied; smaller SPLITS
	RuleMedian      Rule = "median"      // tied; lower median
	RuleName        Rule = "name"        // tied in every respect; first by name
)

// Decide makes the dispatch table's decision at every measured nkv of one
// shape (byNKV: nkv → candidate ID → candidate), ascending. The candidates
// are ordered as Fastest orders them, equal medians by ID; the fastest
// wins when it is significantly faster than every other at alpha, and a
// tie is broken by the landed configuration, the neighbouring winners,
// the smaller SPLITS, the median and the ID (internal/dispatch's package
// documentation gives the reasons).
func Decide(byNKV map[int]map[string]*Candidate, alpha float64) []*Decision {
	nkvs := make([]int, 0, len(byNKV))
	for n := range byNKV {
		nkvs = append(nkvs, n)
	}
	slices.Sort(nkvs)

	decs := make([]*Decision, len(nkvs))
	// First pass: what the measurements decide on their own (a single
	// candidate, a significant difference, or a tie the landed
	// configuration is part of).
	for i, n := range nkvs {
		d := &Decision{NKV: n}
		for _, c := range byNKV[n] {
			d.Cands = append(d.Cands, c)
		}
		slices.SortFunc(d.Cands, func(a, b *Candidate) int {
			return cmp.Or(cmp.Compare(a.Median, b.Median), cmp.Compare(a.ID, b.ID))
		})
		decideAlone(d, alpha)
		decs[i] = d
	}
	// Second pass: ties the first pass left open look at the nearest
	// decided nkv on each side. Only first-pass decisions count, so the
	// result does not depend on the order ties are visited in.
	for i, d := range decs {
		if d.Winner == nil {
			breakTie(d, nearestDecided(decs, i, -1), nearestDecided(decs, i, +1), alpha)
		}
	}
	return decs
}

// decideAlone decides d from its own measurements where they suffice.
func decideAlone(d *Decision, alpha float64) {
	best := d.Cands[0]
	if len(d.Cands) == 1 {
		d.Winner, d.Rule, d.Margin = best, RuleOnly, "only passing configuration"
		d.Tied = d.Cands
		return
	}
	d.Tied = []*Candidate{best}
	for _, c := range d.Cands[1:] {
		if !significant(compare(best, c, alpha)) {
			d.Tied = append(d.Tied, c)
		}
	}
	if len(d.Tied) == 1 {
		runner := d.Cands[1]
		c := compare(best, runner, alpha)
		d.Winner, d.Rule = best, RuleSignificant
		d.Margin = fmt.Sprintf("%+.1f%% vs %s (%s)", (best.Median/runner.Median-1)*100, runner.Label, c)
		return
	}
	for _, c := range d.Tied {
		if c.Landed {
			d.Winner, d.Rule = c, RuleLanded
			d.Margin = tieMargin(d, alpha)
			return
		}
	}
}

// breakTie applies the rules after "landed" to an open tie. left and right
// are the nearest decided neighbours (nil at an end).
func breakTie(d *Decision, left, right *Decision, alpha float64) {
	wins := func(c *Candidate) int {
		n := 0
		for _, nb := range []*Decision{left, right} {
			if nb != nil && nb.Winner.ID == c.ID {
				n++
			}
		}
		return n
	}
	order := []struct {
		rule Rule
		cmp  func(a, b *Candidate) int
	}{
		{RuleNeighbours, func(a, b *Candidate) int { return cmp.Compare(wins(b), wins(a)) }},
		{RuleSplits, func(a, b *Candidate) int { return cmp.Compare(a.Rec.Config.Splits, b.Rec.Config.Splits) }},
		{RuleMedian, func(a, b *Candidate) int { return cmp.Compare(a.Median, b.Median) }},
		{RuleName, func(a, b *Candidate) int { return cmp.Compare(a.ID, b.ID) }},
	}
	tied := slices.Clone(d.Tied)
	slices.SortFunc(tied, func(a, b *Candidate) int {
		for _, o := range order {
			if r := o.cmp(a, b); r != 0 {
				return r
			}
		}
		return 0
	})
	d.Winner = tied[0]
	// The rule that won is the first one separating the winner from the
	// next best of the tied.
	d.Rule = RuleName
	for _, o := range order {
		if o.cmp(tied[0], tied[1]) != 0 {
			d.Rule = o.rule
			break
		}
	}
	d.Margin = tieMargin(d, alpha)
}

// tieMargin describes a tie against the fastest other tied configuration.
func tieMargin(d *Decision, alpha float64) string {
	var other *Candidate
	for _, c := range d.Tied {
		if c != d.Winner {
			other = c
			break
		}
	}
	return fmt.Sprintf("~ %s (%s); %s", other.Label, compare(d.Winner, other, alpha), d.Rule)
}

// nearestDecided returns the nearest decision from i in direction step
// that the first pass settled, or nil.
func nearestDecided(decs []*Decision, i, step int) *Decision {
	for j := i + step; j >= 0 && j < len(decs); j += step {
		if decs[j].Winner != nil && isFirstPass(decs[j].Rule) {
			return decs[j]
		}
	}
	return nil
}

func isFirstPass(r Rule) bool {
	return r == RuleOnly || r == RuleSignificant || r == RuleLanded
}

// compare asks the one comparison engine (stats.Compare: Mann-Whitney U
// on the raw samples, with its power): benchmark times are far from
// normal (a floor plus a right tail), so no distribution is assumed.
func compare(a, b *Candidate, alpha float64) stats.Comparison {
	return stats.Compare(a.Samples, b.Samples, alpha)
}

// significant follows benchstat: a p-value above alpha is "~"; so is a
// comparison whose sample counts cannot reach alpha at all.
func significant(c stats.Comparison) bool { return c.Significant }
