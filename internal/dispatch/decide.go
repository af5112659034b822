package dispatch

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"

	"github.com/ktune/ktune/internal/stats"
)

// decide makes the decision at every measured nkv of one shape, ascending.
func decide(byNKV map[int]map[string]*candidate, alpha float64) []*decision {
	nkvs := make([]int, 0, len(byNKV))
	for n := range byNKV {
		nkvs = append(nkvs, n)
	}
	slices.Sort(nkvs)

	decs := make([]*decision, len(nkvs))
	// First pass: what the measurements decide on their own (a single
	// candidate, a significant difference, or a tie the landed
	// configuration is part of).
	for i, n := range nkvs {
		d := &decision{nkv: n}
		for _, c := range byNKV[n] {
			d.cands = append(d.cands, c)
		}
		slices.SortFunc(d.cands, func(a, b *candidate) int {
			return cmp.Or(cmp.Compare(a.median, b.median), cmp.Compare(a.id, b.id))
		})
		decideAlone(d, alpha)
		decs[i] = d
	}
	// Second pass: ties the first pass left open look at the nearest
	// decided nkv on each side. Only first-pass decisions count, so the
	// result does not depend on the order ties are visited in.
	for i, d := range decs {
		if d.winner == nil {
			breakTie(d, nearestDecided(decs, i, -1), nearestDecided(decs, i, +1), alpha)
		}
	}
	return decs
}

// decideAlone decides d from its own measurements where they suffice.
func decideAlone(d *decision, alpha float64) {
	best := d.cands[0]
	if len(d.cands) == 1 {
		d.winner, d.rule, d.margin = best, RuleOnly, "only passing configuration"
		d.tied = d.cands
		return
	}
	d.tied = []*candidate{best}
	for _, c := range d.cands[1:] {
		if !significant(compare(best, c, alpha)) {
			d.tied = append(d.tied, c)
		}
	}
	if len(d.tied) == 1 {
		runner := d.cands[1]
		c := compare(best, runner, alpha)
		d.winner, d.rule = best, RuleSignificant
		d.margin = fmt.Sprintf("%+.1f%% vs %s (%s)", (best.median/runner.median-1)*100, runner.label, c)
		return
	}
	for _, c := range d.tied {
		if c.landed {
			d.winner, d.rule = c, RuleLanded
			d.margin = tieMargin(d, alpha)
			return
		}
	}
}

// breakTie applies the rules after "landed" to an open tie. left and right
// are the nearest decided neighbours (nil at an end).
func breakTie(d *decision, left, right *decision, alpha float64) {
	wins := func(c *candidate) int {
		n := 0
		for _, nb := range []*decision{left, right} {
			if nb != nil && nb.winner.id == c.id {
				n++
			}
		}
		return n
	}
	order := []struct {
		rule Rule
		cmp  func(a, b *candidate) int
	}{
		{RuleNeighbours, func(a, b *candidate) int { return cmp.Compare(wins(b), wins(a)) }},
		{RuleSplits, func(a, b *candidate) int { return cmp.Compare(a.rec.Config.Splits, b.rec.Config.Splits) }},
		{RuleMedian, func(a, b *candidate) int { return cmp.Compare(a.median, b.median) }},
		{RuleName, func(a, b *candidate) int { return cmp.Compare(a.id, b.id) }},
	}
	tied := slices.Clone(d.tied)
	slices.SortFunc(tied, func(a, b *candidate) int {
		for _, o := range order {
			if r := o.cmp(a, b); r != 0 {
				return r
			}
		}
		return 0
	})
	d.winner = tied[0]
	// The rule that won is the first one separating the winner from the
	// next best of the tied.
	d.rule = RuleName
	for _, o := range order {
		if o.cmp(tied[0], tied[1]) != 0 {
			d.rule = o.rule
			break
		}
	}
	d.margin = tieMargin(d, alpha)
}

// tieMargin describes a tie against the fastest other tied configuration.
func tieMargin(d *decision, alpha float64) string {
	var other *candidate
	for _, c := range d.tied {
		if c != d.winner {
			other = c
			break
		}
	}
	return fmt.Sprintf("~ %s (%s); %s", other.label, compare(d.winner, other, alpha), d.rule)
}

// nearestDecided returns the nearest decision from i in direction step
// that the first pass settled, or nil.
func nearestDecided(decs []*decision, i, step int) *decision {
	for j := i + step; j >= 0 && j < len(decs); j += step {
		if decs[j].winner != nil && isFirstPass(decs[j].rule) {
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
func compare(a, b *candidate, alpha float64) stats.Comparison {
	return stats.Compare(a.m.SamplesNS, b.m.SamplesNS, alpha)
}

// significant follows benchstat: a p-value above alpha is "~"; so is a
// comparison whose sample counts cannot reach alpha at all.
func significant(c stats.Comparison) bool { return c.Significant }

// formatNS prints a duration in ns with one decimal, without exponent, so
// that YAML and header diffs stay readable.
func formatNS(ns float64) string { return strconv.FormatFloat(ns, 'f', 1, 64) }
