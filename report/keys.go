package report

import (
	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/results"
)

// probeOrder is the order in which probes appear in every table and plot
// (measure.Probes).
var probeOrder = measure.Probes

// The row identity and the configurations' names are package decision's,
// which the landing gate shares: a verdict and a report match records
// alike.
type (
	// A ConfigKey is decision.ConfigKey.
	ConfigKey = decision.ConfigKey
	// A PointKey is decision.PointKey.
	PointKey = decision.PointKey
)

// ShapeLabel names a shape for tables (decision.ShapeLabel).
func ShapeLabel(s results.Shape) string { return decision.ShapeLabel(s) }

// ConfigLabel renders a configuration as "d2 SPLITS=32 NR=4"
// (decision.ConfigLabel).
func ConfigLabel(c *results.Config) string { return decision.ConfigLabel(c) }

// OtherDefines renders the defines of c other than SPLITS and the ones
// derived from the shape (decision.OtherDefines).
func OtherDefines(c *results.Config) string { return decision.OtherDefines(c) }

func keyOf(r *results.Record) PointKey { return decision.KeyFor(r.Env.Device, &r.Config) }

func shapeKey(s results.Shape) string { return s.Identity() }

func shapeLabels(recs []results.Record) map[string]string { return decision.ShapeLabels(recs) }
