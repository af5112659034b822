package decision

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// A Candidate is one configuration's measurement at one point, as "what
// to ship" and the dispatch table weigh it (NewCandidate).
type Candidate struct {
	ID      string // identity across nkv: kernel, variant, defines, geometry
	Label   string // "d2 NR=4 SPLITS=32", for people
	Rec     *results.Record
	Samples []float64 // of the probe that decides, ns
	Median  float64
	Landed  bool
}

// NewCandidate is record r's candidate by its measurement m of the probe
// that decides.
func NewCandidate(r *results.Record, m *results.Measurement) *Candidate {
	return &Candidate{ID: ConfigID(&r.Config), Label: configName(&r.Config), Rec: r, Samples: m.SamplesNS, Median: median(m), Landed: r.Landed}
}

// configName names a configuration for people: "d2 NR=4 SPLITS=32".
func configName(c *results.Config) string {
	return strings.TrimSpace(c.Variant + " " + c.Defines.Sorted().String())
}

// ConfigID is a configuration's identity across nkv: kernel, variant,
// defines and launch geometry. Equal medians are ordered by it.
func ConfigID(c *results.Config) string {
	return fmt.Sprintf("%s|%s|%v|%v|%v|%v|%d", c.Kernel, configName(c), c.Grid, c.Block, c.CombineGrid, c.CombineBlock, c.SharedBytes)
}

// median is the recorded summary's median, which is what reports show;
// records written without a summary fall back to the samples.
func median(m *results.Measurement) float64 {
	if m.Summary.N > 0 {
		return m.Summary.Median
	}
	s := slices.Clone(m.SamplesNS)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// Ties is the one point on which "what to ship" and the dispatch table
// differ: which configurations tie with the fastest at one nkv, and
// whether a tie may look at the neighbouring nkv. Everything else is
// Decide's for both: the candidates (NewCandidate), their order (median,
// then ConfigID) and the rules that break a tie, in order: the landed
// configuration, the winner at more neighbouring nkv (TiesWithinNoise
// only), the smaller SPLITS, the lower median, ConfigID. On candidates
// tied under both (equal samples), at nkv that each have more than one,
// the two pick the same winner (report's TestShipAndDispatchAgreeOnTies).
type Ties int

const (
	// TiesEqualMedian ("what to ship"): only equal medians tie; the
	// lowest median wins otherwise (RuleFastest), however small its lead:
	// the table says what was measured fastest at each nkv, and its
	// speedups carry their own intervals and tests. An exact tie is broken
	// at its own nkv, by the landed configuration, the smaller SPLITS and
	// ConfigID, so that what ships at one nkv does not move with what else
	// was measured. No comparison is made.
	TiesEqualMedian Ties = iota
	// TiesWithinNoise (the dispatch table): every configuration whose
	// samples do not differ significantly from the fastest's at alpha
	// ties; the fastest wins outright only when significantly faster than
	// every other (RuleSignificant). A tie is broken by the landed
	// configuration, the winner at more neighbouring nkv, the smaller
	// SPLITS, the lower median and ConfigID: an engine ships the table's
	// ranges, and a median lower only by noise is no reason to change
	// what it launches or to open a range (internal/dispatch's package
	// documentation).
	TiesWithinNoise
)

// A Decision is the outcome at one measured nkv.
type Decision struct {
	NKV    int
	Cands  []*Candidate // every candidate, fastest median first
	Tied   []*Candidate // the fastest and those tied with it (Ties)
	Winner *Candidate   // nil until decided
	Rule   Rule
	Margin string
}

// Rule is the reason a configuration won at one nkv.
type Rule string

// The rules, in the order they are tried.
const (
	RuleOnly        Rule = "only"        // the only candidate that passed its gates
	RuleFastest     Rule = "fastest"     // the lowest median, no other equal (TiesEqualMedian)
	RuleSignificant Rule = "significant" // faster than the runner-up beyond noise (TiesWithinNoise)
	RuleLanded      Rule = "landed"      // tied; the landed configuration
	RuleNeighbours  Rule = "neighbours"  // tied; wins at more neighbouring nkv
	RuleSplits      Rule = "splits"      // tied; smaller SPLITS
	RuleMedian      Rule = "median"      // tied; lower median
	RuleName        Rule = "name"        // tied in every respect; first by name
)

// Decide picks the winner at every measured nkv of one shape (byNKV: nkv
// → candidate ID → candidate), ascending: the rule of "what to ship"
// (TiesEqualMedian) and of the dispatch table (TiesWithinNoise), which
// differ only as Ties says. The candidates are ordered as Fastest orders
// them, equal medians by ID; the fastest wins unless another ties with
// it.
func Decide(byNKV map[int]map[string]*Candidate, alpha float64, ties Ties) []*Decision {
	nkvs := make([]int, 0, len(byNKV))
	for n := range byNKV {
		nkvs = append(nkvs, n)
	}
	slices.Sort(nkvs)

	decs := make([]*Decision, len(nkvs))
	// First pass: what the measurements decide on their own (a single
	// candidate, a fastest no other ties with, or a tie the landed
	// configuration is part of).
	for i, n := range nkvs {
		d := &Decision{NKV: n}
		for _, c := range byNKV[n] {
			d.Cands = append(d.Cands, c)
		}
		slices.SortFunc(d.Cands, func(a, b *Candidate) int {
			return cmp.Or(cmp.Compare(a.Median, b.Median), cmp.Compare(a.ID, b.ID))
		})
		decideAlone(d, alpha, ties)
		decs[i] = d
	}
	// Second pass: ties the first pass left open look at the nearest
	// decided nkv on each side. Only first-pass decisions count, so the
	// result does not depend on the order ties are visited in.
	for i, d := range decs {
		if d.Winner == nil {
			breakTie(d, nearestDecided(decs, i, -1), nearestDecided(decs, i, +1), alpha, ties)
		}
	}
	return decs
}

// decideAlone decides d from its own measurements where they suffice.
func decideAlone(d *Decision, alpha float64, ties Ties) {
	best := d.Cands[0]
	if len(d.Cands) == 1 {
		d.Winner, d.Rule, d.Margin = best, RuleOnly, "only passing configuration"
		d.Tied = d.Cands
		return
	}
	d.Tied = []*Candidate{best}
	for _, c := range d.Cands[1:] {
		if ties == TiesEqualMedian && c.Median == best.Median ||
			ties == TiesWithinNoise && !significant(compare(best, c, alpha)) {
			d.Tied = append(d.Tied, c)
		}
	}
	if len(d.Tied) == 1 {
		runner := d.Cands[1]
		d.Winner = best
		d.Margin = fmt.Sprintf("%+.1f%% vs %s", (best.Median/runner.Median-1)*100, runner.Label)
		if d.Rule = RuleFastest; ties == TiesWithinNoise {
			d.Rule = RuleSignificant
			d.Margin += fmt.Sprintf(" (%s)", compare(best, runner, alpha))
		}
		return
	}
	for _, c := range d.Tied {
		if c.Landed {
			d.Winner, d.Rule = c, RuleLanded
			d.Margin = tieMargin(d, alpha, ties)
			return
		}
	}
	if ties == TiesEqualMedian { // broken here: no neighbour counts
		breakTie(d, nil, nil, alpha, ties)
	}
}

// breakTie applies the rules after "landed" to an open tie. left and right
// are the nearest decided neighbours (nil at an end).
func breakTie(d *Decision, left, right *Decision, alpha float64, ties Ties) {
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
	d.Margin = tieMargin(d, alpha, ties)
}

// tieMargin describes a tie against the fastest other tied configuration.
func tieMargin(d *Decision, alpha float64, ties Ties) string {
	var other *Candidate
	for _, c := range d.Tied {
		if c != d.Winner {
			other = c
			break
		}
	}
	if ties == TiesEqualMedian {
		return fmt.Sprintf("= %s (equal medians); %s", other.Label, d.Rule)
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
	return r == RuleOnly || r == RuleFastest || r == RuleSignificant || r == RuleLanded
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
