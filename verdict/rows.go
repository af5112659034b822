package verdict

import (
	"errors"
	"fmt"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
)

// A row is the record that counts at one point (decision.Points): the
// same rows, with the same shape labels, that a report's tables show.
type row struct{ decision.Point }

// points returns the rows of recs in table order.
func points(recs []results.Record) ([]row, error) {
	if len(recs) == 0 {
		return nil, errors.New("no records")
	}
	for i := range recs {
		if r := &recs[i]; r.Schema > results.SchemaVersion {
			return nil, fmt.Errorf("record %s has schema %d, this build reads up to %d", r.Hash, r.Schema, results.SchemaVersion)
		}
	}
	pts, _ := decision.Points(recs)
	rows := make([]row, len(pts))
	for i, p := range pts {
		rows[i] = row{p}
	}
	return rows, nil
}

func (r *row) cfg() *results.Config { return &r.Rec.Config }

func (r *row) variant() string { return r.Rec.Config.Variant }

func (r *row) nkv() int { return r.Rec.Config.NKV }

// at is the row's point, configuration aside.
func (r *row) at() gatePointKey { return gatePointKey{r.Key.Device, r.Key.Shape, r.nkv()} }

// probe returns the row's measurement of p, nil when it has neither
// samples nor a summary.
func (r *row) probe(p results.Probe) *results.Measurement {
	m := r.Rec.Probe(p)
	if m == nil || len(m.SamplesNS) == 0 && m.Summary.N == 0 {
		return nil
	}
	return m
}

// dash returns s, or "-" when empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
