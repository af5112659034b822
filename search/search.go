// Package search walks the space of a plan: grid (every point), a seeded
// random sample of configurations, or successive halving with
// Mann-Whitney drops. Each strategy runs its points through sweep.Run
// against any plan.Backend, so the strategies are tested on the replay
// backend without a GPU.
package search

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"math/bits"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ktune/ktune/sweep"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
	"github.com/ktune/ktune/plan"
)

// Strategy names how Search walks the space of a plan.
type Strategy string

const (
	// StrategyGrid runs every point: what Run does.
	StrategyGrid Strategy = "grid"
	// StrategyRandom runs a seeded sample of the configurations, each at
	// every nkv, plus the landed configuration.
	StrategyRandom Strategy = "random"
	// StrategyHalving is successive halving: every configuration is
	// screened with a few samples, the significantly slower ones are
	// dropped, the rest screened again with twice the samples, and the
	// survivors finally measured under the spec's full stopping rule.
	StrategyHalving Strategy = "halving"
)

// ParseStrategy parses a strategy name.
func ParseStrategy(s string) (Strategy, error) {
	switch st := Strategy(strings.TrimSpace(s)); st {
	case StrategyGrid, StrategyRandom, StrategyHalving:
		return st, nil
	}
	return "", fmt.Errorf("unknown search %q: want grid, random or halving", s)
}

// Defaults of the halving strategy.
const (
	// ScreenSamples is the sample count of the first screening round. Four
	// is the fewest at which a Mann-Whitney test of two configurations can
	// reach p < 0.05 (stats.MinP: 2/70 at 4 against 4, 2/252 at 5); five
	// leaves a margin for one tied or outlying sample, so a clearly slower
	// configuration can be dropped at the first look.
	ScreenSamples = 5
	// DefaultRounds: two screening rounds (5 and 10 samples) and the full
	// round.
	DefaultRounds = 3
	// DefaultKeep is the margin within which a configuration is kept even
	// when significantly slower: a few percent is within what one clock or
	// one layout change of the engine moves, and a screening round must not
	// decide what only the full measurement can.
	DefaultKeep = 0.03
	// DefaultSearchAlpha is the significance level of a drop: every
	// comparison's (decision.Alpha).
	DefaultSearchAlpha = decision.Alpha
)

// ScreenDir is where the screening rounds of a halving search into dir
// record their points: a sweep directory of its own (dir/screen), so that
// dir/results.jsonl, which the dispatch table reads, holds only full
// measurements, while the screening records stay readable by every tool
// that reads a sweep directory (ktune report dir/screen).
func ScreenDir(dir string) string { return filepath.Join(dir, "screen") }

// A Configuration is the points of a plan that share variant, defines and
// shape: they differ only in nkv. It is the unit a search keeps or drops.
// It is not the GateKey: a dispatch variant's points take their arm's
// kernel and a grid that reads nkv gives each length its own geometry, so
// one configuration may span several GateKeys.
type Configuration struct {
	Key    string        // identity: shape, variant and defines
	Label  string        // for people, e.g. "7b d2 NR=4 SPLITS=32"
	Landed bool          // the landed configuration: the baseline of the table
	Points []*plan.Point // in plan order
}

// Configurations groups points into configurations, ordered by their first
// point.
func Configurations(points []*plan.Point) []*Configuration {
	var out []*Configuration
	byKey := map[string]*Configuration{}
	for _, p := range points {
		key := configKey(p)
		c := byKey[key]
		if c == nil {
			c = &Configuration{Key: key, Label: configLabel(p)}
			byKey[key] = c
			out = append(out, c)
		}
		c.Landed = c.Landed || p.Landed
		c.Points = append(c.Points, p)
	}
	return out
}

// configKey is a configuration's identity: the shape's (abi.Shape.Identity)
// and its label, which a spec may give two shapes of one identity, the
// variant and the defines.
func configKey(p *plan.Point) string {
	c := &p.Config
	return c.Shape.Name + "\x00" + c.Shape.Identity() + "\x00" + c.Variant + "\x00" + c.Defines.String()
}

func configLabel(p *plan.Point) string {
	// The shape already says the derived defines.
	parts := []string{p.Config.Shape.Name, p.Config.Variant, p.Config.Defines.Own().String()}
	return strings.TrimSpace(strings.Join(parts, " "))
}

// SearchOptions configure Search.
type SearchOptions struct {
	Strategy Strategy // "" means grid
	// Samples is how many configurations the random strategy draws (the
	// landed one is added when not drawn).
	Samples int
	// Seed drives the random draw: the same seed, plan and filter draw the
	// same configurations on every machine and every run, so an
	// interrupted search resumes.
	Seed uint64
	// Rounds is how many rounds halving runs at most, the last under the
	// spec's full stopping rule; 0 means DefaultRounds. With 1 it is grid.
	Rounds int
	// Keep is the halving margin: a configuration whose median is within
	// this fraction of the best's is kept even when significantly slower.
	// Negative means 0; use DefaultKeep for the default.
	Keep float64
	// Probe is the measurement whose samples halving compares; "" means
	// cold. It should be the one the dispatch table is built from.
	Probe results.Probe
	// Alpha is the significance level of a drop; 0 means
	// DefaultSearchAlpha.
	Alpha float64
	// Run are the options of every round. Run.Dir receives the final
	// round (every point of grid and random); screening rounds go to
	// ScreenDir(Run.Dir). Run.Filter, if set, narrows the space first.
	Run sweep.RunOptions
}

// A SearchResult says what a search ran and what it kept.
type SearchResult struct {
	Strategy Strategy `json:"strategy"`
	// Random is the draw of a random search; nil for the others.
	Random *Draw `json:"random,omitempty"`
	// Configurations counts those of the plan (after the filter).
	Configurations int `json:"configurations"`
	// Chosen labels the configurations of the final round, in plan order.
	Chosen []string `json:"chosen"`
	Rounds []Round  `json:"rounds"`
	// Summary is the final round's, whose records are in Run.Dir.
	Summary sweep.Summary `json:"-"`
}

// A Draw is what a random search drew from.
type Draw struct {
	Seed    uint64 `json:"seed"`
	Samples int    `json:"samples"` // configurations asked for
}

// A Round is one pass of a search over its configurations.
type Round struct {
	Number int `json:"round"` // 1-based
	Of     int `json:"of"`
	// Samples is the fixed sample count of a screening round; 0 is the
	// spec's own stopping rule.
	Samples int    `json:"samples,omitempty"`
	Dir     string `json:"dir"`
	// Ran labels the configurations measured; Dropped those the round
	// rejected (halving screening rounds only).
	Ran     []string `json:"ran"`
	Dropped []string `json:"dropped,omitempty"`
	// Points, Skipped and Measured count the round's points: planned,
	// already recorded, run now.
	Points   int           `json:"points"`
	Skipped  int           `json:"skipped"`
	Measured int           `json:"measured"`
	Summary  sweep.Summary `json:"-"`
}

// Search explores plan on b with the chosen strategy and records the
// measured points as Run does. Every round resumes: a point already
// recorded in its directory is not measured again (the screening points
// have hashes of their own, derived from the full point's and the sample
// count, so neither stands in for the other).
//
// The result covers what was done even when an error stops the search.
func Search(ctx context.Context, b plan.Backend, pl *plan.Plan, opts SearchOptions) (*SearchResult, error) {
	var points []*plan.Point
	for _, p := range pl.Points {
		if opts.Run.Filter == nil || opts.Run.Filter(p) {
			points = append(points, p)
		}
	}
	configs := Configurations(points)
	st := opts.Strategy
	if st == "" {
		st = StrategyGrid
	}
	res := &SearchResult{Strategy: st, Configurations: len(configs)}
	switch st {
	case StrategyGrid:
		return res, finalRound(ctx, b, pl, opts, res, configs, 1, 1)
	case StrategyRandom:
		if opts.Samples < 1 {
			return res, fmt.Errorf("random search: %d configurations asked for; want at least 1", opts.Samples)
		}
		res.Random = &Draw{Seed: opts.Seed, Samples: opts.Samples}
		return res, finalRound(ctx, b, pl, opts, res, Sample(configs, opts.Samples, opts.Seed), 1, 1)
	case StrategyHalving:
		return res, halving(ctx, b, pl, opts, res, configs)
	}
	return res, fmt.Errorf("unknown search %q", st)
}

// Sample draws n of configs with a generator seeded by seed and adds the
// landed configurations not drawn; the result is in the order of configs.
// The draw is a partial Fisher-Yates shuffle over PCG's output, which
// math/rand/v2 keeps stable across Go releases, so that a seed names the
// same sample everywhere.
func Sample(configs []*Configuration, n int, seed uint64) []*Configuration {
	if n >= len(configs) {
		return slices.Clone(configs)
	}
	src := rand.NewPCG(seed, 0x6b74756e65) // "ktune"
	idx := make([]int, len(configs))
	for i := range idx {
		idx[i] = i
	}
	for i := 0; i < n; i++ {
		// The high word of x·m is uniform on [0, m) up to a bias of m/2⁶⁴.
		hi, _ := bits.Mul64(src.Uint64(), uint64(len(idx)-i))
		j := i + int(hi)
		idx[i], idx[j] = idx[j], idx[i]
	}
	pick := make([]bool, len(configs))
	for _, i := range idx[:n] {
		pick[i] = true
	}
	var out []*Configuration
	for i, c := range configs {
		if pick[i] || c.Landed {
			out = append(out, c)
		}
	}
	return out
}

// finalRound runs every point of configs under the spec's stopping rule
// into opts.Run.Dir.
func finalRound(ctx context.Context, b plan.Backend, pl *plan.Plan, opts SearchOptions, res *SearchResult, configs []*Configuration, number, of int) error {
	in := map[*plan.Point]bool{}
	for _, c := range configs {
		res.Chosen = append(res.Chosen, c.Label)
		for _, p := range c.Points {
			in[p] = true
		}
	}
	ro := opts.Run
	ro.Filter = func(p *plan.Point) bool { return in[p] }
	if number > 1 || of > 1 {
		fmt.Fprintf(logOf(ro), "round %d of %d: %d configurations under the spec's stopping rule into %s\n",
			number, of, len(configs), results.FilePath(ro.Dir))
	}
	sum, err := sweep.Run(ctx, b, pl, ro)
	res.Summary = sum
	res.Rounds = append(res.Rounds, Round{Number: number, Of: of, Dir: ro.Dir, Ran: labels(configs),
		Points: sum.Planned, Skipped: sum.Skipped, Measured: sum.Ran, Summary: sum})
	return err
}

// halving runs the screening rounds and then the final round over their
// survivors.
func halving(ctx context.Context, b plan.Backend, pl *plan.Plan, opts SearchOptions, res *SearchResult, configs []*Configuration) error {
	rounds := opts.Rounds
	if rounds <= 0 {
		rounds = DefaultRounds
	}
	probe := cmp.Or(opts.Probe, results.ProbeCold)
	alpha := opts.Alpha
	if alpha == 0 {
		alpha = DefaultSearchAlpha
	}
	keep := max(opts.Keep, 0)
	alive := configs
	for r := 1; r < rounds; r++ {
		n := ScreenSamples << (r - 1)
		sum, err := screenRound(ctx, b, opts.Run, alive, n, r, rounds)
		round := Round{Number: r, Of: rounds, Samples: n, Dir: ScreenDir(opts.Run.Dir), Ran: labels(alive),
			Points: sum.Planned, Skipped: sum.Skipped, Measured: sum.Ran, Summary: sum}
		if err != nil {
			res.Rounds = append(res.Rounds, round)
			return err
		}
		kept, contested := screen(alive, n, sum.Records, probe, alpha, keep)
		var dropped []string
		for _, c := range alive {
			if !slices.Contains(kept, c) {
				dropped = append(dropped, c.Label)
			}
		}
		round.Dropped = dropped
		res.Rounds = append(res.Rounds, round)
		fmt.Fprintf(logOf(opts.Run), "round %d of %d: kept %d of %d configurations", r, rounds, len(kept), len(alive))
		if len(dropped) > 0 {
			fmt.Fprintf(logOf(opts.Run), "; dropped %s", strings.Join(dropped, ", "))
		}
		fmt.Fprintln(logOf(opts.Run))
		alive = kept
		if !contested {
			// One contender per shape and nkv: more screening cannot
			// change the table, only the final measurement can.
			break
		}
	}
	return finalRound(ctx, b, pl, opts, res, alive, len(res.Rounds)+1, rounds)
}

// screenRound measures every point of configs with exactly n samples (or
// the spec's maximum, if lower) into the screening directory.
func screenRound(ctx context.Context, b plan.Backend, ro sweep.RunOptions, configs []*Configuration, n, r, rounds int) (sweep.Summary, error) {
	sp := &plan.Plan{}
	for _, c := range configs {
		for _, p := range c.Points {
			sp.Points = append(sp.Points, screenPoint(p, n))
		}
	}
	ro.Dir = ScreenDir(ro.Dir)
	ro.Filter = nil
	note := fmt.Sprintf("halving round %d of %d: screening, %d samples", r, rounds, n)
	fmt.Fprintf(logOf(ro), "%s, %d configurations into %s\n", note, len(configs), results.FilePath(ro.Dir))
	return sweep.Run(ctx, annotate(b, note), sp, ro)
}

// screenPoint is the point p measured with exactly n samples. Its hash
// does not name the round, so that a search run again with other --rounds
// still finds its screenings.
func screenPoint(p *plan.Point, n int) *plan.Point { return p.WithSamples(n) }

// screen decides which configurations survive a screening round. At each
// shape and nkv, a configuration is dropped when its samples are
// significantly slower than the fastest configuration's (Mann-Whitney U,
// no distribution assumed: kernel times are a floor and a right tail) and
// its median is slower by more than keep. A configuration survives when it
// is not dropped at some nkv — it may win a range there — and the landed
// configuration always survives, so the table keeps its baseline.
// contested reports whether some shape and nkv still has more than one
// contender. n is the round's sample count: it derives the hashes of the
// round's records from the configurations' points.
func screen(configs []*Configuration, n int, recs []results.Record, probe results.Probe, alpha, keep float64) (kept []*Configuration, contested bool) {
	type entry struct {
		c      *Configuration
		s      []float64
		median float64
	}
	type cell struct {
		shape results.Shape
		nkv   int
	}
	byHash := map[string]*results.Record{}
	for i := range recs {
		byHash[recs[i].Hash] = &recs[i]
	}
	cells := map[cell][]entry{}
	var order []cell
	for _, c := range configs {
		for _, p := range c.Points {
			r := byHash[screenPoint(p, n).Hash]
			if r == nil || r.Status != results.StatusOK || !r.GatesPass() {
				continue
			}
			m := r.Probe(probe)
			if m == nil || len(m.SamplesNS) == 0 {
				continue
			}
			k := cell{p.Config.Shape, p.Config.NKV}
			if cells[k] == nil {
				order = append(order, k)
			}
			cells[k] = append(cells[k], entry{c, m.SamplesNS, sampleMedian(m.SamplesNS)})
		}
	}
	survives := map[*Configuration]bool{}
	for _, k := range order {
		es := cells[k]
		best := es[0]
		for _, e := range es[1:] {
			if e.median < best.median {
				best = e
			}
		}
		contenders := 0
		for _, e := range es {
			// Dropped only when the test can decide and does: an undecidable
			// comparison keeps the configuration for the next round.
			if e.c != best.c && e.median > best.median*(1+keep) && stats.Compare(best.s, e.s, alpha).Significant {
				continue
			}
			survives[e.c] = true
			contenders++
		}
		contested = contested || contenders > 1
	}
	for _, c := range configs {
		if survives[c] || c.Landed {
			kept = append(kept, c)
		}
	}
	return kept, contested
}

func sampleMedian(s []float64) float64 {
	x := slices.Clone(s)
	slices.Sort(x)
	n := len(x)
	if n%2 == 1 {
		return x[n/2]
	}
	return (x[n/2-1] + x[n/2]) / 2
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
