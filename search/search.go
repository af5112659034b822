// Package search walks the space of a plan with a strategy: a plug-in
// (Strategy, registry.go) that proposes the next points to time given
// what has been measured. Grid times every point, random a seeded sample
// of configurations, halving screens configurations with few samples and
// drops the significantly slower, and model fits a surrogate of the
// kernel's time over the axes and the compile facts and proposes the
// points most likely to improve the table. Search drives a strategy
// against any plan.Backend through sweep.Run; Simulate drives it against
// recorded results, to compare strategies without a GPU.
package search

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/sweep"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// SearchOptions configure Search.
type SearchOptions struct {
	// Name and Strategy are the strategy; a nil Strategy is grid.
	Name     Name
	Strategy Strategy
	// Facts are the compile facts known before timing, by point hash;
	// nil when none are.
	Facts map[string]Facts
	// Budget prunes, on top of each variant's own budget, points whose
	// facts break it.
	Budget plan.Budget
	// Run are the options of every round. Run.Dir receives the full
	// measurements; screening rounds go to ScreenDir(Run.Dir). Run.Filter,
	// if set, narrows the space first.
	Run sweep.RunOptions
}

// A SearchResult says what a search ran and what it kept.
type SearchResult struct {
	Strategy Name `json:"strategy"`
	// Settings are the strategy's own (a random draw's seed and size).
	Settings map[string]string `json:"settings,omitempty"`
	// Configurations counts those of the plan (after the filter).
	Configurations int `json:"configurations"`
	// Pruned lists the points never timed, with why.
	Pruned []string `json:"pruned,omitempty"`
	// Chosen labels the configurations with a full measurement, in plan
	// order.
	Chosen []string `json:"chosen"`
	Rounds []Round  `json:"rounds"`
	// Summary adds up the full rounds, whose records are in Run.Dir.
	Summary sweep.Summary `json:"-"`
}

// A Round is one proposal of a strategy, measured.
type Round struct {
	Number int `json:"round"` // 1-based
	Of     int `json:"of,omitempty"`
	// Samples is the fixed sample count of a screening round; 0 is the
	// spec's own stopping rule.
	Samples int    `json:"samples,omitempty"`
	Dir     string `json:"dir"`
	// Ran labels the configurations measured; Dropped those the strategy
	// ruled out after this round.
	Ran     []string `json:"ran"`
	Dropped []string `json:"dropped,omitempty"`
	// Points, Skipped and Measured count the round's points: planned,
	// already recorded, run now.
	Points   int           `json:"points"`
	Skipped  int           `json:"skipped"`
	Measured int           `json:"measured"`
	Summary  sweep.Summary `json:"-"`
}

// A Settings is a strategy that says its settings for the search log.
type Settings interface {
	Settings() map[string]string
}

// Search explores plan on b with opts.Strategy and records the measured
// points as Run does. Every round resumes: a point already recorded in
// its directory is not measured again (the screening points have hashes
// of their own, derived from the full point's and the sample count, so
// neither stands in for the other), and a strategy proposes the same
// points from the same records, so an interrupted search picks up where
// it stopped.
//
// The result covers what was done even when an error stops the search.
func Search(ctx context.Context, b plan.Backend, pl *plan.Plan, opts SearchOptions) (*SearchResult, error) {
	var points []*plan.Point
	for _, p := range pl.Points {
		if opts.Run.Filter == nil || opts.Run.Filter(p) {
			points = append(points, p)
		}
	}
	sp := NewSpace(points, opts.Facts, opts.Budget)
	st, name := opts.Strategy, opts.Name
	if st == nil {
		st, name = newGrid(), "grid"
	}
	res := &SearchResult{Strategy: name, Configurations: len(sp.Configs)}
	if s, ok := st.(Settings); ok {
		res.Settings = s.Settings()
	}
	for _, p := range sp.Pruned {
		res.Pruned = append(res.Pruned, p.String())
		fmt.Fprintf(logOf(opts.Run), "never timed: %s\n", p)
	}
	m := &sweepMeasurer{b: b, pl: pl, ro: opts.Run}
	err := drive(ctx, st, sp, m, res, logOf(opts.Run))
	full := map[string]bool{}
	for _, r := range res.Rounds {
		if r.Samples == 0 {
			for _, l := range r.Ran {
				full[l] = true
			}
		}
	}
	for _, c := range sp.Configs {
		if full[c.Label] {
			res.Chosen = append(res.Chosen, c.Label)
		}
	}
	return res, err
}

// A measurer times a proposal's points and returns their records, in the
// proposal's order (a zero Record where a point got none).
type measurer interface {
	measure(ctx context.Context, pr Proposal, round int) ([]results.Record, sweep.Summary, error)
}

// drive asks st for proposals until one is empty, measuring each with m.
func drive(ctx context.Context, st Strategy, sp *Space, m measurer, res *SearchResult, log io.Writer) error {
	state := &State{Space: sp, Log: log}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		pr, err := st.Next(ctx, state)
		if err != nil {
			return err
		}
		if n := len(res.Rounds); n > 0 && len(pr.Dropped) > 0 {
			res.Rounds[n-1].Dropped = pr.Dropped
		}
		if len(pr.Points) == 0 {
			return nil
		}
		number := len(res.Rounds) + 1
		recs, sum, err := m.measure(ctx, pr, number)
		round := Round{Number: number, Of: pr.Of, Samples: pr.Samples, Ran: labels(Configurations(pr.Points)),
			Points: sum.Planned, Skipped: sum.Skipped, Measured: sum.Ran, Summary: sum}
		if sm, ok := m.(*sweepMeasurer); ok {
			round.Dir = sm.dir(pr)
		}
		res.Rounds = append(res.Rounds, round)
		if pr.Samples == 0 {
			addSummary(&res.Summary, sum)
		}
		for i, p := range pr.Points[:min(len(pr.Points), len(recs))] {
			if recs[i].Hash != "" || recs[i].Status != "" {
				state.Measured = append(state.Measured, Observation{Point: p, Samples: pr.Samples, Record: recs[i]})
			}
		}
		state.Rounds++
		if err != nil {
			return err
		}
	}
}

func addSummary(to *sweep.Summary, s sweep.Summary) {
	to.Planned += s.Planned
	to.Skipped += s.Skipped
	to.Ran += s.Ran
	to.OK += s.OK
	to.GateFailed += s.GateFailed
	to.Failed += s.Failed
	to.Records = append(to.Records, s.Records...)
	to.Elapsed += s.Elapsed
	c, d := &to.Compile, s.Compile
	c.Kernels += d.Kernels
	c.Compiled += d.Compiled
	c.Cached += d.Cached
	c.Elsewhere += d.Elsewhere
	c.Rejected += d.Rejected
	c.Pending = d.Pending
	c.CPUSeconds += d.CPUSeconds
	c.WallSeconds += d.WallSeconds
	c.Threads = max(c.Threads, d.Threads)
}

// sweepMeasurer measures through sweep.Run: full rounds into the run's
// directory, screening rounds into ScreenDir.
type sweepMeasurer struct {
	b  plan.Backend
	pl *plan.Plan
	ro sweep.RunOptions
}

func (m *sweepMeasurer) dir(pr Proposal) string {
	if pr.Samples > 0 {
		return ScreenDir(m.ro.Dir)
	}
	return m.ro.Dir
}

func (m *sweepMeasurer) measure(ctx context.Context, pr Proposal, round int) ([]results.Record, sweep.Summary, error) {
	ro := m.ro
	ro.Dir = m.dir(pr)
	var (
		pl   *plan.Plan
		b    = m.b
		want = make([]string, len(pr.Points))
	)
	nconf := len(Configurations(pr.Points))
	if pr.Samples > 0 {
		// A plan of the screening points: their own hashes, their own
		// sample count, in the proposal's order.
		pl = &plan.Plan{}
		for i, p := range pr.Points {
			q := screenPoint(p, pr.Samples)
			pl.Points = append(pl.Points, q)
			want[i] = q.Hash
		}
		ro.Filter = nil
		note := pr.Note
		if note == "" {
			note = fmt.Sprintf("round %d: screening, %d samples", round, pr.Samples)
		}
		fmt.Fprintf(logOf(ro), "%s, %d configurations into %s\n", note, nconf, results.FilePath(ro.Dir))
		b = annotate(b, note)
	} else {
		in := map[*plan.Point]bool{}
		for i, p := range pr.Points {
			in[p] = true
			want[i] = p.Hash
		}
		pl = m.pl
		ro.Filter = func(p *plan.Point) bool { return in[p] }
		if round > 1 || pr.Of > 1 {
			of := ""
			if pr.Of > 0 {
				of = fmt.Sprintf(" of %d", pr.Of)
			}
			fmt.Fprintf(logOf(ro), "round %d%s: %d configurations under the spec's stopping rule into %s\n",
				round, of, nconf, results.FilePath(ro.Dir))
		}
	}
	sum, err := sweep.Run(ctx, b, pl, ro)
	byHash := map[string]results.Record{}
	for _, r := range sum.Records {
		byHash[r.Hash] = r
	}
	recs := make([]results.Record, len(want))
	for i, h := range want {
		recs[i] = byHash[h]
	}
	return recs, sum, err
}

func labels(cs []*Configuration) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Label
	}
	return out
}

func logOf(ro sweep.RunOptions) io.Writer {
	if ro.Log == nil {
		return io.Discard
	}
	return ro.Log
}

// annotate returns b with note added to every measurement it returns, so
// that a screening record says what it is wherever it is read. A backend
// that runs several points at once stays one.
func annotate(b plan.Backend, note string) plan.Backend {
	n := &noted{Backend: b, note: note}
	if c, ok := b.(sweep.Concurrent); ok {
		return &notedConcurrent{noted: n, slots: c.Slots}
	}
	return n
}

type noted struct {
	plan.Backend
	note string
}

func (n *noted) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	rec, err := n.Backend.Run(ctx, p)
	for i := range rec.Probes {
		m := &rec.Probes[i]
		m.Note = strings.TrimPrefix(m.Note+"; "+n.note, "; ")
	}
	return rec, err
}

type notedConcurrent struct {
	*noted
	slots func() int
}

func (n *notedConcurrent) Slots() int { return n.slots() }
