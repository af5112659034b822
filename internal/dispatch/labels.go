package dispatch

import (
	"cmp"

	"github.com/ktune/ktune/internal/results"
)

// unifyLabels returns recs with every shape that differs from another
// only in its name given one name: the one most records of those
// dimensions carry, of equal counts the first by name. Specs written at
// different times name one problem "7b", "7b-b1" or "7b-f16-b1"; with
// Options.ByDims they make one table, as they make one shape in a report.
func unifyLabels(recs []results.Record) []results.Record {
	counts := map[results.Shape]map[string]int{}
	for i := range recs {
		s := recs[i].Config.Shape
		name := s.Name
		s.Name, s.Capacity = "", 0
		if counts[s] == nil {
			counts[s] = map[string]int{}
		}
		counts[s][name]++
	}
	names := map[results.Shape]string{}
	for s, byName := range counts {
		best, n := "", -1
		for name, c := range byName {
			if c > n || (c == n && cmp.Less(name, best)) {
				best, n = name, c
			}
		}
		names[s] = best
	}
	out := make([]results.Record, len(recs))
	for i := range recs {
		out[i] = recs[i]
		s := recs[i].Config.Shape
		s.Name, s.Capacity = "", 0
		out[i].Config.Shape.Name = names[s]
	}
	return out
}
