package search

import (
	"github.com/ktune/ktune/internal/results"
)

// Floors of the expected cost of a point.
const (
	// minOverheadSec is the least compile and gates a group must show to
	// count as paid for in the mean overhead: a point whose kernel was
	// already gated copies the verdict and shows microseconds.
	minOverheadSec = 1e-3
	// minPointSec is the least a point's timing is expected to cost, so
	// that a point of a paid group never costs nothing.
	minPointSec = 1e-3
)

// expectedCosts is what a search expects timing one more point to cost
// the GPU, from the points it has timed so far (splitGroup reads each
// group's records): the timing of a full measurement, the mean over the points
// timed at the same nkv (over every nkv when none was), and, while no
// point of the point's gate group was timed, the compile and gates of a
// group, the mean over the groups whose points paid them. A round's
// picks pay their groups as they are chosen (pay), so the other points
// of a group chosen in the round are not charged its overhead again.
type expectedCosts struct {
	overhead float64         // compile and gates of a group not yet paid
	timing   map[int]float64 // a full measurement's timing by nkv
	anyNKV   float64         // the same over every nkv
	paid     map[string]bool // gate groups with a point timed
}

// expectCosts estimates the costs from the observations; nil while they
// show no group paying compile and gates or no full measurement: with
// nothing to weigh by, expected improvement decides alone.
func expectCosts(obs []Observation) *expectedCosts {
	e := &expectedCosts{timing: map[int]float64{}, paid: map[string]bool{}}
	over := map[string]float64{}
	var groups []string // in observation order, so that sums do not follow a map's
	sum, n := map[int]float64{}, map[int]int{}
	var all float64
	var nAll int
	members := map[string][]int{} // a group's observations, in order
	for i := range obs {
		g := gateGroup(&obs[i].Point.Config)
		if !e.paid[g] {
			e.paid[g] = true
			groups = append(groups, g)
		}
		members[g] = append(members[g], i)
	}
	for _, g := range groups {
		rs := make([]*results.Record, len(members[g]))
		for j, i := range members[g] {
			rs[j] = &obs[i].Record
		}
		ov, ts := splitGroup(rs)
		over[g] = ov
		for j, i := range members[g] {
			if o := &obs[i]; o.Samples == 0 {
				k := o.Point.Config.NKV
				sum[k] += ts[j]
				n[k]++
				all += ts[j]
				nAll++
			}
		}
	}
	var tot float64
	var paying int
	for _, g := range groups {
		if over[g] > minOverheadSec {
			tot += over[g]
			paying++
		}
	}
	if paying == 0 || nAll == 0 {
		return nil
	}
	e.overhead = tot / float64(paying)
	e.anyNKV = all / float64(nAll)
	for k, s := range sum {
		e.timing[k] = s / float64(n[k])
	}
	return e
}

// of is the expected GPU seconds of timing a point of configuration c.
func (e *expectedCosts) of(c *results.Config) float64 {
	t, ok := e.timing[c.NKV]
	if !ok {
		t = e.anyNKV
	}
	t = max(t, minPointSec)
	if !e.paid[gateGroup(c)] {
		t += e.overhead
	}
	return t
}

// pay marks c's gate group paid: a point of it was chosen.
func (e *expectedCosts) pay(c *results.Config) { e.paid[gateGroup(c)] = true }
