package search

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/sweep"
)

// A timed is a fake device: every point passes its gates and takes as many
// cold samples as its Measure.MaxSamples, drawn from the distribution the
// test gives its configuration (and nkv).
type timed struct {
	mu    sync.Mutex
	dist  func(p *plan.Point) (median, spread float64)
	calls map[string]int // hash → runs
	byN   map[int]int    // sample count → runs
}

func newTimed(dist func(p *plan.Point) (median, spread float64)) *timed {
	return &timed{dist: dist, calls: map[string]int{}, byN: map[int]int{}}
}

var testEnv = results.Env{Device: "NVIDIA H200", Arch: "sm_90", SMs: 132, ReadBWGBps: 4560}

func (b *timed) Env(context.Context) (results.Env, error) { return testEnv, nil }
func (b *timed) Close() error                             { return nil }

func (b *timed) Run(_ context.Context, p *plan.Point) (results.Record, error) {
	b.mu.Lock()
	b.calls[p.Hash]++
	b.byN[p.Measure.MaxSamples]++
	b.mu.Unlock()
	med, spread := b.dist(p)
	// Uniform on [med·(1−spread), med·(1+spread)], seeded by the point so
	// that a run is reproducible.
	r := rand.New(rand.NewPCG(uint64(p.Index), uint64(p.Measure.MaxSamples)))
	s := make([]float64, p.Measure.MaxSamples)
	for i := range s {
		s[i] = med * (1 + spread*(2*r.Float64()-1))
	}
	return results.Record{Config: p.Config, Env: testEnv, Status: results.StatusOK,
		Gates:  []results.Gate{{Kind: results.GateTolerance, NKV: 29, Pass: true}},
		Probes: []results.Measurement{{Probe: results.ProbeCold, SamplesNS: s, Converged: true, Bytes: p.Config.KVBytes()}}}, nil
}

// searchPlan builds one shape × the named configurations (variant d2,
// SPLITS = the name's value) × nkv {1024, 8192}; the first configuration
// is the landed one. Full points take 20 samples.
func searchPlan(splits ...string) *plan.Plan {
	pl := &plan.Plan{}
	for ci, sp := range splits {
		for _, nkv := range []int{1024, 8192} {
			i := len(pl.Points)
			pl.Points = append(pl.Points, &plan.Point{
				Index: i,
				Hash:  fmt.Sprintf("%016x", 0xb000+i),
				Config: results.Config{
					Spec: "t", Variant: "d2", Kernel: "d2",
					Defines: []results.Define{{Name: "HEAD_DIM", Value: "128"}, {Name: "SPLITS", Value: sp}},
					Shape:   results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 131072},
					NKV:     nkv,
				},
				GateKey: fmt.Sprintf("g%d", ci),
				Probes:  []results.Probe{results.ProbeCold},
				Measure: plan.Measure{Warmup: 3, MinSamples: 20, MaxSamples: 20, MaxNoise: 0.03},
				Landed:  ci == 0,
			})
		}
	}
	return pl
}

func splitsOf(p *plan.Point) string { v, _ := p.Config.Define("SPLITS"); return v }

func readRecords(t *testing.T, dir string) []results.Record {
	t.Helper()
	recs, warns, err := results.ReadFile(results.FilePath(dir))
	if err != nil || len(warns) > 0 {
		t.Fatalf("reading %s: %v, warnings %v", dir, err, warns)
	}
	return recs
}

func TestConfigurationsGroupNKV(t *testing.T) {
	pl := searchPlan("32", "64", "16")
	cs := Configurations(pl.Points)
	var got []string
	for _, c := range cs {
		got = append(got, fmt.Sprintf("%s:%d:%v", c.Label, len(c.Points), c.Landed))
	}
	same(t, "configurations", got, []string{"7b d2 SPLITS=32:2:true", "7b d2 SPLITS=64:2:false", "7b d2 SPLITS=16:2:false"})
}

func TestSampleDeterministicWithLanded(t *testing.T) {
	var names []string
	for i := range 12 {
		names = append(names, fmt.Sprint(8+i))
	}
	cs := Configurations(searchPlan(names...).Points)
	distinct := map[string]bool{}
	for seed := range uint64(20) {
		a, b := labels(Sample(cs, 4, seed)), labels(Sample(cs, 4, seed))
		same(t, fmt.Sprintf("seed %d drawn twice", seed), a, b)
		if a[0] != cs[0].Label {
			t.Errorf("seed %d: %v lacks the landed configuration %s", seed, a, cs[0].Label)
		}
		// Four drawn; the landed one is added only when not among them.
		if len(a) != 4 && len(a) != 5 {
			t.Errorf("seed %d: %d configurations, want 4 drawn (+ landed)", seed, len(a))
		}
		if !slices.IsSortedFunc(a, func(x, y string) int { return indexOf(cs, x) - indexOf(cs, y) }) {
			t.Errorf("seed %d: %v not in plan order", seed, a)
		}
		distinct[strings.Join(a, ",")] = true
	}
	if len(distinct) < 10 {
		t.Errorf("20 seeds drew only %d distinct samples of 4 among 12: the seed hardly matters", len(distinct))
	}
	if got := Sample(cs, 50, 1); len(got) != len(cs) {
		t.Errorf("asking for more than there are: %d of %d", len(got), len(cs))
	}
}

func indexOf(cs []*Configuration, label string) int {
	return slices.IndexFunc(cs, func(c *Configuration) bool { return c.Label == label })
}

func TestSearchRandomRunsWholeConfigurations(t *testing.T) {
	pl := searchPlan("8", "16", "32", "64", "128", "256")
	b := newTimed(func(*plan.Point) (float64, float64) { return 1e4, 0.01 })
	e := newRunEnv(t)
	res, err := Search(context.Background(), b, pl, SearchOptions{Name: "random", Strategy: &random{samples: 2, seed: 3}, Run: e.opts()})
	if err != nil {
		t.Fatal(err)
	}
	want := labels(Sample(Configurations(pl.Points), 2, 3))
	same(t, "chosen", res.Chosen, want)
	if res.Settings["seed"] != "3" || res.Settings["samples"] != "2" {
		t.Errorf("draw not recorded: %+v", res.Settings)
	}
	var wantHashes []string
	for _, p := range pl.Points {
		if slices.Contains(want, configLabel(p)) {
			wantHashes = append(wantHashes, p.Hash)
		}
	}
	same(t, "recorded points (every nkv of each drawn configuration)", fileHashes(t, e.dir), wantHashes)
}

// TestSearchGridEqualsRun: grid is Run over every point.
func TestSearchGridEqualsRun(t *testing.T) {
	pl := searchPlan("16", "32", "64")
	dist := func(p *plan.Point) (float64, float64) { return 1e4 * float64(len(splitsOf(p))), 0.02 }
	a, b := newRunEnv(t), newRunEnv(t)
	res, err := Search(context.Background(), newTimed(dist), pl, SearchOptions{Run: a.opts()})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := sweep.Run(context.Background(), newTimed(dist), pl, b.opts())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(readRecords(t, a.dir), readRecords(t, b.dir)) {
		t.Error("grid search and sweep recorded different files")
	}
	if res.Summary.Ran != sum.Ran || res.Summary.Ran != len(pl.Points) || len(res.Rounds) != 1 {
		t.Errorf("grid ran %d points in %d rounds, sweep %d, plan has %d", res.Summary.Ran, len(res.Rounds), sum.Ran, len(pl.Points))
	}
}

// halvingDist: SPLITS=32 (landed) ~200 µs, 16 ~100 µs, 64 ~101 µs (close
// to 16), 8 ~150 µs at 1024 (clearly slower) but 50 µs at 8192 (the
// fastest there), 128 ~150 µs everywhere (clearly slower), 256 ~130 µs
// with samples spread ±90% (slower by the median, not significantly).
func halvingDist(p *plan.Point) (float64, float64) {
	switch splitsOf(p) {
	case "32":
		return 2e5, 0.01
	case "16":
		return 1e5, 0.01
	case "64":
		return 1.01e5, 0.01
	case "8":
		if p.Config.NKV == 8192 {
			return 5e4, 0.01
		}
		return 1.5e5, 0.01
	case "128":
		return 1.5e5, 0.01
	case "256":
		return 1.3e5, 0.9
	}
	panic(splitsOf(p))
}

func TestSearchHalving(t *testing.T) {
	pl := searchPlan("32", "16", "64", "8", "128", "256")
	b := newTimed(halvingDist)
	e := newRunEnv(t)
	opts := SearchOptions{Name: "halving", Strategy: NewHalving(HalvingOptions{Rounds: 3, Keep: DefaultKeep}), Run: e.opts()}
	res, err := Search(context.Background(), b, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 3 {
		t.Fatalf("%d rounds, want 3: %+v", len(res.Rounds), res.Rounds)
	}
	r1 := res.Rounds[0]
	if r1.Samples != ScreenSamples || len(r1.Ran) != 6 {
		t.Errorf("round 1: %d samples over %v", r1.Samples, r1.Ran)
	}
	// Only the configuration slower everywhere, clearly and significantly,
	// goes; 8 wins at 8192, 256 is too noisy to call, 32 is the baseline.
	same(t, "dropped in round 1", r1.Dropped, []string{"7b d2 SPLITS=128"})
	same(t, "chosen", res.Chosen, []string{"7b d2 SPLITS=32", "7b d2 SPLITS=16", "7b d2 SPLITS=64", "7b d2 SPLITS=8", "7b d2 SPLITS=256"})
	if got := b.byN[ScreenSamples]; got != 12 {
		t.Errorf("round 1 ran %d points, want 12", got)
	}
	if got := b.byN[2*ScreenSamples]; got != 10 {
		t.Errorf("round 2 (twice the samples) ran %d points, want 10", got)
	}

	// The final records are full measurements of the plan's own points.
	final := readRecords(t, e.dir)
	if len(final) != 10 {
		t.Errorf("%d records in results.jsonl, want the 10 points of the survivors", len(final))
	}
	planHash := map[string]*plan.Point{}
	for _, p := range pl.Points {
		planHash[p.Hash] = p
	}
	for _, r := range final {
		p := planHash[r.Hash]
		if p == nil || splitsOf(p) == "128" {
			t.Errorf("results.jsonl holds %s (%s nkv=%d), not a survivor's plan point", r.Hash, r.Config.Variant, r.Config.NKV)
			continue
		}
		if n := len(r.Probes[0].SamplesNS); n != 20 || r.Probes[0].Note != "" {
			t.Errorf("final record of SPLITS=%s nkv=%d: %d samples, note %q; want the full rule's 20 and no note",
				splitsOf(p), p.Config.NKV, n, r.Probes[0].Note)
		}
	}
	// The screening records are kept apart, marked, with hashes of their own.
	screened := readRecords(t, ScreenDir(e.dir))
	if len(screened) != 22 {
		t.Errorf("%d screening records, want 12 + 10", len(screened))
	}
	for _, r := range screened {
		if planHash[r.Hash] != nil {
			t.Errorf("screening record %s has a full point's hash", r.Hash)
		}
		n := len(r.Probes[0].SamplesNS)
		want := fmt.Sprintf("halving round %d of 3: screening, %d samples", n/ScreenSamples, n)
		if r.Probes[0].Note != want {
			t.Errorf("screening note %q, want %q", r.Probes[0].Note, want)
		}
	}

	// Run again: every round resumes, nothing is measured twice.
	before := len(b.calls)
	opts.Strategy = NewHalving(HalvingOptions{Rounds: 3, Keep: DefaultKeep})
	res2, err := Search(context.Background(), b, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	for h, n := range b.calls {
		if n != 1 {
			t.Errorf("point %s measured %d times", h, n)
		}
	}
	if len(b.calls) != before || res2.Summary.Ran != 0 || !reflect.DeepEqual(res2.Chosen, res.Chosen) {
		t.Errorf("the second search measured %d points and chose %v", res2.Summary.Ran, res2.Chosen)
	}
}

// TestSearchHalvingStopsWhenDecided: once one configuration per nkv is
// left, the next round is the final one.
func TestSearchHalvingStopsWhenDecided(t *testing.T) {
	pl := searchPlan("16", "128")
	b := newTimed(halvingDist)
	e := newRunEnv(t)
	res, err := Search(context.Background(), b, pl, SearchOptions{Strategy: NewHalving(HalvingOptions{Rounds: 4, Keep: DefaultKeep}), Run: e.opts()})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rounds) != 2 || res.Rounds[1].Samples != 0 || res.Rounds[1].Number != 2 {
		t.Fatalf("rounds %+v, want a screening round and the final one", res.Rounds)
	}
	same(t, "chosen", res.Chosen, []string{"7b d2 SPLITS=16"})
	if b.byN[2*ScreenSamples] != 0 {
		t.Errorf("a second screening round ran %d points", b.byN[2*ScreenSamples])
	}
	// The landed configuration is dropped like any other only when it is
	// not landed: here it is, and it survives although slower.
	pl = searchPlan("128", "16")
	e = newRunEnv(t)
	res, err = Search(context.Background(), newTimed(halvingDist), pl, SearchOptions{Strategy: NewHalving(HalvingOptions{Keep: DefaultKeep}), Run: e.opts()})
	if err != nil {
		t.Fatal(err)
	}
	same(t, "chosen with a slow landed configuration", res.Chosen, []string{"7b d2 SPLITS=128", "7b d2 SPLITS=16"})
}

// TestSearchHalvingKeepMargin: a configuration significantly slower but
// within the margin stays; with no margin it goes.
func TestSearchHalvingKeepMargin(t *testing.T) {
	dist := func(p *plan.Point) (float64, float64) {
		if splitsOf(p) == "64" {
			return 1.02e5, 0.001
		}
		return 1e5, 0.001
	}
	for _, tc := range []struct {
		keep float64
		want []string
	}{
		{0.03, []string{"7b d2 SPLITS=16", "7b d2 SPLITS=64"}},
		{0, []string{"7b d2 SPLITS=16"}},
	} {
		pl := searchPlan("16", "64")
		e := newRunEnv(t)
		res, err := Search(context.Background(), newTimed(dist), pl, SearchOptions{Strategy: NewHalving(HalvingOptions{Keep: tc.keep}), Run: e.opts()})
		if err != nil {
			t.Fatal(err)
		}
		same(t, fmt.Sprintf("chosen with keep %g", tc.keep), res.Chosen, tc.want)
	}
}

func TestScreenPointHash(t *testing.T) {
	p := searchPlan("16").Points[0]
	a, b := screenPoint(p, 5), screenPoint(p, 10)
	if a.Hash == p.Hash || a.Hash == b.Hash || a.Hash != screenPoint(p, 5).Hash || len(a.Hash) != len(p.Hash) {
		t.Errorf("screening hashes %s %s of %s: want distinct, stable and of the same length", a.Hash, b.Hash, p.Hash)
	}
	if p.Measure.MaxSamples != 20 || a.Measure.MinSamples != 5 || a.Measure.MaxSamples != 5 {
		t.Errorf("screening changed the plan's point (%+v) or missed its own (%+v)", p.Measure, a.Measure)
	}
	// Never more than the spec allows.
	if c := screenPoint(p, 40); c.Measure.MaxSamples != 20 {
		t.Errorf("screening with 40 samples over a maximum of 20 takes %d", c.Measure.MaxSamples)
	}
}

func TestLookup(t *testing.T) {
	for _, s := range []string{"grid", "random", "halving", "model"} {
		if r, err := Lookup(s); err != nil || string(r.Name) != s {
			t.Errorf("%s: %v %v", s, r.Name, err)
		}
	}
	if _, err := Lookup("anneal"); err == nil {
		t.Error("anneal accepted")
	}
}
