package search

import (
	"context"
	"flag"
	"io"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// fixture is a committed full search: window.yaml's 8 configurations at 4
// nkv on an H200, samples cut to 10 and gates to one per point.
const fixture = "testdata/window.jsonl"

func loadFixture(t *testing.T) []results.Record {
	t.Helper()
	set, err := results.Load(fixture)
	if err != nil || len(set.Warnings) > 0 {
		t.Fatalf("loading %s: %v %v", fixture, err, set.Warnings)
	}
	return set.Records
}

// TestRegistry: every strategy has a distinct name, its flags are its
// own, and a flag of another strategy is refused naming its owner.
func TestRegistry(t *testing.T) {
	seen := map[Name]bool{}
	for _, r := range registry {
		if seen[r.Name] || r.Summary == "" || r.Flags == nil {
			t.Errorf("registration %+v: duplicate, or without summary or flags", r.Name)
		}
		seen[r.Name] = true
	}
	if !slices.Equal(Names(), []Name{"grid", "random", "halving", "model"}) {
		t.Errorf("registry order %v", Names())
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := DeclareFlags(fs) // panics if two strategies declare one flag
	if got := f.FlagsOf("halving"); !slices.Equal(got, []string{"keep", "rounds"}) {
		t.Errorf("halving declares %v", got)
	}
	if f.Owner("samples") != "random" || f.Owner("batch") != "model" || len(f.FlagsOf("grid")) != 0 {
		t.Errorf("owners: samples %q, batch %q, grid %v", f.Owner("samples"), f.Owner("batch"), f.FlagsOf("grid"))
	}
	if err := fs.Parse([]string{"--rounds", "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Build("model", Common{}); err == nil || err.Error() != "--rounds belongs to --search halving" {
		t.Errorf("model with --rounds: %v", err)
	}
	if st, err := f.Build("halving", Common{}); err != nil || st.(*halving).o.Rounds != 2 {
		t.Errorf("halving with --rounds 2: %v %+v", err, st)
	}
	if _, err := f.Build("random", Common{}); err == nil {
		t.Error("random without --samples built, and with another's flag")
	}
}

// buildAll builds every registered strategy with its default flags
// (random draws 3 configurations).
func buildAll(t *testing.T, c Common) map[Name]Strategy {
	t.Helper()
	out := map[Name]Strategy{}
	for _, r := range registry {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		build := r.Flags(fs)
		if r.Name == "random" {
			if err := fs.Set("samples", "3"); err != nil {
				t.Fatal(err)
			}
		}
		st, err := build(c)
		if err != nil {
			t.Fatalf("%s: %v", r.Name, err)
		}
		out[r.Name] = st
	}
	return out
}

// TestEveryStrategyOnReplay runs each registered strategy through Search
// on the replay backend over the committed fixture: every full record is
// a plan point's, no point is timed twice, the landed configuration is
// measured by those that keep a baseline, and a second run over the same
// directory times nothing (a search resumes).
func TestEveryStrategyOnReplay(t *testing.T) {
	recs := loadFixture(t)
	pl, _ := simPlan(latest(recs))
	for name := range buildAll(t, Common{Seed: 7, Probe: results.ProbeCold}) {
		t.Run(string(name), func(t *testing.T) {
			// The screening points have hashes of their own: the replay
			// backend serves them their configuration's record.
			b, _, err := replay.Load(replay.MatchConfig, fixture)
			if err != nil {
				t.Fatal(err)
			}
			e := newRunEnv(t)
			run := func() *SearchResult {
				st := buildAll(t, Common{Seed: 7, Probe: results.ProbeCold})[name]
				res, err := Search(context.Background(), b, pl, SearchOptions{Name: name, Strategy: st, Run: e.opts()})
				if err != nil {
					t.Fatal(err)
				}
				return res
			}
			res := run()
			inPlan := map[string]bool{}
			for _, p := range pl.Points {
				inPlan[p.Hash] = true
			}
			final := readRecords(t, e.dir)
			if len(final) == 0 || len(final) != res.Summary.Ran {
				t.Fatalf("%d full records, summary ran %d", len(final), res.Summary.Ran)
			}
			seen := map[string]bool{}
			for _, r := range final {
				if !inPlan[r.Hash] || seen[r.Hash] {
					t.Errorf("record %s: not a plan point, or timed twice", r.Hash)
				}
				seen[r.Hash] = true
			}
			if name != "model" && !slices.Contains(res.Chosen, "7b d2 NR=4 SPLITS=32") {
				t.Errorf("chosen %v lacks the landed configuration", res.Chosen)
			}
			calls := len(b.Calls())
			again := run()
			if len(b.Calls()) != calls || again.Summary.Ran != 0 {
				t.Errorf("the same search again timed %d points", len(b.Calls())-calls)
			}
			if !slices.Equal(again.Chosen, res.Chosen) {
				t.Errorf("resumed search chose %v, first %v", again.Chosen, res.Chosen)
			}
		})
	}
}

// TestPruneNeverTimes: a point whose compile facts break its variant's
// budget or the search's, or that does not build, is never timed.
func TestPruneNeverTimes(t *testing.T) {
	pl := searchPlan("16", "32", "64")
	facts := map[string]Facts{}
	for _, p := range pl.Points {
		regs := 64
		switch splitsOf(p) {
		case "32":
			regs = 200
		}
		facts[p.Hash] = Facts{Builds: true, Resources: []results.Resource{{Kernel: "attn_partial", Registers: regs}}}
	}
	facts[pl.Points[4].Hash] = Facts{Builds: false} // SPLITS=64 at 1024
	pl.Points[5].Budget = plan.Budget{NoSpills: true}
	facts[pl.Points[5].Hash] = Facts{Builds: true, Resources: []results.Resource{{Kernel: "attn_partial", Registers: 64, LocalBytes: 16}}}

	b := newTimed(func(*plan.Point) (float64, float64) { return 1e4, 0.01 })
	e := newRunEnv(t)
	res, err := Search(context.Background(), b, pl, SearchOptions{Facts: facts, Budget: plan.Budget{MaxRegisters: 128}, Run: e.opts()})
	if err != nil {
		t.Fatal(err)
	}
	var timed []string
	for _, p := range pl.Points {
		if b.calls[p.Hash] > 0 {
			timed = append(timed, p.Hash)
		}
	}
	same(t, "timed", timed, []string{pl.Points[0].Hash, pl.Points[1].Hash})
	if len(res.Pruned) != 4 {
		t.Errorf("pruned %v, want SPLITS=32 twice (registers), SPLITS=64 twice (no build, spills)", res.Pruned)
	}
}
