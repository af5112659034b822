package report

import "github.com/ktune/ktune/internal/results"

// The report's row model, as package verdict reads it: the gate decides
// over the same rows (one per point, the newest record of each, with the
// report's unique shape labels) that the report's tables show.

// Record returns the record behind the row.
func (r *Row) Record() *results.Record { return r.rec }

// ShapeKey identifies a shape for matching: every dimension and the
// capacity (see shapeKey).
func ShapeKey(s results.Shape) string { return shapeKey(s) }

// AllDefines renders every define of c, sorted by name ("NR=4,SPLITS=32").
func AllDefines(c *results.Config) string { return allDefines(c) }

// ProbeOrder returns the probes in table order.
func ProbeOrder() []results.Probe { return probeOrder[:] }

// CompareSamples compares two sample sets of one record's probe (see
// compareSamples).
func CompareSamples(r *results.Record, p results.Probe, old, new []float64) CompareRow {
	return compareSamples(r, p, old, new)
}

// SamplesToDecide estimates the samples per side that would decide row
// against threshold (see samplesToDecide).
func SamplesToDecide(row *CompareRow, threshold float64) int { return samplesToDecide(row, threshold) }

// OneLine returns the first line of s, marked when cut.
func OneLine(s string) string { return oneLine(s) }

// Dash returns s, or "-" when empty.
func Dash(s string) string { return dash(s) }

// FmtUS renders a duration in ns as µs (see fmtUS).
func FmtUS(ns float64) string { return fmtUS(ns) }
