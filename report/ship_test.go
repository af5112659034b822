package report

import (
	"math"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// shipInput is the frontier experiment with its PyTorch references and
// the fault fixtures, plus three records derived from real ones that
// must never be shipped although each is the fastest at its point: a
// copy of a measured record whose tolerance gate failed, a reference
// made ten times faster, and a record of the fixture spec made twice as
// fast.
func shipInput(t *testing.T) (recs []results.Record, cheats map[string]bool) {
	recs = append(append(loadH200(t, "h200-frontier.jsonl"), loadH200(t, "sdpa.jsonl")...), loadH200(t, "faults.jsonl")...)
	var mma, cudnn *results.Record
	for i := range recs {
		r := &recs[i]
		if r.Config.NKV == 32768 && r.Config.Shape.Batch == 1 {
			switch {
			case r.Config.Variant == "mma-long" && mma == nil:
				mma = r
			case r.Config.Variant == "sdpa-cudnn":
				cudnn = r
			}
		}
	}
	if mma == nil || cudnn == nil {
		t.Fatal("no mma-long or sdpa-cudnn record at nkv 32768, batch 1")
	}
	gateFailed := relabel(*mma, "gatefailed")
	scaleSamples(&gateFailed, 0.5)
	gateFailed.Gates = append(gateFailed.Gates, results.Gate{Kind: results.GateTolerance, NKV: 29, Pass: false, MaxAbs: 0.5})
	fastRef := relabel(*cudnn, "sdpa-fast")
	scaleSamples(&fastRef, 0.1)
	fixture := relabel(*mma, "fixture-fast")
	fixture.Config.Spec = "faults"
	scaleSamples(&fixture, 0.5)
	recs = append(recs, gateFailed, fastRef, fixture)
	return recs, map[string]bool{"gatefailed": true, "sdpa-fast": true, "fixture-fast": true}
}

// At every shape and nkv the shipped configuration is the one with the
// lowest cold median among the records that passed every gate, are not
// references and not fixtures; its speedups match the medians, lie in
// their intervals and cover every reference measured there.
func TestShipPicksFastestPassing(t *testing.T) {
	recs, cheats := shipInput(t)
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	fixtures := results.FixtureSpecs(recs)
	type point struct {
		shape string
		nkv   int
	}
	want := map[point]*results.Record{}
	refs := map[point]map[string]bool{}
	for i := range recs {
		r := &recs[i]
		m := r.Probe(results.ProbeCold)
		if m == nil || r.Status != results.StatusOK || fixtures[r.Config.Spec] {
			continue
		}
		p := point{shapeKey(r.Config.Shape), r.Config.NKV}
		if r.Config.Kernel == "torch" {
			if refs[p] == nil {
				refs[p] = map[string]bool{}
			}
			refs[p][r.Config.Variant] = true
			continue
		}
		if !r.GatesPass() {
			continue
		}
		if w := want[p]; w == nil || m.Summary.Median < w.Probe(results.ProbeCold).Summary.Median {
			want[p] = r
		}
	}
	got := 0
	for _, s := range rep.Ship {
		if s.Dims.Capacity == 8192 {
			t.Errorf("shape %s of the fault fixtures is shipped", s.Shape)
		}
		for _, rg := range s.Ranges {
			if cheats[rg.Variant] {
				t.Errorf("%s nkv %d–%d ships %s", s.Shape, rg.MinNKV, rg.MaxNKV, rg.Variant)
			}
			for _, pt := range rg.Points {
				got++
				p := point{shapeKey(s.Dims), pt.NKV}
				w := want[p]
				if w == nil {
					t.Errorf("%s nkv=%d shipped with no candidate", s.Shape, pt.NKV)
					continue
				}
				if rg.Config != ConfigLabel(&w.Config) {
					t.Errorf("%s nkv=%d ships %s, want %s", s.Shape, pt.NKV, rg.Config, ConfigLabel(&w.Config))
				}
				if pt.NKV < rg.MinNKV || pt.NKV > rg.MaxNKV {
					t.Errorf("%s: nkv %d outside its range %d–%d", s.Shape, pt.NKV, rg.MinNKV, rg.MaxNKV)
				}
				seen := map[string]bool{}
				for _, v := range pt.Versus {
					seen[v.Against] = true
					if v.Ratio.Center <= 0 || v.Ratio.Lo > 0 && (v.Ratio.Lo > v.Ratio.Center || v.Ratio.Hi < v.Ratio.Center) {
						t.Errorf("%s nkv=%d vs %s: ratio %+v", s.Shape, pt.NKV, v.Against, v.Ratio)
					}
					if v.Against == "landed" {
						base := landedMedian(recs, p.shape, pt.NKV)
						if r := base / pt.Median.Center; math.Abs(r/v.Ratio.Center-1) > 0.02 {
							t.Errorf("%s nkv=%d: × landed %.3f, medians give %.3f", s.Shape, pt.NKV, v.Ratio.Center, r)
						}
					}
				}
				for ref := range refs[p] {
					if !seen[ref] {
						t.Errorf("%s nkv=%d: no speedup against reference %s", s.Shape, pt.NKV, ref)
					}
				}
			}
		}
	}
	if got != len(want) {
		t.Errorf("%d points shipped, %d have candidates", got, len(want))
	}
}

func landedMedian(recs []results.Record, shape string, nkv int) float64 {
	best := math.Inf(1)
	for i := range recs {
		r := &recs[i]
		if r.Landed && r.Status == results.StatusOK && shapeKey(r.Config.Shape) == shape && r.Config.NKV == nkv {
			if m := r.Probe(results.ProbeCold); m != nil {
				best = math.Min(best, m.Summary.Median)
			}
		}
	}
	return best
}

// Contiguous nkv with the same winner form one range; a change of winner
// opens the next.
func TestShipRanges(t *testing.T) {
	rep, err := Build(loadH200(t, "slice.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Ship) != 1 {
		t.Fatalf("%d shapes shipped, want 1", len(rep.Ship))
	}
	rs := rep.Ship[0].Ranges
	for i := 1; i < len(rs); i++ {
		if rs[i].Config == rs[i-1].Config {
			t.Errorf("ranges %d and %d both ship %s", i-1, i, rs[i].Config)
		}
		if rs[i].MinNKV <= rs[i-1].MaxNKV {
			t.Errorf("range %d starts at %d, before the previous ends (%d)", i, rs[i].MinNKV, rs[i-1].MaxNKV)
		}
	}
}

// The tune command names the files holding the shipped configurations.
func TestShipCommandNamesSources(t *testing.T) {
	a, b := loadH200(t, "slice.jsonl"), loadH200(t, "splits.jsonl")
	recs := append(a, b...)
	src := make([]string, len(recs))
	for i := range src {
		src[i] = "slice.jsonl"
		if i >= len(a) {
			src[i] = "splits.jsonl"
		}
	}
	rep, err := Build(recs, Options{Sources: src})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Ship {
		if len(s.Sources) == 0 || s.Command != "ktune tune --from "+joinSpace(s.Sources)+" -o out/dispatch/"+s.Shape {
			t.Errorf("%s: sources %v, command %q", s.Shape, s.Sources, s.Command)
		}
	}
}

// When the landed kernel's records are in a file of their own, the tune
// command names it beside the winners' file: the dispatch table's ties
// keep the landed configuration, which tune cannot see otherwise.
func TestShipCommandNamesTheLandedFile(t *testing.T) {
	recs := loadH200(t, "slice.jsonl")
	src := make([]string, len(recs))
	for i, r := range recs {
		src[i] = "others.jsonl"
		if r.Landed {
			src[i] = "landed.jsonl"
		}
	}
	rep, err := Build(recs, Options{Sources: src})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range rep.Ship {
		if s.Landed == "" {
			continue
		}
		if !strings.Contains(s.Command, "landed.jsonl") {
			t.Errorf("%s: command %q does not name the landed kernel's file", s.Shape, s.Command)
		}
	}
}

func joinSpace(xs []string) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out
}

// Two files that mark different configurations landed (the port d2 and
// the engine's own build) are named both, and each speedup is taken
// against the faster of them at that nkv, never the slower.
func TestShipTwoLanded(t *testing.T) {
	recs := append(loadH200(t, "h200-frontier.jsonl"), loadH200(t, "h200-pdl.jsonl")...)
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var s *ShipShape
	for i := range rep.Ship {
		if rep.Ship[i].Dims.Batch == 1 {
			s = &rep.Ship[i]
		}
	}
	if s == nil {
		t.Fatal("no batch-1 shape shipped")
	}
	if !strings.Contains(s.Landed, "d2 SPLITS=32") || !strings.Contains(s.Landed, "engine-ptx") {
		t.Errorf("landed %q: want both landed configurations named", s.Landed)
	}
	// At nkv 32768 the engine build (373 µs) is faster than the port
	// (517 µs): a speedup over "landed" near 15×, not 20×.
	for _, rg := range s.Ranges {
		for _, pt := range rg.Points {
			if pt.NKV != 32768 {
				continue
			}
			for _, v := range pt.Versus {
				if v.Against == "landed" && v.Ratio.Center > 17 {
					t.Errorf("speedup %.1f× over landed at 32768: taken against the slower landed record", v.Ratio.Center)
				}
			}
		}
	}
}
