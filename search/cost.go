package search

import (
	"github.com/ktune/ktune/internal/results"
)

// costs says what timing a recorded point cost on the GPU, as its records
// tell: the compile and the gates, paid once per compiled kernel and
// geometry (the first of its points to run pays them), and the timing of
// the point itself. A record that keeps gate_sec splits its wall time
// exactly. An older one does not: its group's first record in file order
// carried the compile and the gates, estimated as that record's wall time
// beyond the cheapest other point of its group.
type costs struct {
	overhead map[string]float64 // by group
	timing   map[string]float64 // by record hash
	group    map[string]string  // record hash → group
	samples  map[string]int     // record hash → most samples of a probe
}

func newCosts(recs []results.Record) *costs {
	c := &costs{overhead: map[string]float64{}, timing: map[string]float64{}, group: map[string]string{}, samples: map[string]int{}}
	byGroup := map[string][]*results.Record{}
	var order []string
	for i := range recs {
		r := &recs[i]
		g := gateGroup(&r.Config)
		if byGroup[g] == nil {
			order = append(order, g)
		}
		byGroup[g] = append(byGroup[g], r)
		c.group[r.Hash] = g
		for _, m := range r.Probes {
			c.samples[r.Hash] = max(c.samples[r.Hash], len(m.SamplesNS))
		}
	}
	for _, g := range order {
		rs := byGroup[g]
		split := false
		for _, r := range rs {
			split = split || r.GateSec > 0
		}
		if split {
			over, ts := splitGroup(rs)
			c.overhead[g] = over
			for i, r := range rs {
				c.timing[r.Hash] = ts[i]
			}
			continue
		}
		for _, r := range rs {
			c.timing[r.Hash] = r.WallSec
		}
		if len(rs) < 2 {
			continue
		}
		cheapest := rs[1].WallSec
		for _, r := range rs[2:] {
			cheapest = min(cheapest, r.WallSec)
		}
		c.overhead[g] = max(rs[0].WallSec-cheapest, 0)
		c.timing[rs[0].Hash] = rs[0].WallSec - c.overhead[g]
	}
	return c
}

// of is the cost of timing the point of hash with samples (0: as
// recorded), its group's overhead included when paid adds it (the group
// not yet gated).
func (c *costs) of(hash string, samples int, paid map[string]bool) float64 {
	t := c.timing[hash]
	if n := c.samples[hash]; samples > 0 && n > samples {
		t *= float64(samples) / float64(n)
	}
	if g := c.group[hash]; !paid[g] {
		paid[g] = true
		t += c.overhead[g]
	}
	return t
}

// splitWall splits a record's wall time into the compile and gates it
// paid (0 on a point whose kernel was already gated) and the timing of
// the point itself. It holds for records that keep gate_sec.
func splitWall(r *results.Record) (overhead, timing float64) {
	overhead = r.GateSec + r.Compile.Seconds
	return overhead, max(r.WallSec-overhead, 0)
}

// splitGroup splits the wall time of one gate group's records into the
// group's overhead, paid once by whichever of its points runs first, and
// each point's own timing (splitWall, for records that keep gate_sec).
// The point that paid the compile and gates also paid the group's other
// one-off work, which no field of its record separates: on the committed
// H200 searches its timing is 0.4-1.0 s where the group's other points,
// with as many samples, take 0.01-0.15 s. The part of it beyond the
// dearest other point's timing is the group's, not the point's. A group
// of one point keeps its split.
func splitGroup(rs []*results.Record) (overhead float64, timing []float64) {
	timing = make([]float64, len(rs))
	payer, most := -1, 0.0
	for i, r := range rs {
		ov, t := splitWall(r)
		overhead += ov
		timing[i] = t
		if ov > most {
			payer, most = i, ov
		}
	}
	if payer < 0 || len(rs) < 2 {
		return overhead, timing
	}
	dearest := 0.0
	for i, t := range timing {
		if i != payer {
			dearest = max(dearest, t)
		}
	}
	if extra := timing[payer] - dearest; extra > 0 {
		overhead += extra
		timing[payer] = dearest
	}
	return overhead, timing
}
