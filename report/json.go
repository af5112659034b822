package report

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"

	"github.com/ktune/ktune/internal/results"
)

// DocumentSchema is the version of the JSON form of a report (Document).
// It changes when a field is removed or changes meaning; new fields may
// appear without a change, so readers should ignore fields they do not
// know.
const DocumentSchema = 1

// A Document is the JSON form of a report, what `ktune report --json`
// writes: the same model report.md renders, without the raw samples
// (those stay in the results files).
type Document struct {
	// Schema is DocumentSchema of the build that wrote the document.
	Schema int `json:"schema"`
	// Probes lists the probes measured by at least one row, in table order.
	Probes []results.Probe `json:"probes"`
	// Environments groups the runs' machines (see EnvGroup).
	Environments []EnvGroup `json:"environments"`
	// Ship is "what to ship": per device and shape, the nkv ranges with
	// the fastest configuration that passed every gate and its speedups.
	Ship []ShipShape `json:"ship"`
	// Rows holds one entry per configuration and nkv (duplicates removed).
	Rows []DocRow `json:"rows"`
	// Failures lists the gate failures and points that did not run.
	Failures []DocFailure `json:"failures"`
	// Projection is present when engine figures were given.
	Projection *Projection `json:"projection,omitempty"`
	// Plots names the plot files, relative to the report directory.
	Plots []DocPlot `json:"plots,omitempty"`
	// Warnings has one entry per kind of input problem, with a count.
	Warnings []WarningSummary `json:"warnings"`
}

// A DocRow is one configuration at one context length.
type DocRow struct {
	Device  string        `json:"device"`
	Shape   string        `json:"shape"` // the shape's unique label
	Dims    results.Shape `json:"dims"`
	Variant string        `json:"variant"`
	Kernel  string        `json:"kernel"`
	Config  string        `json:"config"` // "d2 SPLITS=32 NR=4"
	Splits  int           `json:"splits"`
	// Defines are the defines other than SPLITS and the shape's.
	Defines   string         `json:"defines,omitempty"`
	NKV       int            `json:"nkv"`
	Landed    bool           `json:"landed"`
	Reference bool           `json:"reference"` // a kernel ktune did not build
	Fixture   bool           `json:"fixture"`   // a fault-isolation record
	Status    results.Status `json:"status"`
	// Verdict is "ok", "FAIL kind@nkv" or the status of a point that did
	// not get to its gates.
	Verdict    string     `json:"verdict"`
	Registers  int        `json:"registers"`
	LocalBytes int        `json:"local_bytes"`
	Occupancy  float64    `json:"occupancy"`
	Flags      []string   `json:"flags,omitempty"`
	Probes     []DocProbe `json:"probes,omitempty"`
}

// A DocProbe is one probe's order statistics at a row (times in ns).
type DocProbe struct {
	Probe    results.Probe `json:"probe"`
	N        int           `json:"n"`
	MedianNS float64       `json:"median_ns"`
	Q1NS     float64       `json:"q1_ns"`
	Q3NS     float64       `json:"q3_ns"`
	MinNS    float64       `json:"min_ns"`
	MaxNS    float64       `json:"max_ns"`
	Bytes    int64         `json:"bytes"`  // K+V bytes read once
	GBps     float64       `json:"gbps"`   // Bytes / median
	PctBW    float64       `json:"pct_bw"` // of the measured read bandwidth
	// PctFloor is 100 × the physical floor / the fastest sample
	// (evidence.FloorPct).
	PctFloor float64 `json:"pct_floor"`
	Speedup  float64 `json:"speedup"` // landed median / median; 0 without a landed record
	// Throttled counts samples below 75% of the default SM clock.
	Throttled int  `json:"throttled"`
	Converged bool `json:"converged"`
	// UJPerStep is the board's energy per decode step (results.Energy);
	// absent where none was recorded or the counter could not resolve
	// it, EnergyUnmeasurable then saying why.
	UJPerStep          float64 `json:"uj_per_step,omitempty"`
	EnergyUnmeasurable string  `json:"energy_unmeasurable,omitempty"`
}

// A DocFailure is a failing gate with its evidence, or a status other
// than ok with its error text.
type DocFailure struct {
	Device string `json:"device"`
	Shape  string `json:"shape"`
	Config string `json:"config"`
	NKVs   []int  `json:"nkvs"` // the records carrying this failure
	// Gate is the failing gate's kind, "" for a status failure.
	Gate    results.GateKind `json:"gate,omitempty"`
	GateNKV int              `json:"gate_nkv,omitempty"`
	Status  results.Status   `json:"status"`
	Text    string           `json:"text"`
}

// A DocPlot is one plot.
type DocPlot struct {
	Kind   string   `json:"kind"`
	Device string   `json:"device"`
	Shape  string   `json:"shape"`
	Title  string   `json:"title"`
	Files  []string `json:"files"`
	Series []string `json:"series"`
}

// Document returns the JSON model of the report; plot paths are made
// relative to dir.
func (rep *Report) Document(plots []PlotFile, dir string) *Document {
	d := &Document{Schema: DocumentSchema, Probes: rep.Probes, Environments: rep.Envs, Ship: rep.Ship,
		Projection: rep.Projection, Warnings: SummariseWarnings(rep.Warnings)}
	if d.Ship == nil {
		d.Ship = []ShipShape{}
	}
	if d.Warnings == nil {
		d.Warnings = []WarningSummary{}
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		dr := DocRow{Device: r.Device, Shape: r.Label, Dims: r.Shape, Variant: r.Variant, Kernel: r.Kernel,
			Config: ConfigLabel(r.Config()), Splits: r.Splits, Defines: r.Defines, NKV: r.NKV, Landed: r.Landed,
			Reference: r.Reference, Fixture: r.Fixture, Status: r.Status, Verdict: r.Verdict,
			Registers: r.Registers, LocalBytes: r.LocalBytes, Occupancy: r.Occupancy, Flags: r.Flags}
		for _, p := range r.Probes {
			dp := DocProbe{Probe: p.Probe, N: p.N, MedianNS: p.MedianNS, Q1NS: p.Q1NS, Q3NS: p.Q3NS,
				MinNS: p.MinNS, MaxNS: p.MaxNS, Bytes: p.Bytes, GBps: p.GBps, PctBW: p.PctBW, PctFloor: p.PctFloor, Speedup: p.Speedup,
				Throttled: p.Throttled, Converged: p.Converged}
			if p.Energy != nil {
				dp.UJPerStep, dp.EnergyUnmeasurable = p.Energy.UJPerStep, p.Energy.Unmeasurable
			}
			dr.Probes = append(dr.Probes, dp)
		}
		d.Rows = append(d.Rows, dr)
	}
	d.Failures = []DocFailure{}
	for _, f := range rep.Failures {
		df := DocFailure{Device: f.Row.Device, Shape: f.Row.Label, Config: ConfigLabel(f.Row.Config()), NKVs: f.NKVs,
			Status: f.Row.Status, Text: f.Text}
		if f.Gate != nil {
			df.Gate, df.GateNKV = f.Gate.Kind, f.Gate.NKV
		}
		d.Failures = append(d.Failures, df)
	}
	for _, p := range plots {
		dp := DocPlot{Kind: p.Kind, Device: p.Device, Shape: p.Shape, Title: p.Title, Series: p.Series}
		for _, f := range p.Files {
			rel, err := filepath.Rel(dir, f)
			if err != nil {
				rel = filepath.Base(f)
			}
			dp.Files = append(dp.Files, filepath.ToSlash(rel))
		}
		d.Plots = append(d.Plots, dp)
	}
	return d
}

// WriteJSON writes the report's Document, indented, with plot paths
// relative to dir.
func (rep *Report) WriteJSON(w io.Writer, plots []PlotFile, dir string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // "µs > 12 ms" stays readable
	if err := enc.Encode(rep.Document(plots, dir)); err != nil {
		return fmt.Errorf("writing report JSON: %w", err)
	}
	return nil
}
