package report

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
)

// csvHeader is the column set of tables.csv: one line per row and probe
// (long form, what pandas and spreadsheets pivot most easily). The shape
// is its unique label with every field that identifies it. A row with
// no measurement (a failed gate) has one line with the probe columns
// empty.
var csvHeader = []string{
	"device", "shape", "heads", "kv_heads", "head_dim", "kv_dtype", "kv_scale", "batch", "capacity",
	"variant", "kernel", "splits", "defines", "nkv", "landed", "reference", "fixture", "status", "verdict",
	"registers", "local_bytes", "occupancy",
	"probe", "n", "median_ns", "q1_ns", "q3_ns", "min_ns", "max_ns",
	"bytes", "gbps", "pct_bw", "speedup_vs_landed", "throttled", "converged", "pct_floor",
}

// WriteCSV writes the report's rows as CSV with full precision.
func (rep *Report) WriteCSV(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for i := range rep.Rows {
		r := &rep.Rows[i]
		base := []string{
			r.Device, r.Label, strconv.Itoa(r.Shape.Heads), strconv.Itoa(r.Shape.KVHeads),
			strconv.Itoa(r.Shape.HeadDim), string(r.Shape.KVDtype), r.Shape.KVScale, strconv.Itoa(r.Shape.Batch), strconv.Itoa(r.Shape.Capacity),
			r.Variant, r.Kernel, strconv.Itoa(r.Splits), r.Defines, strconv.Itoa(r.NKV),
			strconv.FormatBool(r.Landed), strconv.FormatBool(r.Reference), strconv.FormatBool(r.Fixture), string(r.Status), r.Verdict,
			strconv.Itoa(r.Registers), strconv.Itoa(r.LocalBytes), f(r.Occupancy),
		}
		if len(r.Probes) == 0 {
			if err := cw.Write(append(base, make([]string, len(csvHeader)-len(base))...)); err != nil {
				return fmt.Errorf("writing CSV: %w", err)
			}
			continue
		}
		for _, p := range r.Probes {
			speed := ""
			if p.Speedup > 0 {
				speed = f(p.Speedup)
			}
			line := append(append([]string(nil), base...),
				string(p.Probe), strconv.Itoa(p.N), f(p.MedianNS), f(p.Q1NS), f(p.Q3NS), f(p.MinNS), f(p.MaxNS),
				strconv.FormatInt(p.Bytes, 10), f(p.GBps), f(p.PctBW), speed, strconv.Itoa(p.Throttled),
				strconv.FormatBool(p.Converged), f(p.PctFloor))
			if err := cw.Write(line); err != nil {
				return fmt.Errorf("writing CSV: %w", err)
			}
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("writing CSV: %w", err)
	}
	return nil
}
