package search

import (
	"cmp"
	"context"
	"io"
	"math"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// timedObs is an observation of p whose record took wall seconds, gate
// of them in the gates and compile in the compile, with a cold median of
// ns (none when ns is 0).
func timedObs(p *plan.Point, samples int, wall, gate, compile, ns float64) Observation {
	r := results.Record{Config: p.Config, Status: results.StatusOK, WallSec: wall, GateSec: gate,
		Compile: results.Compile{Seconds: compile},
		Gates:   []results.Gate{{Kind: results.GateTolerance, NKV: 29, Pass: true}}}
	if ns > 0 {
		r.Probes = []results.Measurement{{Probe: results.ProbeCold, SamplesNS: []float64{ns, ns, ns}, Converged: true}}
	}
	return Observation{Point: p, Samples: samples, Record: r}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-6 {
		t.Errorf("%s: %g, want %g", what, got, want)
	}
}

// TestExpectCosts: a point's expected cost is the mean timing of the full
// measurements at its nkv, plus, while its gate group has no point timed,
// the mean compile and gates of the groups that paid them; before any
// group paid (or with no full measurement) there is nothing to weigh by.
func TestExpectCosts(t *testing.T) {
	p := searchPlan("8", "16", "32", "64").Points // 8@1024, 8@8192, 16@1024, …
	if e := expectCosts(nil); e != nil {
		t.Errorf("costs expected from no observation: %+v", e)
	}
	// Points whose kernels were gated elsewhere copy the verdict: no
	// overhead seen, nothing to weigh by.
	if e := expectCosts([]Observation{timedObs(p[1], 0, 0.3, 3e-6, 0, 0)}); e != nil {
		t.Errorf("costs expected from a copied verdict alone: %+v", e)
	}
	// A screening measurement alone says nothing of a full one's timing.
	if e := expectCosts([]Observation{timedObs(p[0], 5, 2.6, 2, 0.5, 0)}); e != nil {
		t.Errorf("costs expected without a full measurement: %+v", e)
	}
	obs := []Observation{
		timedObs(p[0], 0, 2.6, 2, 0.5, 0),  // 8@1024 pays 2.5 s and times 0.1
		timedObs(p[1], 0, 0.3, 3e-6, 0, 0), // 8@8192 copies the verdict, times 0.3
		timedObs(p[2], 0, 4.6, 4, 0.5, 0),  // 16@1024 pays 4.5 s and times 0.1
		timedObs(p[0], 5, 0.01, 0, 0, 0),   // a screening: not a full timing
		timedObs(p[7], 0, 0.3, 3e-6, 0, 0), // 64@8192 copies: paid, but says nothing of the overhead
	}
	e := expectCosts(obs)
	if e == nil {
		t.Fatal("no costs expected from two paid groups")
	}
	over := (2.5 + 3e-6 + 4.5) / 2
	at8192 := 0.3 - 3e-6
	near(t, "8@8192, its group paid", e.of(&p[1].Config), at8192)
	near(t, "16@8192, its group paid at another nkv", e.of(&p[3].Config), at8192)
	near(t, "32@1024, its group unpaid", e.of(&p[4].Config), 0.1+over)
	near(t, "32@8192, its group unpaid", e.of(&p[5].Config), at8192+over)
	c := p[4].Config
	c.NKV = 2048 // never timed: the mean over every nkv
	near(t, "32@2048", e.of(&c), (0.1+at8192+0.1+at8192)/4+over)
	near(t, "64@1024, its group paid by a copy", e.of(&p[6].Config), 0.1)
	// A pick pays its group for the rest of the round.
	e.pay(&p[4].Config)
	near(t, "32@8192 once 32@1024 is picked", e.of(&p[5].Config), at8192)
	// A point never costs nothing.
	e = expectCosts([]Observation{timedObs(p[0], 0, 2.5, 2, 0.5, 0)})
	near(t, "a point timed in no time", e.of(&p[0].Config), minPointSec)
}

// TestRankByCost: with equal expected improvement a point of a paid group
// ranks before one whose group must still be compiled and gated; an
// unpaid group's point of much higher expected improvement still wins;
// an empty cell comes first whatever the costs. Without costs, expected
// improvement alone decides.
func TestRankByCost(t *testing.T) {
	p := searchPlan("8", "16", "32").Points
	e := expectCosts([]Observation{timedObs(p[0], 0, 2.6, 2, 0.5, 0), timedObs(p[1], 0, 0.3, 3e-6, 0, 0)}) // 8 paid
	best := map[Cell]float64{cellOf(&p[0].Config): math.Log(100)}
	mu, sd := math.Log(95), 0.1
	paid, unpaid := rankOf(best, &p[0].Config, mu, sd, e), rankOf(best, &p[4].Config, mu, sd, e)
	if !paid.above(unpaid) || unpaid.above(paid) {
		t.Errorf("equal improvement: the paid group ranks %+v, the unpaid %+v", paid, unpaid)
	}
	paid, unpaid = rankOf(best, &p[0].Config, mu, sd, nil), rankOf(best, &p[4].Config, mu, sd, nil)
	if paid.above(unpaid) || unpaid.above(paid) {
		t.Errorf("equal improvement without costs: %+v against %+v", paid, unpaid)
	}
	// 50 µs predicted against a best of 100: the unpaid group wins over a
	// paid point expected at 99.9.
	hi, lo := rankOf(best, &p[4].Config, math.Log(50), 0.1, e), rankOf(best, &p[0].Config, math.Log(99.9), 0.01, e)
	if !hi.above(lo) {
		t.Errorf("a large improvement of an unpaid group ranks %+v, below a paid point's small one %+v", hi, lo)
	}
	empty := rankOf(best, &p[5].Config, math.Log(1000), 0.1, e) // 32@8192: no measurement at 8192
	if !empty.above(lo) || !empty.above(hi) {
		t.Errorf("an empty cell ranks %+v, below %+v or %+v", empty, lo, hi)
	}
}

// costFixture is the window fixture with gate seconds: the first point of
// each gate group paid compile and gates, overhead seconds, on top of its
// wall time; the others copied the verdict.
func costFixture(t *testing.T, overhead float64) ([]results.Record, *Space) {
	t.Helper()
	recs := latest(loadFixture(t))
	seen := map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if g := gateGroup(&r.Config); !seen[g] {
			seen[g] = true
			r.GateSec = overhead
			r.WallSec += overhead
		} else {
			r.GateSec = 1e-6
		}
	}
	pl, facts := simPlan(recs)
	return recs, NewSpace(pl.Points, facts, plan.Budget{})
}

// proposeAfter is the model's next proposal once the points of order
// were timed (every point's record from recs).
func proposeAfter(t *testing.T, o ModelOptions, sp *Space, recs []results.Record, order []*plan.Point) []*plan.Point {
	t.Helper()
	m := NewModel(o).(*model)
	st := &State{Space: sp, Log: io.Discard}
	if _, err := m.Next(context.Background(), st); err != nil { // the initial design
		t.Fatal(err)
	}
	m.proposed, m.count = map[string]bool{}, len(order)
	for _, p := range order {
		st.Measured = append(st.Measured, Observation{Point: p, Record: *recordOf(recs, p.Hash)})
		m.proposed[p.Hash] = true
	}
	pr, err := m.Next(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return pr.Points
}

// TestModelCostPaysGroupOnce: once a round picks a point of a group not
// yet compiled and gated, the group's other points cost only their
// timing in that round. With compile and gates at 100 s against
// milliseconds of timing, a round of 4 spends them on at most two groups
// (one, once every paid group is exhausted); were each pick charged the
// overhead again, the round would spread over four, as expected
// improvement alone does.
func TestModelCostPaysGroupOnce(t *testing.T) {
	recs, sp := costFixture(t, 100)
	groups := func(ps []*plan.Point) int {
		g := map[string]bool{}
		for _, p := range ps {
			g[gateGroup(&p.Config)] = true
		}
		return len(g)
	}
	spread := 0
	for k := 4; k <= 16; k += 4 {
		weighed := proposeAfter(t, ModelOptions{Batch: 4, Cost: true, Seed: 1}, sp, recs, sp.Points[:k])
		plain := proposeAfter(t, ModelOptions{Batch: 4, Seed: 1}, sp, recs, sp.Points[:k])
		if len(weighed) != 4 {
			t.Fatalf("after %d points: a round of %d", k, len(weighed))
		}
		if n := groups(weighed); n > 2 || (k == 8 && n != 1) {
			t.Errorf("after %d points (%d whole configurations): the round spans %d gate groups", k, k/4, n)
		}
		spread = max(spread, groups(plain))
	}
	if spread < 3 {
		t.Errorf("expected improvement alone spread a round over %d groups at most: the fixture tells nothing", spread)
	}
}

// TestModelCostKeepsStopRule: the stopping rule is the chance of a gain
// whether or not the ranking weighs costs, so over the same measurements
// the model stops with --cost exactly when it stops without: after every
// prefix of the points in order of their time over their cell's best
// (the winners first, so that later prefixes leave little to gain and
// the model stops), point by point, and configuration by configuration
// (every point left is then of a group still to compile and gate, at
// 100 s: a rule weighed by cost would stop there).
func TestModelCostKeepsStopRule(t *testing.T) {
	recs, sp := costFixture(t, 100)
	best := map[Cell]float64{}
	ratio := map[*plan.Point]float64{}
	for _, p := range sp.Points {
		ns, _ := timeOf(recordOf(recs, p.Hash), results.ProbeCold)
		ratio[p] = ns
		if b, ok := best[cellOf(&p.Config)]; !ok || ns < b {
			best[cellOf(&p.Config)] = ns
		}
	}
	byPoint := slices.Clone(sp.Points)
	for _, p := range byPoint {
		ratio[p] /= best[cellOf(&p.Config)]
	}
	slices.SortStableFunc(byPoint, func(a, b *plan.Point) int { return cmp.Compare(ratio[a], ratio[b]) })
	byConfig := slices.Clone(sp.Points)
	worst := map[string]float64{}
	for _, p := range byConfig {
		k := configKey(&p.Config)
		worst[k] = max(worst[k], ratio[p])
	}
	slices.SortStableFunc(byConfig, func(a, b *plan.Point) int {
		return cmp.Compare(worst[configKey(&a.Config)], worst[configKey(&b.Config)])
	})
	stops, differ := map[string]int{}, 0
	for _, order := range []struct {
		name string
		pts  []*plan.Point
		step int
	}{{"point", byPoint, 1}, {"configuration", byConfig, 4}} {
		for k := 4; k < len(order.pts); k += order.step {
			o := ModelOptions{Batch: 4, Seed: 1, Stop: DefaultModelStop}
			plain := proposeAfter(t, o, sp, recs, order.pts[:k])
			o.Cost = true
			weighed := proposeAfter(t, o, sp, recs, order.pts[:k])
			if (len(plain) == 0) != (len(weighed) == 0) {
				t.Errorf("after %d points by %s: %d proposed without costs, %d with", k, order.name, len(plain), len(weighed))
			}
			if len(plain) == 0 {
				stops[order.name]++
			}
			if len(plain) > 0 && len(weighed) > 0 && plain[0] != weighed[0] {
				differ++
			}
		}
	}
	if stops["point"] == 0 || differ == 0 {
		t.Errorf("stopped after %v prefixes, ranked otherwise after %d: the fixture tests nothing", stops, differ)
	}
}

// TestSplitGroup: the point that paid a group's compile and gates also
// paid its other one-off work (on the committed searches its timing is
// 0.7-0.8 s where the group's other points take 0.01-0.02 s with as many
// samples): the part beyond the dearest other point's timing moves to the
// group's overhead, so that the simulator charges it to whichever point a
// search times first, and the cost estimate does not read it as the
// timing of the payer's nkv.
func TestSplitGroup(t *testing.T) {
	rec := func(wall, gate, compile float64) *results.Record {
		return &results.Record{WallSec: wall, GateSec: gate, Compile: results.Compile{Seconds: compile}}
	}
	// b1 d64-f16-b1 of h200-frontier2-tune.jsonl: the payer at nkv 2048
	// (11.52 s: 10.28 gates, 0.46 compile), then 8192, 32768, 131072.
	over, ts := splitGroup([]*results.Record{rec(11.52, 10.28, 0.46), rec(0.01, 0, 0), rec(0.01, 0, 0), rec(0.02, 0, 0)})
	near(t, "overhead", over, 11.50)
	near(t, "payer's timing", ts[0], 0.02)
	near(t, "another's timing", ts[3], 0.02)
	// Whole: the wall times sum to the overhead and the timings.
	near(t, "total", over+ts[0]+ts[1]+ts[2]+ts[3], 11.52+0.01+0.01+0.02)
	// A payer no dearer than the others keeps its timing.
	over, ts = splitGroup([]*results.Record{rec(5.05, 5, 0), rec(0.2, 0, 0)})
	near(t, "cheap payer's overhead", over, 5)
	near(t, "cheap payer's timing", ts[0], 0.05)
	// A group of one point, or one that paid nothing, is split record by
	// record.
	over, ts = splitGroup([]*results.Record{rec(11.52, 10.28, 0.46)})
	near(t, "lone overhead", over, 10.74)
	near(t, "lone timing", ts[0], 0.78)
	over, ts = splitGroup([]*results.Record{rec(0.9, 0, 0), rec(0.01, 0, 0)})
	near(t, "unpaid overhead", over, 0)
	near(t, "unpaid timing", ts[0], 0.9)

	// The simulator charges the group's one-off work to the first point a
	// search times, whichever it is.
	p := searchPlan("8").Points
	recs := []results.Record{*rec(11.52, 10.28, 0.46), *rec(0.02, 0, 0)}
	for i := range recs {
		recs[i].Config, recs[i].Hash = p[i].Config, p[i].Config.Variant+string(rune('a'+i))
	}
	if gateGroup(&recs[0].Config) != gateGroup(&recs[1].Config) {
		t.Fatal("the two points are not of one gate group")
	}
	c := newCosts(recs)
	near(t, "the other point first", c.of(recs[1].Hash, 0, map[string]bool{}), 11.52)
}
