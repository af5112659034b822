package search

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
	"github.com/ktune/ktune/plan"
)

// Defaults of the halving strategy.
const (
	// ScreenSamples is the sample count of the first screening round. Four
	// is the fewest at which a Mann-Whitney test of two configurations can
	// reach p < 0.05 (stats.MinP: 2/70 at 4 against 4, 2/252 at 5); five
	// leaves a margin for one tied or outlying sample, so a clearly slower
	// configuration can be dropped at the first look.
	ScreenSamples = 5
	// DefaultRounds: two screening rounds (5 and 10 samples) and the full
	// round.
	DefaultRounds = 3
	// DefaultKeep is the margin within which a configuration is kept even
	// when significantly slower: a few percent is within what one clock or
	// one layout change of the engine moves, and a screening round must not
	// decide what only the full measurement can.
	DefaultKeep = 0.03
	// DefaultSearchAlpha is the significance level of a drop: every
	// comparison's (decision.Alpha).
	DefaultSearchAlpha = decision.Alpha
)

var halvingRegistration = Registration{
	Name:    "halving",
	Summary: "successive halving: screen every configuration with few samples, drop the significantly slower, measure the survivors",
	Flags: func(fs *flag.FlagSet) func(Common) (Strategy, error) {
		rounds := fs.Int("rounds", DefaultRounds, "halving: at most `R` rounds, the last under the spec's stopping rule")
		keep := fs.Float64("keep", DefaultKeep, "halving: keep a configuration whose median is within `F` (a fraction) of the best's")
		return func(c Common) (Strategy, error) {
			switch {
			case *rounds < 1:
				return nil, fmt.Errorf("--rounds %d: want at least 1", *rounds)
			case *keep < 0:
				return nil, fmt.Errorf("--keep %g: want a fraction ≥ 0, e.g. 0.03", *keep)
			}
			return NewHalving(HalvingOptions{Rounds: *rounds, Keep: *keep, Probe: c.Probe}), nil
		}
	},
}

// ScreenDir is where the screening rounds of a search into dir record
// their points: a sweep directory of its own (dir/screen), so that
// dir/results.jsonl, which the dispatch table reads, holds only full
// measurements, while the screening records stay readable by every tool
// that reads a sweep directory (ktune report dir/screen).
func ScreenDir(dir string) string { return filepath.Join(dir, "screen") }

// HalvingOptions configure successive halving.
type HalvingOptions struct {
	// Rounds is how many rounds it runs at most, the last under the
	// spec's full stopping rule; 0 means DefaultRounds. With 1 it is grid.
	Rounds int
	// Keep is the margin: a configuration whose median is within this
	// fraction of the best's is kept even when significantly slower.
	// Negative means 0.
	Keep float64
	// Probe is the measurement whose samples are compared; "" means cold.
	Probe results.Probe
	// Alpha is the significance level of a drop; 0 means
	// DefaultSearchAlpha.
	Alpha float64
}

// NewHalving returns successive halving: every configuration is screened
// with ScreenSamples samples, the significantly slower ones are dropped,
// the rest screened again with twice the samples, and the survivors
// finally measured under the spec's full stopping rule.
func NewHalving(o HalvingOptions) Strategy {
	if o.Rounds <= 0 {
		o.Rounds = DefaultRounds
	}
	if o.Probe == "" {
		o.Probe = results.ProbeCold
	}
	if o.Alpha == 0 {
		o.Alpha = DefaultSearchAlpha
	}
	o.Keep = max(o.Keep, 0)
	return &halving{o: o}
}

type halving struct {
	o     HalvingOptions
	alive []*Configuration
	round int // proposals made
	final bool
}

func (h *halving) Next(_ context.Context, st *State) (Proposal, error) {
	if h.final {
		return Proposal{}, nil
	}
	if h.alive == nil {
		h.alive = st.Space.Configs
	}
	var dropped []string
	contested := true
	if h.round > 0 {
		n := ScreenSamples << (h.round - 1)
		var kept []*Configuration
		kept, contested = screen(h.alive, n, st.Measured, h.o.Probe, h.o.Alpha, h.o.Keep)
		for _, c := range h.alive {
			if !slices.Contains(kept, c) {
				dropped = append(dropped, c.Label)
			}
		}
		fmt.Fprintf(st.Log, "round %d of %d: kept %d of %d configurations", h.round, h.o.Rounds, len(kept), len(h.alive))
		if len(dropped) > 0 {
			fmt.Fprintf(st.Log, "; dropped %s", strings.Join(dropped, ", "))
		}
		fmt.Fprintln(st.Log)
		h.alive = kept
	}
	h.round++
	pr := Proposal{Of: h.o.Rounds, Dropped: dropped}
	for _, c := range h.alive {
		pr.Points = append(pr.Points, c.Points...)
	}
	// Once one contender per shape and nkv is left, more screening cannot
	// change the table, only the final measurement can.
	if h.round == h.o.Rounds || !contested {
		h.final = true
		return pr, nil
	}
	pr.Samples = ScreenSamples << (h.round - 1)
	pr.Note = fmt.Sprintf("halving round %d of %d: screening, %d samples", h.round, h.o.Rounds, pr.Samples)
	return pr, nil
}

func (h *halving) Settings() map[string]string {
	return map[string]string{"rounds": strconv.Itoa(h.o.Rounds), "keep": strconv.FormatFloat(h.o.Keep, 'g', -1, 64)}
}

// screenPoint is the point p measured with exactly n samples. Its hash
// does not name the round, so that a search run again with other --rounds
// still finds its screenings.
func screenPoint(p *plan.Point, n int) *plan.Point { return p.WithSamples(n) }

// screen decides which configurations survive a screening round. At each
// shape and nkv, a configuration is dropped when its samples are
// significantly slower than the fastest configuration's (Mann-Whitney U,
// no distribution assumed: kernel times are a floor and a right tail) and
// its median is slower by more than keep. A configuration survives when it
// is not dropped at some nkv — it may win a range there — and the landed
// configuration always survives, so the table keeps its baseline.
// contested reports whether some shape and nkv still has more than one
// contender. n is the round's sample count: the screening it judges.
func screen(configs []*Configuration, n int, obs []Observation, probe results.Probe, alpha, keep float64) (kept []*Configuration, contested bool) {
	type entry struct {
		c      *Configuration
		s      []float64
		median float64
	}
	type cell struct {
		shape results.Shape
		nkv   int
	}
	byPoint := map[string]*results.Record{}
	for i := range obs {
		if obs[i].Samples == n {
			byPoint[obs[i].Point.Hash] = &obs[i].Record
		}
	}
	cells := map[cell][]entry{}
	var order []cell
	for _, c := range configs {
		for _, p := range c.Points {
			r := byPoint[p.Hash]
			if r == nil || r.Status != results.StatusOK || !r.GatesPass() {
				continue
			}
			m := r.Probe(probe)
			if m == nil || len(m.SamplesNS) == 0 {
				continue
			}
			k := cell{p.Config.Shape, p.Config.NKV}
			if cells[k] == nil {
				order = append(order, k)
			}
			cells[k] = append(cells[k], entry{c, m.SamplesNS, sampleMedian(m.SamplesNS)})
		}
	}
	survives := map[*Configuration]bool{}
	for _, k := range order {
		es := cells[k]
		best := es[0]
		for _, e := range es[1:] {
			if e.median < best.median {
				best = e
			}
		}
		contenders := 0
		for _, e := range es {
			// Dropped only when the test can decide and does: an undecidable
			// comparison keeps the configuration for the next round.
			if e.c != best.c && e.median > best.median*(1+keep) && stats.Compare(best.s, e.s, alpha).Significant {
				continue
			}
			survives[e.c] = true
			contenders++
		}
		contested = contested || contenders > 1
	}
	for _, c := range configs {
		if survives[c] || c.Landed {
			kept = append(kept, c)
		}
	}
	return kept, contested
}

func sampleMedian(s []float64) float64 {
	x := slices.Clone(s)
	slices.Sort(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
}
