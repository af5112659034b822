package report

import (
	"math"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
)

// CompareSchema is the version of the CompareDoc layout; it grows when a
// field changes meaning or goes away, not when one is added.
const CompareSchema = 2

// A CompareDoc is the document `ktune compare --json` prints: the
// comparison as plain data, for CI steps and scripts.
type CompareDoc struct {
	Schema     int     `json:"schema"`     // CompareSchema
	Alpha      float64 `json:"alpha"`      // significance level of the U test
	Confidence float64 `json:"confidence"` // level of every interval
	// Old and New describe the two sides.
	Old CompareSide `json:"old"`
	New CompareSide `json:"new"`
	// EnvWarning is set when the sides come from different machines.
	EnvWarning string `json:"env_warning,omitempty"`
	// Rows holds one probe at one point measured on both sides.
	Rows []CompareDocRow `json:"rows"`
	// OnlyOld and OnlyNew name the points present on one side only.
	OnlyOld []string `json:"only_old"`
	OnlyNew []string `json:"only_new"`
	// GeomeanPct is the geometric mean of new/old medians over all rows,
	// minus one, in percent; null without rows.
	GeomeanPct *float64 `json:"geomean_pct"`
}

// A CompareSide is one side of a comparison.
type CompareSide struct {
	// Envs names the machines of the side's measured records.
	Envs []string `json:"envs"`
	// SkippedRecords counts the input lines that could not be read.
	SkippedRecords int `json:"skipped_records"`
}

// A CompareDocRow is one CompareRow as plain data. Times are in ns.
type CompareDocRow struct {
	Shape  string        `json:"shape"`
	Config string        `json:"config"`
	NKV    int           `json:"nkv"`
	Probe  results.Probe `json:"probe"`
	// OldNS and NewNS are the medians, with their confidence intervals
	// (null bounds: too few samples for an interval).
	OldNS   float64  `json:"old_ns"`
	OldLoNS *float64 `json:"old_lo_ns"`
	OldHiNS *float64 `json:"old_hi_ns"`
	NewNS   float64  `json:"new_ns"`
	NewLoNS *float64 `json:"new_lo_ns"`
	NewHiNS *float64 `json:"new_hi_ns"`
	// DeltaPct is the Hodges-Lehmann estimate of new/old − 1 in percent,
	// whatever P says: the centre of RatioLoPct..RatioHiPct (schema 1 had
	// the ratio of the medians here);
	// Delta is what the table shows: the signed percentage when
	// Significant, "?" when Powerless, "~" otherwise.
	DeltaPct    float64 `json:"delta_pct"`
	Delta       string  `json:"delta"`
	Significant bool    `json:"significant"`
	P           float64 `json:"p"`
	NOld        int     `json:"n_old"`
	NNew        int     `json:"n_new"`
	// RatioLoPct and RatioHiPct bound the change (percent) at the
	// confidence level; null when the samples are too few.
	RatioLoPct *float64 `json:"ratio_lo_pct"`
	RatioHiPct *float64 `json:"ratio_hi_pct"`
	// Powerless is set when the sample counts cannot reach Alpha at all.
	Powerless bool     `json:"powerless"`
	Warnings  []string `json:"warnings,omitempty"`
}

// finite returns &v, or nil for an infinite or NaN v (JSON has neither).
func finite(v float64) *float64 {
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return nil
	}
	return &v
}

// Doc returns the comparison as a CompareDoc.
func (c *Comparison) Doc() *CompareDoc {
	d := &CompareDoc{Schema: CompareSchema, Alpha: decision.Alpha, Confidence: confidence,
		Old:        CompareSide{Envs: c.OldEnvs, SkippedRecords: c.OldSkipped},
		New:        CompareSide{Envs: c.NewEnvs, SkippedRecords: c.NewSkipped},
		EnvWarning: c.EnvWarning, Rows: []CompareDocRow{},
		OnlyOld: append([]string{}, c.OnlyOld...), OnlyNew: append([]string{}, c.OnlyNew...)}
	for i := range c.Rows {
		r := &c.Rows[i]
		d.Rows = append(d.Rows, CompareDocRow{
			Shape: r.Shape, Config: r.Config, NKV: r.NKV, Probe: r.Probe,
			OldNS: r.Old.Center, OldLoNS: finite(r.Old.Lo), OldHiNS: finite(r.Old.Hi),
			NewNS: r.New.Center, NewLoNS: finite(r.New.Lo), NewHiNS: finite(r.New.Hi),
			DeltaPct: r.DeltaPct, Delta: r.Delta(), Significant: r.Significant, P: r.P, NOld: r.N1, NNew: r.N2,
			RatioLoPct: finite(r.RatioLo * 100), RatioHiPct: finite(r.RatioHi * 100),
			Powerless: r.Powerless, Warnings: r.Warnings,
		})
	}
	if gm, ok := c.geomean(); ok {
		d.GeomeanPct = finite((gm - 1) * 100)
	}
	return d
}
