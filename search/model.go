package search

import (
	"context"
	"flag"
	"fmt"
	"math"
	"strconv"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// Defaults of the model strategy.
const (
	// DefaultModelBatch is how many points one round proposes: enough for
	// the next points' compiles and gates to run while the device times,
	// few enough that each round learns from the last.
	DefaultModelBatch = 4
	// DefaultModelStop ends a search once no untimed point has a chance
	// of DefaultModelStop or more, by the model, of being 1% faster than
	// the best of its cell. At 0.05, 1 seed in 20 of the simulation over
	// h200-frontier2-b16 stopped before its table was within 2% of the
	// best; at 0.02 none of those over the committed searches did.
	DefaultModelStop = 0.02
)

var modelRegistration = Registration{
	Name:    "model",
	Summary: "Bayesian optimisation: a Gaussian process over the axes and compile facts proposes the points most likely to improve the table",
	Seeded:  true,
	Flags: func(fs *flag.FlagSet) func(Common) (Strategy, error) {
		batch := fs.Int("batch", DefaultModelBatch, "model: points per round (`N`)")
		budget := fs.Int("budget", 0, "model: time at most `N` points (0: until the model expects no gain)")
		stop := fs.Float64("stop", DefaultModelStop, "model: stop once no point has probability `P` of being 1% faster than its cell's best")
		facts := fs.Bool("facts", false, "model: learn from compile facts too (registers, local and shared memory, occupancy)")
		cost := fs.Bool("cost", false, "model: rank points by expected improvement per expected GPU second, as measured so far: "+
			"a point of a configuration not yet timed pays its compile and gates (seconds), one of a timed configuration only its timing (milliseconds). "+
			"The stopping rule stays the chance of a gain")
		return func(c Common) (Strategy, error) {
			switch {
			case *batch < 1:
				return nil, fmt.Errorf("--batch %d: want at least 1", *batch)
			case *budget < 0:
				return nil, fmt.Errorf("--budget %d: want 0 (no limit) or more", *budget)
			case *stop < 0 || *stop >= 1:
				return nil, fmt.Errorf("--stop %g: want a probability in [0, 1)", *stop)
			}
			return NewModel(ModelOptions{Batch: *batch, Budget: *budget, Stop: *stop, Facts: *facts, Cost: *cost, Seed: c.Seed, Probe: c.Probe}), nil
		}
	},
}

// ModelOptions configure the model strategy.
type ModelOptions struct {
	Batch  int     // points per round; 0 means DefaultModelBatch
	Budget int     // at most this many points; 0: no limit
	Stop   float64 // see DefaultModelStop; 0 runs until the space is exhausted
	Facts  bool    // learn from compile facts when every point has them
	// Cost ranks by expected improvement per expected GPU second
	// (expectedCosts) instead of expected improvement alone.
	Cost  bool
	Seed  uint64 // the initial design's draw
	Probe results.Probe
}

// NewModel returns the model strategy: Bayesian optimisation of the
// dispatch table. Its objective is the table's: at every cell (shape and
// nkv) the fastest configuration, so it models log time over the points
// (configuration × nkv, never only whole configurations) and proposes, in
// each round, the points of largest expected improvement over the best
// time measured in their own cell, in log time so that cells of 20 µs
// and of 2 ms weigh alike. A cell with no measurement yet comes first:
// a table needs one.
//
// The first round is the landed configuration (the table's baseline)
// and Batch points drawn with Seed; the next fit a Gaussian process
// (gp.go) to every full measurement that passed its gates and pick a
// batch greedily, each pick added to the process at its predicted mean
// (the "kriging believer") so that one batch spreads over the space.
func NewModel(o ModelOptions) Strategy {
	if o.Batch <= 0 {
		o.Batch = DefaultModelBatch
	}
	if o.Probe == "" {
		o.Probe = results.ProbeCold
	}
	return &model{o: o, proposed: map[string]bool{}}
}

type model struct {
	o        ModelOptions
	x        map[string][]float64 // features by point hash
	shared   []bool               // the configuration's columns of x
	gp       *gp
	proposed map[string]bool
	count    int
	fitN     int // points at the last hyperparameter fit
}

// UsesFacts says whether the model learns from compile facts.
func (m *model) UsesFacts() bool { return m.o.Facts }

func (m *model) Settings() map[string]string {
	return map[string]string{"seed": strconv.FormatUint(m.o.Seed, 10), "batch": strconv.Itoa(m.o.Batch),
		"budget": strconv.Itoa(m.o.Budget), "facts": strconv.FormatBool(m.o.Facts), "cost": strconv.FormatBool(m.o.Cost)}
}

func (m *model) Next(_ context.Context, st *State) (Proposal, error) {
	sp := st.Space
	if m.x == nil {
		x, shared := features(sp.Points, sp.Facts, m.o.Facts)
		m.shared = shared
		m.x = make(map[string][]float64, len(x))
		for i, p := range sp.Points {
			m.x[p.Hash] = x[i]
		}
	}
	var cand []*plan.Point
	for _, p := range sp.Points {
		if !m.proposed[p.Hash] {
			cand = append(cand, p)
		}
	}
	n := m.o.Batch
	if m.o.Budget > 0 {
		n = min(n, m.o.Budget-m.count)
	}
	if len(cand) == 0 || n <= 0 {
		return Proposal{}, nil
	}
	var pick []*plan.Point
	if m.count == 0 {
		pick = m.initial(sp, cand, n)
	} else {
		var err error
		pick, err = m.choose(st, cand, n)
		if err != nil {
			return Proposal{}, err
		}
	}
	for _, p := range pick {
		m.proposed[p.Hash] = true
	}
	m.count += len(pick)
	return Proposal{Points: pick}, nil
}

// initial is the landed configuration's points and n drawn ones.
func (m *model) initial(sp *Space, cand []*plan.Point, n int) []*plan.Point {
	var pick, rest []*plan.Point
	for _, p := range cand {
		if p.Landed {
			pick = append(pick, p)
		} else {
			rest = append(rest, p)
		}
	}
	if len(pick) > 0 {
		// The baseline measures every cell of its shape: enough to fit.
		return pick
	}
	for _, i := range drawOrder(len(rest), min(n, len(rest)), m.o.Seed) {
		pick = append(pick, rest[i])
	}
	return pick
}

// choose fits the process and picks n points by expected improvement.
func (m *model) choose(st *State, cand []*plan.Point, n int) ([]*plan.Point, error) {
	var xs [][]float64
	var ys []float64
	best := map[Cell]float64{}
	for h, r := range st.Full() {
		t, ok := timeOf(r, m.o.Probe)
		x := m.x[h]
		if !ok || x == nil {
			continue
		}
		y := math.Log(t)
		xs, ys = append(xs, x), append(ys, y)
		c := cellOf(&r.Config)
		if b, ok := best[c]; !ok || y < b {
			best[c] = y
		}
	}
	if len(xs) < 2 {
		// Nothing to learn from yet: draw.
		var pick []*plan.Point
		for _, i := range drawOrder(len(cand), min(n, len(cand)), m.o.Seed+uint64(m.count)) {
			pick = append(pick, cand[i])
		}
		return pick, nil
	}
	sortPoints(xs, ys) // map order must not decide the fit
	if m.gp == nil {
		m.gp = newGP(len(xs[0]), m.shared)
	}
	// The hyperparameters move little once there are a few dozen points,
	// and each step costs O(n³): step them when the data grew by a fifth.
	iters := 0
	switch {
	case len(xs) < 3*m.o.Batch:
		iters = 100
	case float64(len(xs)) >= 1.2*float64(m.fitN):
		iters = 30
	}
	if iters > 0 {
		m.fitN = len(xs)
	}
	if err := m.gp.fit(xs, ys, iters); err != nil {
		return nil, fmt.Errorf("model search: %w", err)
	}
	g := m.gp
	var cost *expectedCosts
	if m.o.Cost {
		cost = expectCosts(st.Measured)
	}
	var pick []*plan.Point
	taken := map[*plan.Point]bool{}
	for range n {
		var top rank
		bestI := -1
		var bestMu float64
		for i, p := range cand {
			if taken[p] {
				continue
			}
			mu, sd := g.predict(m.x[p.Hash])
			r := rankOf(best, &p.Config, mu, sd, cost)
			if bestI < 0 || r.above(top) {
				top, bestI, bestMu = r, i, mu
			}
		}
		if bestI < 0 {
			break
		}
		p := cand[bestI]
		// The stopping rule is the chance of a gain, never weighed by
		// cost: a search must not stop because what is left is dear.
		if len(pick) == 0 && m.o.Stop > 0 && m.stopNow(best, cand) {
			return nil, nil
		}
		pick = append(pick, p)
		taken[p] = true
		if cost != nil {
			cost.pay(&p.Config)
		}
		c := cellOf(&p.Config)
		if b, ok := best[c]; !ok || bestMu < b {
			best[c] = bestMu
		}
		// Kriging believer: the pick as if measured at its predicted mean.
		xs, ys = append(xs, m.x[p.Hash]), append(ys, bestMu)
		if err := g.fit(xs, ys, 0); err != nil {
			break // the batch so far stands
		}
	}
	return pick, nil
}

// A rank orders the candidates of a round.
type rank struct {
	empty bool // its cell has no measurement yet
	// score is the expected improvement (per expected GPU second when
	// costs weigh); in an empty cell, minus the predicted log time.
	score float64
}

// above reports whether a ranks before b: an empty cell outranks every
// improvement (a table needs one), then the higher score.
func (a rank) above(b rank) bool {
	if a.empty != b.empty {
		return a.empty
	}
	return a.score > b.score
}

// rankOf ranks a candidate of configuration c predicted at N(mu, sd²) in
// log time: by its expected improvement over its cell's best, per
// expected GPU second when cost is not nil; in an empty cell, the point
// predicted fastest.
func rankOf(best map[Cell]float64, c *results.Config, mu, sd float64, cost *expectedCosts) rank {
	b, ok := best[cellOf(c)]
	if !ok {
		return rank{empty: true, score: -mu}
	}
	ei := expectedImprovement(b, mu, sd)
	if cost != nil {
		ei /= cost.of(c)
	}
	return rank{score: ei}
}

// stopNow reports whether every cell has a measurement and no candidate
// has probability o.Stop of beating its cell's best by 1%.
func (m *model) stopNow(best map[Cell]float64, cand []*plan.Point) bool {
	for _, p := range cand {
		b, ok := best[cellOf(&p.Config)]
		if !ok {
			return false
		}
		mu, sd := m.gp.predict(m.x[p.Hash])
		if normCDF((b-math.Log(1.01)-mu)/sd) >= m.o.Stop {
			return false
		}
	}
	return true
}

// expectedImprovement of a normal N(mu, sd²) below best.
func expectedImprovement(best, mu, sd float64) float64 {
	if sd <= 0 {
		return max(best-mu, 0)
	}
	z := (best - mu) / sd
	return (best-mu)*normCDF(z) + sd*math.Exp(-z*z/2)/math.Sqrt(2*math.Pi)
}

func normCDF(z float64) float64 { return 0.5 * math.Erfc(-z/math.Sqrt2) }

// sortPoints orders the training points by their features, so that the
// fit does not depend on a map's order.
func sortPoints(xs [][]float64, ys []float64) {
	idx := make([]int, len(xs))
	for i := range idx {
		idx[i] = i
	}
	less := func(a, b int) bool {
		for k := range xs[a] {
			if xs[a][k] != xs[b][k] {
				return xs[a][k] < xs[b][k]
			}
		}
		return ys[a] < ys[b]
	}
	// insertion sort: a few hundred points at most
	for i := 1; i < len(idx); i++ {
		for j := i; j > 0 && less(idx[j], idx[j-1]); j-- {
			idx[j], idx[j-1] = idx[j-1], idx[j]
		}
	}
	x2, y2 := make([][]float64, len(xs)), make([]float64, len(ys))
	for i, k := range idx {
		x2[i], y2[i] = xs[k], ys[k]
	}
	copy(xs, x2)
	copy(ys, y2)
}
