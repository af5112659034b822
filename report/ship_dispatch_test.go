package report

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/dispatch"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// What to ship and the dispatch table pick a winner by one rule
// (decision.Decide) and differ only as decision.Ties says. Over random
// inputs of one shape, each a few configurations at a few nkv:
//
//   - tied (every configuration's samples at an nkv a permutation of one
//     set: equal medians, p = 1, at least two at each nkv): both name the
//     same winner at every nkv, whichever configuration is landed, and
//     whatever their SPLITS and names;
//   - untied (independent samples): where the dispatch table's winner is
//     significantly faster than every other, what to ship names it too,
//     and what to ship never names a configuration significantly faster
//     than the dispatch table's (the table ties only within noise).
func TestShipAndDispatchAgreeOnTies(t *testing.T) {
	t.Parallel()
	for seed := range uint64(150) {
		rng := rand.New(rand.NewPCG(seed, 0x73686970))
		tied := seed%3 != 2
		recs := randomSweep(rng, tied)
		ship, table := shipWinners(t, recs), dispatchWinners(t, recs)
		if len(ship) == 0 || len(ship) != len(table) {
			t.Fatalf("seed %d: ship decides %d nkv, the dispatch table %d", seed, len(ship), len(table))
		}
		for nkv, w := range table {
			s := ship[nkv]
			switch {
			case tied && s != w.config:
				t.Errorf("seed %d (tied) nkv %d: ship names %s, the dispatch table %s (%s)", seed, nkv, s, w.config, w.rule)
			case !tied && w.rule == decision.RuleSignificant && s != w.config:
				t.Errorf("seed %d nkv %d: the dispatch table's %s is significantly fastest; ship names %s", seed, nkv, w.config, s)
			case !tied && s != w.config:
				a, b := coldSamples(recs, nkv, s), coldSamples(recs, nkv, w.config)
				if c := stats.Compare(b, a, decision.Alpha); c.Significant && c.Ratio < 1 {
					t.Errorf("seed %d nkv %d: ship's %s is significantly faster than the dispatch table's %s (%s)", seed, nkv, s, w.config, w.rule)
				}
			}
		}
	}
}

// randomSweep is one shape's records: 2–4 configurations (at most one
// landed) at 1–5 nkv, each nkv measuring at least two of them.
func randomSweep(rng *rand.Rand, tied bool) []results.Record {
	shape := results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: abi.F16, Batch: 1, Capacity: 131072}
	type config struct {
		variant string
		splits  int
		landed  bool
	}
	var cfgs []config
	landed := rng.IntN(3) - 1 // −1: none
	for len(cfgs) < 2+rng.IntN(3) {
		c := config{variant: []string{"d2", "r4", "hybrid", "warp4"}[rng.IntN(4)], splits: []int{8, 16, 32, 64}[rng.IntN(4)]}
		if !slices.ContainsFunc(cfgs, func(o config) bool { return o.variant == c.variant && o.splits == c.splits }) {
			c.landed = len(cfgs) == landed
			cfgs = append(cfgs, c)
		}
	}
	var recs []results.Record
	for _, nkv := range []int{1, 29, 512, 2048, 8192, 32768}[:1+rng.IntN(5)] {
		base := make([]float64, 15)
		for i := range base {
			base[i] = float64(nkv+1000) * (1 + 0.05*rng.Float64())
		}
		at := rng.Perm(len(cfgs))[:2+rng.IntN(len(cfgs)-1)]
		for _, i := range at {
			c := cfgs[i]
			ns := make([]float64, len(base))
			for j, k := range rng.Perm(len(base)) {
				ns[j] = base[k]
				if !tied {
					ns[j] *= 1 + 0.1*rng.Float64()
				}
			}
			sorted := slices.Sorted(slices.Values(ns))
			recs = append(recs, results.Record{
				Schema: results.SchemaVersion,
				Hash:   fmt.Sprintf("%s/%d/%d", c.variant, c.splits, nkv),
				Config: results.Config{Spec: "ties", Variant: c.variant, Kernel: c.variant, Shape: shape, NKV: nkv, Splits: c.splits,
					Defines: []results.Define{{Name: abi.DefineSplits, Value: strconv.Itoa(c.splits)}},
					Grid:    [3]int{c.splits, shape.Heads, 1}, Block: [3]int{128, 1, 1}},
				Env:    results.Env{Device: "NVIDIA H200", Arch: "sm_90", ReadBWGBps: 4500},
				Status: results.StatusOK,
				Landed: c.landed,
				Probes: []results.Measurement{{Probe: results.ProbeCold, SamplesNS: ns, Converged: true,
					Summary: results.Summary{N: len(ns), Median: sorted[len(ns)/2], Min: sorted[0], Max: sorted[len(ns)-1]}}},
			})
		}
	}
	return recs
}

// shipWinners is what to ship's configuration at each nkv.
func shipWinners(t *testing.T, recs []results.Record) map[int]string {
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]string{}
	for _, s := range rep.Ship {
		for _, rg := range s.Ranges {
			for _, p := range rg.Points {
				out[p.NKV] = rg.Config
			}
		}
	}
	return out
}

type tableWinner struct {
	config string
	rule   decision.Rule
}

// dispatchWinners is the dispatch table's configuration at each measured
// nkv, named as what to ship names it.
func dispatchWinners(t *testing.T, recs []results.Record) map[int]tableWinner {
	tab, err := dispatch.Build(recs, nil, dispatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]tableWinner{}
	for _, st := range tab.Shapes {
		for _, rg := range st.Ranges {
			c := results.Config{Variant: rg.Variant, Splits: rg.Splits, Defines: rg.Defines}
			for _, p := range rg.Picks {
				out[p.NKV] = tableWinner{ConfigLabel(&c), p.Rule}
			}
		}
	}
	return out
}

// coldSamples are the cold samples of the configuration named config at nkv.
func coldSamples(recs []results.Record, nkv int, config string) []float64 {
	for i := range recs {
		if r := &recs[i]; r.Config.NKV == nkv && ConfigLabel(&r.Config) == config {
			return r.Probe(results.ProbeCold).SamplesNS
		}
	}
	return nil
}
