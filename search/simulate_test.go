package search

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/replay"
)

func simulate(t *testing.T, recs []results.Record, name Name, seeds int) *SimResult {
	t.Helper()
	reg, err := Lookup(string(name))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Simulate(context.Background(), replay.New(recs), recs, func(c Common) (Strategy, error) {
		st := buildAll(t, c)[reg.Name]
		return st, nil
	}, SimOptions{Seeds: seeds, Within: []float64{0.01, 0.02}})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestSimulateGrid: grid times the records in file order, so the point at
// which its table comes within a threshold can be counted by hand: the
// first prefix of the file whose per-cell best is within it everywhere.
func TestSimulateGrid(t *testing.T) {
	recs := loadFixture(t)
	want := func(within float64) int {
		best := map[Cell]float64{}
		for i := range recs {
			if v, ok := timeOf(&recs[i], results.ProbeCold); ok {
				c := cellOf(&recs[i].Config)
				if b, seen := best[c]; !seen || v < b {
					best[c] = v
				}
			}
		}
		got := map[Cell]float64{}
		for i := range recs {
			v, _ := timeOf(&recs[i], results.ProbeCold)
			c := cellOf(&recs[i].Config)
			if g, seen := got[c]; !seen || v < g {
				got[c] = v
			}
			ok := len(got) == len(best)
			for c, b := range best {
				ok = ok && got[c] <= b*(1+within)
			}
			if ok {
				return i + 1
			}
		}
		return -1
	}
	res := simulate(t, recs, "grid", 3)
	if res.Points != 32 || res.Configs != 8 || res.Cells != 4 {
		t.Errorf("space %+v", res)
	}
	// Grid ends with the whole file: its table is the full set's.
	for _, e := range res.Ends {
		if e.Points != 32 || e.Worst != 0 {
			t.Errorf("grid ended at %+v", e)
		}
	}
	for i, w := range []float64{0.01, 0.02} {
		r := res.Reached[i]
		n := want(w)
		if !slices.Equal(r.Points, []int{n, n, n}) {
			t.Errorf("within %g: %v, want %d at every seed", w, r.Points, n)
		}
		// Grid pays every point's time up to there, compile and gates
		// included: the records' wall time, summed.
		var wall float64
		for _, rec := range recs[:n] {
			wall += rec.WallSec
		}
		if math.Abs(r.GPUSec[0]-wall) > 1e-6*wall {
			t.Errorf("within %g: %.3f GPU s, the records' wall time is %.3f", w, r.GPUSec[0], wall)
		}
	}
}

// TestSimulateModelBeatsRandom: on the fixture the model needs fewer
// points than random to come within 2% of the best table, over 10 seeds
// (measured: 11 against 20).
func TestSimulateModelBeatsRandom(t *testing.T) {
	recs := loadFixture(t)
	rnd := simulate(t, recs, "random", 10)
	mod := simulate(t, recs, "model", 10)
	for i := range rnd.Reached {
		r, m := rnd.Reached[i], mod.Reached[i]
		if len(r.Points) != 10 || len(m.Points) != 10 {
			t.Fatalf("within %g: random reached %d seeds, model %d", r.Within, len(r.Points), len(m.Points))
		}
		if medianInts(m.Points) >= medianInts(r.Points) {
			t.Errorf("within %g: model's median %g points, random's %g", r.Within, medianInts(m.Points), medianInts(r.Points))
		}
	}
	// The model stops on its own before the space is exhausted, its
	// table then within 1% everywhere.
	for _, e := range mod.Ends {
		if e.Points >= 32 || e.Worst > 0.01 {
			t.Errorf("the model stopped at %+v", e)
		}
	}
	// Random's draws differ by seed; so do its points.
	if slices.Min(rnd.Reached[1].Points) == slices.Max(rnd.Reached[1].Points) {
		t.Errorf("random reached 2%% at %v points at every seed", rnd.Reached[1].Points)
	}
}

// TestSimulateInvariantToUnits: the objective is relative, so times all
// scaled by one factor simulate the same.
func TestSimulateInvariantToUnits(t *testing.T) {
	recs := loadFixture(t)
	scaled := make([]results.Record, len(recs))
	for i, r := range recs {
		r.Probes = slices.Clone(r.Probes)
		for j := range r.Probes {
			s := slices.Clone(r.Probes[j].SamplesNS)
			for k := range s {
				s[k] *= 3.7
			}
			r.Probes[j].SamplesNS = s
		}
		scaled[i] = r
	}
	for _, name := range []Name{"random", "halving", "model"} {
		a, b := simulate(t, recs, name, 4), simulate(t, scaled, name, 4)
		for i := range a.Reached {
			if !slices.Equal(a.Reached[i].Points, b.Reached[i].Points) {
				t.Errorf("%s within %g: %v, scaled %v", name, a.Reached[i].Within, a.Reached[i].Points, b.Reached[i].Points)
			}
		}
	}
}

func TestWriteSimTable(t *testing.T) {
	recs := loadFixture(t)
	sp := SimSpace{Name: fixture}
	for _, n := range []Name{"grid", "random"} {
		r := simulate(t, recs, n, 3)
		r.Strategy = n
		sp.Results = append(sp.Results, r)
	}
	var b strings.Builder
	if err := WriteSimTable(&b, []SimSpace{sp}, 3); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"testdata/window.jsonl: 32 points, 8 configurations, 4 cells; 3 seeds", "random    2%", "1.00×"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

// TestEnds: where a strategy stopped is the median over seeds of its
// points, its GPU seconds and its worst cell's gap, each on its own (the
// seed of median points is not the seed of median seconds).
func TestEnds(t *testing.T) {
	got := ends([]End{{Points: 10, GPUSec: 9, Worst: 0}, {Points: 30, GPUSec: 5, Worst: 0.02}, {Points: 20, GPUSec: 7.25, Worst: 0.01}})
	if want := []string{"20", "7.2", "+1.0%"}; !slices.Equal(got, want) {
		t.Errorf("ends: %q, want %q", got, want)
	}
	got = ends([]End{{Points: 10, GPUSec: 1, Worst: math.Inf(1)}, {Points: 12, GPUSec: 2, Worst: math.Inf(1)}})
	if want := []string{"11", "1.5", "—"}; !slices.Equal(got, want) {
		t.Errorf("ends with cells never measured: %q, want %q", got, want)
	}
}

// TestReachMedian: a seed that never reached the threshold counts as
// more than any that did, so the median is over every seed.
func TestReachMedian(t *testing.T) {
	r := Reach{Seeds: 4, Points: []int{10, 30, 20}, GPUSec: []float64{1, 3, 2}}
	if m := r.median(); m != 25 {
		t.Errorf("median of 10, 30, 20 and a miss: %g, want 25", m)
	}
	r.Seeds = 5
	r.Points, r.GPUSec = r.Points[:2], r.GPUSec[:2]
	if m := r.median(); !math.IsInf(m, 1) {
		t.Errorf("median with 3 misses of 5: %g, want +Inf", m)
	}
}
