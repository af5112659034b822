package report

import (
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
)

// probeOrder is the order in which probes appear in every table and plot:
// cold first because it is what a decode step sees after the rest of the
// layer has evicted K/V from L2.
var probeOrder = [...]results.Probe{results.ProbeCold, results.ProbeHot, results.ProbeGraph}

// ShapeLabel names a shape for tables: the spec's label when it has one,
// otherwise its dimensions.
func ShapeLabel(s results.Shape) string {
	if s.Name != "" {
		return s.Name
	}
	return s.Dims()
}

// shapeKey identifies a shape for matching: its identity
// (abi.Shape.Identity), every field that changes a result and not its
// label, so that two shapes that share a label but differ in batch,
// capacity or an attention option never share a row, a section or a plot.
func shapeKey(s results.Shape) string { return s.Identity() }

// OtherDefines renders the defines of c other than SPLITS and the ones
// derived from the shape, sorted by name ("NR=4,VEC=8"), or "" if none.
func OtherDefines(c *results.Config) string {
	// SPLITS has its own column; the derived defines say nothing the
	// shape column does not already say.
	return c.Defines.Sorted().Own().Without(abi.DefineSplits).Join(",")
}

func allDefines(c *results.Config) string { return c.Defines.Sorted().Join(",") }

// A ConfigKey identifies one compiled configuration of a variant on one
// device and shape, across context lengths: the report's row identity,
// which the landing gate (package verdict) matches records by too.
type ConfigKey struct {
	Device  string
	Shape   string
	Variant string
	Defines string
}

// A PointKey is a configuration at one context length. It deliberately
// does not use Record.Hash: the hash covers the spec and the device
// architecture, and comparisons must match the same point across both.
type PointKey struct {
	ConfigKey
	NKV int
}

func keyOf(r *results.Record) PointKey { return KeyFor(r.Env.Device, &r.Config) }

// KeyFor is the key of configuration c measured on device.
func KeyFor(device string, c *results.Config) PointKey {
	return PointKey{ConfigKey{device, shapeKey(c.Shape), c.Variant, allDefines(c)}, c.NKV}
}

// ConfigLabel renders a configuration as "d2 SPLITS=32 NR=4".
func ConfigLabel(c *results.Config) string {
	s := fmt.Sprintf("%s SPLITS=%d", c.Variant, c.Splits)
	if o := OtherDefines(c); o != "" {
		s += " " + strings.ReplaceAll(o, ",", " ")
	}
	return s
}
