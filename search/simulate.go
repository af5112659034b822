package search

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/sweep"
)

// SimOptions configure Simulate.
type SimOptions struct {
	// Seeds is how many seeds (1, 2, … Seeds) each strategy runs with.
	Seeds int
	// Probe is the measurement that decides; "" means cold.
	Probe results.Probe
	// Within are the thresholds: a search has found the best once the
	// table of its full measurements is within this fraction of the full
	// set's at every cell, e.g. 0.01 and 0.02.
	Within []float64
	// Budget prunes points, as SearchOptions.Budget does.
	Budget plan.Budget
}

// A SimResult is one strategy over one recorded space, over every seed.
type SimResult struct {
	Strategy Name
	// Points, Configs and Cells are the space's; Pruned its points never
	// timed.
	Points, Configs, Cells, Pruned int
	// Reached has one entry per threshold of SimOptions.Within.
	Reached []Reach
	// Ends has one entry per seed: where the strategy stopped on its own.
	Ends []End
}

// An End is where a strategy stopped: the points it timed, their GPU
// seconds, and how far the worst cell of its table was from the full
// set's (0.03: 3% slower; +Inf: a cell never measured).
type End struct {
	Points int
	GPUSec float64
	Worst  float64
}

// A Reach is how much a strategy timed until its table came within a
// threshold of the best, over the seeds.
type Reach struct {
	Within float64
	// Points and GPUSec hold one value per seed that reached it: timed
	// points (screening ones included) and the GPU seconds the records
	// say they cost, compile and gates included.
	Points []int
	GPUSec []float64
	// Seeds is how many seeds ran; those missing from Points never got
	// there.
	Seeds int
}

// Simulate runs a strategy over recorded results as if they were a
// device: each proposed point is served its record by b (a screening
// measurement keeps the first samples of the record's), and
// after every point the table of the full measurements so far is
// compared with the table of the whole set. The objective is the one
// 'ktune tune' ships: at each cell (shape and nkv) the fastest
// configuration, by the median of the probe; a search has come within x
// of the best when the worst cell of its table is within x of the full
// set's, every cell measured. The strategy runs until it stops on its
// own (End). build makes the strategy for a seed; b serves the records
// (replay.New(recs)), each point by its hash.
func Simulate(ctx context.Context, b plan.Backend, recs []results.Record, build func(Common) (Strategy, error), o SimOptions) (*SimResult, error) {
	probe := cmp.Or(o.Probe, results.ProbeCold)
	recs = latest(recs)
	pl, facts := simPlan(recs)
	sp := NewSpace(pl.Points, facts, o.Budget)
	best := map[Cell]float64{}
	for _, p := range sp.Points {
		r := recordOf(recs, p.Hash)
		if t, ok := timeOf(r, probe); ok {
			c := cellOf(&p.Config)
			if b, seen := best[c]; !seen || t < b {
				best[c] = t
			}
		}
	}
	if len(best) == 0 {
		return nil, errors.New("simulating: no record passed its gates and was measured")
	}
	res := &SimResult{Points: len(sp.Points), Configs: len(sp.Configs), Cells: len(best), Pruned: len(sp.Pruned)}
	for _, w := range o.Within {
		res.Reached = append(res.Reached, Reach{Within: w, Seeds: o.Seeds})
	}
	cost := newCosts(recs)
	for seed := 1; seed <= o.Seeds; seed++ {
		st, err := build(Common{Seed: uint64(seed), Probe: probe, Simulated: true})
		if err != nil {
			return nil, err
		}
		m := &simMeasurer{b: b, probe: probe, best: best, got: map[Cell]float64{},
			cost: cost, paid: map[string]bool{}, within: o.Within, reached: make([]bool, len(o.Within)), res: res}
		if err := drive(ctx, st, sp, m, &SearchResult{}, io.Discard); err != nil {
			return nil, fmt.Errorf("simulating seed %d: %w", seed, err)
		}
		res.Ends = append(res.Ends, End{Points: m.points, GPUSec: m.gpu, Worst: m.worst() - 1})
	}
	return res, nil
}

// simMeasurer serves proposals from the replay backend and watches the
// table.
type simMeasurer struct {
	b       plan.Backend
	probe   results.Probe
	best    map[Cell]float64 // the full set's table
	got     map[Cell]float64 // the table so far
	cost    *costs
	paid    map[string]bool
	points  int
	gpu     float64
	within  []float64
	reached []bool
	res     *SimResult
}

func (m *simMeasurer) measure(ctx context.Context, pr Proposal, _ int) ([]results.Record, sweep.Summary, error) {
	out := make([]results.Record, len(pr.Points))
	var sum sweep.Summary
	for i, p := range pr.Points {
		rec, err := m.b.Run(ctx, p)
		if err != nil {
			return out, sum, err
		}
		if pr.Samples > 0 {
			for j := range rec.Probes {
				s := &rec.Probes[j].SamplesNS
				*s = (*s)[:min(len(*s), pr.Samples)]
			}
		}
		out[i] = rec
		sum.Planned++
		sum.Ran++
		m.points++
		m.gpu += m.cost.of(p.Hash, pr.Samples, m.paid)
		if pr.Samples > 0 {
			continue
		}
		if t, ok := timeOf(&rec, m.probe); ok {
			c := cellOf(&p.Config)
			if g, seen := m.got[c]; !seen || t < g {
				m.got[c] = t
			}
		}
		m.check()
	}
	return out, sum, nil
}

// worst is the largest ratio of the table so far to the full set's, over
// the cells; +Inf while a cell has no measurement.
func (m *simMeasurer) worst() float64 {
	worst := 1.0
	for c, b := range m.best {
		g, ok := m.got[c]
		if !ok {
			return math.Inf(1)
		}
		worst = max(worst, g/b)
	}
	return worst
}

// check records the thresholds the table now meets.
func (m *simMeasurer) check() {
	worst := m.worst()
	for i, w := range m.within {
		if !m.reached[i] && worst <= 1+w {
			m.reached[i] = true
			r := &m.res.Reached[i]
			r.Points = append(r.Points, m.points)
			r.GPUSec = append(r.GPUSec, m.gpu)
		}
	}
}

// latest keeps the last record of each hash, in the order of their first
// appearance, as a results file reads.
func latest(recs []results.Record) []results.Record {
	idx := map[string]int{}
	var out []results.Record
	for _, r := range recs {
		if i, ok := idx[r.Hash]; ok {
			out[i] = r
			continue
		}
		idx[r.Hash] = len(out)
		out = append(out, r)
	}
	return out
}

// simPlan rebuilds the plan the records were measured from: one point per
// record, in file order, and the compile facts each record carries.
func simPlan(recs []results.Record) (*plan.Plan, map[string]Facts) {
	pl := &plan.Plan{}
	facts := map[string]Facts{}
	for i := range recs {
		r := &recs[i]
		p := &plan.Point{Index: i, Hash: r.Hash, Config: r.Config, Landed: r.Landed}
		for _, m := range r.Probes {
			p.Measure.MaxSamples = max(p.Measure.MaxSamples, len(m.SamplesNS))
			if !slices.Contains(p.Probes, m.Probe) {
				p.Probes = append(p.Probes, m.Probe)
			}
		}
		pl.Points = append(pl.Points, p)
		facts[r.Hash] = FactsOf(r)
	}
	return pl, facts
}

func recordOf(recs []results.Record, hash string) *results.Record {
	for i := range recs {
		if recs[i].Hash == hash {
			return &recs[i]
		}
	}
	return nil
}
