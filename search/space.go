package search

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A Configuration is the points of a plan that share variant, defines and
// shape: they differ only in nkv. It is the unit grid, random and halving
// keep or drop. It is not the GateKey: a dispatch variant's points take
// their arm's kernel and a grid that reads nkv gives each length its own
// geometry, so one configuration may span several GateKeys.
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
		key := configKey(&p.Config)
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

// Facts are what compiling a point's kernels told before any launch: a
// strategy may read them for points it has not timed, and the search
// never times a point whose facts break its budget.
type Facts struct {
	// Builds is false when the kernel did not compile.
	Builds bool
	// Resources are the compiled entry points' footprints (registers,
	// local memory, shared memory, occupancy).
	Resources []results.Resource
}

// FactsOf returns the compile facts a record carries: what the sweep that
// measured it found when it compiled the point. A record of a point that
// never compiled says it does not build.
func FactsOf(r *results.Record) Facts {
	return Facts{Builds: r.Status != results.StatusCompileFailed, Resources: r.Resources}
}

// A Pruned point is never timed: compiling it told enough.
type Pruned struct {
	Point *plan.Point
	Why   string
}

// A Space is what a strategy searches: the points to consider, their
// configurations, and the compile facts known before timing.
type Space struct {
	// Points are the plan's points after the filter, pruned ones removed,
	// in plan order.
	Points []*plan.Point
	// Configs group Points.
	Configs []*Configuration
	// Facts are known compile facts by point hash; a point missing here
	// was not compiled before the search.
	Facts map[string]Facts
	// Pruned are the points removed because their facts break a budget
	// or they do not build.
	Pruned []Pruned
}

// NewSpace is the space of points: those whose facts say they do not
// build, or break their variant's budget or the search's, are pruned.
func NewSpace(points []*plan.Point, facts map[string]Facts, budget plan.Budget) *Space {
	sp := &Space{Facts: facts}
	for _, p := range points {
		if why := pruneWhy(p, facts, budget); why != "" {
			sp.Pruned = append(sp.Pruned, Pruned{Point: p, Why: why})
			continue
		}
		sp.Points = append(sp.Points, p)
	}
	sp.Configs = Configurations(sp.Points)
	return sp
}

// pruneWhy says why p is never timed; "" when it may be.
func pruneWhy(p *plan.Point, facts map[string]Facts, budget plan.Budget) string {
	f, ok := facts[p.Hash]
	if !ok {
		return ""
	}
	if !f.Builds {
		return "does not build"
	}
	var out []string
	for _, b := range []plan.Budget{p.Budget, budget} {
		for _, r := range f.Resources {
			for _, v := range b.Breaks(r.Registers, r.LocalBytes, r.StaticShared, r.DynamicShared) {
				out = append(out, r.Kernel+": "+v)
			}
		}
	}
	if len(out) > 0 {
		return "over budget: " + strings.Join(out, "; ")
	}
	return ""
}

// timeOf is the time a record says its point takes: the median of the
// probe's samples, when the point passed its gates and was measured; ok
// is false otherwise (the table cannot use it).
func timeOf(r *results.Record, probe results.Probe) (ns float64, ok bool) {
	if r == nil || r.Status != results.StatusOK || !r.GatesPass() {
		return 0, false
	}
	m := r.Probe(probe)
	if m == nil || len(m.SamplesNS) == 0 {
		return 0, false
	}
	med := sampleMedian(m.SamplesNS)
	return med, med > 0
}

func (p Pruned) String() string {
	return fmt.Sprintf("%s nkv=%d: %s", configLabel(p.Point), p.Point.Config.NKV, p.Why)
}
