package search

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"testing"

	"github.com/ktune/ktune/plan"
)

// TestModelFindsSyntheticOptimum: over a space of 16 split counts at two
// lengths, where time is a smooth function of log SPLITS with its
// minimum at a known split count per length (16 at 1024, 128 at 8192),
// the model finds both minima timing at most half the points, on a
// device that draws each point's samples.
func TestModelFindsSyntheticOptimum(t *testing.T) {
	var splits []string
	for s := 4; s <= 19; s++ {
		splits = append(splits, strconv.Itoa(s*s)) // 16 … 361
	}
	splits[0], splits[2] = splits[2], splits[0] // landed: 36, away from both minima
	pl := searchPlan(splits...)
	opt := map[int]float64{1024: 16, 8192: 121}
	dist := func(p *plan.Point) (float64, float64) {
		s, _ := strconv.ParseFloat(splitsOf(p), 64)
		d := math.Log2(s) - math.Log2(opt[p.Config.NKV])
		return 1e4 * (1 + 0.3*d*d) * float64(p.Config.NKV) / 1024, 0.002
	}
	b := newTimed(dist)
	e := newRunEnv(t)
	st := NewModel(ModelOptions{Batch: 2, Seed: 1, Stop: DefaultModelStop})
	res, err := Search(context.Background(), b, pl, SearchOptions{Name: "model", Strategy: st, Run: e.opts()})
	if err != nil {
		t.Fatal(err)
	}
	found := map[int]string{}
	for _, p := range pl.Points {
		if b.calls[p.Hash] > 0 && fmt.Sprint(opt[p.Config.NKV]) == splitsOf(p) {
			found[p.Config.NKV] = splitsOf(p)
		}
	}
	if len(found) != 2 {
		t.Errorf("timed the minimum at %v of both lengths", found)
	}
	t.Logf("timed %d of %d points in %d rounds", len(b.calls), len(pl.Points), len(res.Rounds))
	if n := len(b.calls); n > len(pl.Points)/2 {
		t.Errorf("timed %d of %d points before it stopped", n, len(pl.Points))
	}
	if len(res.Rounds) < 3 {
		t.Errorf("%d rounds: the model never proposed from a fit", len(res.Rounds))
	}
}

// TestModelBudget: with a budget the model times exactly that many points
// (a batch is cut to what is left).
func TestModelBudget(t *testing.T) {
	pl := searchPlan("8", "16", "32", "64", "128", "256")
	b := newTimed(func(p *plan.Point) (float64, float64) { return 1e4, 0.01 })
	e := newRunEnv(t)
	st := NewModel(ModelOptions{Batch: 3, Budget: 7, Seed: 1})
	if _, err := Search(context.Background(), b, pl, SearchOptions{Strategy: st, Run: e.opts()}); err != nil {
		t.Fatal(err)
	}
	if len(b.calls) != 7 {
		t.Errorf("timed %d points with a budget of 7", len(b.calls))
	}
}
