package report

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/workload"
)

// Options configures Build.
type Options struct {
	// Layers and StepMS are engine figures for the wall-clock projection:
	// attention launches per decode step and the measured step time with
	// the landed kernel. Zero leaves the projection out.
	Layers int
	StepMS float64
	// Sources, when set, holds for each record the results file it was
	// read from (the same length as the records): the "what to ship"
	// summary then names the files that hold the shipped configurations
	// in its `ktune tune --from` command.
	Sources []string
	// MaxArms > 0 builds the recommendation report.md opens with: per
	// shape with a landed kernel, a dispatch of at most MaxArms ranges
	// (recommend).
	MaxArms int
	// Workload, when set, adds the expected step time of each candidate
	// under it (WorkloadView; with MaxArms, the recommendation's too).
	Workload *workload.Workload
}

// A Report is the data model every renderer formats.
type Report struct {
	Envs     []EnvGroup
	Rows     []Row
	Failures []Failure
	// Waived lists the configurations whose records carry the spec's
	// waivers, a gate not run among them (waivers.go).
	Waived []Waived
	// Probes lists the probes measured by at least one row, in table order.
	Probes []results.Probe
	// Devices is the number of distinct devices; tables gain a device
	// column when it is above one.
	Devices    int
	Projection *Projection
	// Ship is the "what to ship" summary: per shape and nkv range, the
	// fastest configuration that passed every gate.
	Ship []ShipShape
	// ShipConfigs maps the short names of the shipped configurations to
	// their full defines, sorted by name.
	ShipConfigs []ShipConfig
	// Warnings are problems with the input that did not stop the build
	// (duplicate points, refused projection rows); SummariseWarnings
	// counts them per kind.
	Warnings []Warning
	// Recommend holds, with Options.MaxArms, one recommendation per shape
	// with a landed kernel (recommend.go).
	Recommend []Recommendation
	// Duplicates lists every point measured by more than one record: the
	// record kept and why, the ones left out.
	Duplicates []Duplicate
	// Workload is the view under Options.Workload, nil without one.
	Workload *WorkloadView
}

// A Row is one configuration at one context length.
type Row struct {
	Device string
	Shape  results.Shape
	// Label names the shape uniquely within the report (see shapeLabels):
	// "7b-b16" beside "7b-b1", never two shapes under one name.
	Label   string
	Variant string
	Kernel  string
	Splits  int
	Defines string // defines other than SPLITS and the shape's, "NR=4,VEC=8"
	NKV     int
	Landed  bool
	// Reference marks a kernel ktune did not build (PyTorch's SDPA…):
	// drawn and compared against, never shipped.
	Reference bool
	// Fixture marks a record of a fault-isolation spec (see
	// fixtureSpecs): listed, never plotted or shipped.
	Fixture bool
	Status  results.Status
	// Verdict is "ok", "FAIL kind@nkv" (the first failing gate, "+N" more)
	// or the status of a point that did not get to its gates.
	Verdict string
	// Probes holds the measured probes in table order.
	Probes []ProbeStat
	// Registers and Occupancy describe the partial kernel; LocalBytes is
	// the largest stack/spill size over both entry points (>0 is flagged).
	Registers  int
	LocalBytes int
	Occupancy  float64
	// Flags are short warnings: "spill", "throttled:cold", "unconverged:hot".
	Flags []string

	rec    *results.Record
	key    PointKey
	source string // the results file, when Options.Sources says
}

// Config returns the row's record configuration.
func (r *Row) Config() *results.Config { return &r.rec.Config }

// Probe returns the row's statistics of probe p, or nil.
func (r *Row) Probe(p results.Probe) *ProbeStat {
	for i := range r.Probes {
		if r.Probes[i].Probe == p {
			return &r.Probes[i]
		}
	}
	return nil
}

// ProbeStat is one probe's summary at a row.
type ProbeStat struct {
	Probe    results.Probe
	N        int
	MedianNS float64
	Q1NS     float64
	Q3NS     float64
	MinNS    float64
	MaxNS    float64
	Bytes    int64
	GBps     float64 // Bytes / median
	PctBW    float64 // GBps / the measured read bandwidth × 100; 0 if unknown
	// PctFloor is how close the fastest sample came to the physical floor
	// of the point on its device (evidence.FloorPct): 100 × floor /
	// fastest; a record above 100 is not evidence.
	PctFloor float64
	// Speedup is the landed kernel's median over this median at the same
	// device, shape and context length; 0 when there is no landed record.
	Speedup   float64
	Throttled int
	Converged bool
	Samples   []float64 // ns, as recorded
	// Energy is the record's energy per step of this probe; nil when
	// none was recorded (results.Energy).
	Energy *results.Energy
}

// A Failure is a point that did not pass: a failing gate with its
// evidence, or a status other than ok with its error text.
type Failure struct {
	Row  *Row          // the first row of the configuration that failed
	NKVs []int         // the context lengths of every record carrying this failure
	Gate *results.Gate // nil for a status failure
	Text string        // the evidence or error, one line
}

// Build makes the report model of recs. Records of the same point (device,
// shape, variant, defines, nkv) are deduplicated, the newest kept, with a
// warning. An error means the records or the options cannot make a
// report; ErrProjection wraps the options' part.
func Build(recs []results.Record, opts Options) (*Report, error) {
	if len(recs) == 0 {
		return nil, errors.New("building report: no records")
	}
	rep := &Report{}
	for i := range recs {
		if r := &recs[i]; r.Schema > results.SchemaVersion {
			return nil, fmt.Errorf("building report: record %s has schema %d, this build reads up to %d", r.Hash, r.Schema, results.SchemaVersion)
		}
	}
	fixtures := results.FixtureSpecs(recs)
	points, dups := decision.Points(recs)
	labels := map[string]string{}
	for _, p := range points {
		labels[p.Key.Shape] = p.Label
	}
	for _, i := range dups {
		r := &recs[i]
		rep.Warnings = append(rep.Warnings, Warning{Kind: WarnDuplicate,
			Text: fmt.Sprintf("%s %s nkv=%d on %s", labels[keyOf(r).Shape], ConfigLabel(&r.Config), r.Config.NKV, r.Env.Device)})
	}
	index := map[*results.Record]int{}
	for i := range recs {
		index[&recs[i]] = i
	}
	for _, p := range points {
		row := newRow(p.Rec)
		row.Label = p.Label
		row.Fixture = results.IsFixture(p.Rec, fixtures)
		if len(opts.Sources) == len(recs) {
			row.source = opts.Sources[index[p.Rec]]
		}
		rep.Rows = append(rep.Rows, row)
	}
	rep.fillSpeedups()
	rep.Envs = envs(recs)
	devices := map[string]bool{}
	seen := map[results.Probe]bool{}
	for i := range rep.Rows {
		row := &rep.Rows[i]
		devices[row.Device] = true
		for _, p := range row.Probes {
			seen[p.Probe] = true
		}
		rep.addFailures(failures(row))
	}
	rep.Devices = len(devices)
	rep.Waived = rep.waived()
	for _, p := range probeOrder {
		if seen[p] {
			rep.Probes = append(rep.Probes, p)
		}
	}
	rep.Ship = buildShip(rep)
	rep.ShipConfigs = nameShipped(rep.Ship)
	kept := map[decision.PointKey]int{}
	for _, p := range points {
		kept[p.Key] = index[p.Rec]
	}
	rep.Duplicates = duplicates(recs, opts.Sources, kept, dups, labels)
	if opts.MaxArms > 0 {
		rep.recommend(recs, opts.Sources, opts.MaxArms)
	}
	if opts.Workload != nil {
		rep.Workload = rep.workloadView(opts.Workload)
	}
	if opts.Layers > 0 && opts.StepMS > 0 {
		pr, err := project(rep, opts)
		if err != nil {
			return nil, err
		}
		rep.Projection = pr
		for _, x := range pr.Refused {
			rep.Warnings = append(rep.Warnings, Warning{Kind: WarnProjection, Text: x})
		}
	}
	return rep, nil
}

func newRow(r *results.Record) Row {
	row := Row{
		Device:    r.Env.Device,
		Shape:     r.Config.Shape,
		Variant:   r.Config.Variant,
		Kernel:    r.Config.Kernel,
		Splits:    r.Config.Splits,
		Defines:   OtherDefines(&r.Config),
		NKV:       r.Config.NKV,
		Landed:    r.Landed,
		Status:    r.Status,
		Reference: results.IsReference(r),
		Verdict:   verdict(r),
		rec:       r,
		key:       keyOf(r),
	}
	for i, res := range r.Resources {
		// The partial kernel does the work; the combine kernel's figures
		// would only hide it. Fall back to the first entry point.
		if i == 0 || strings.Contains(res.Kernel, "partial") {
			row.Registers, row.Occupancy = res.Registers, res.Occupancy
		}
		row.LocalBytes = max(row.LocalBytes, res.LocalBytes)
	}
	if row.LocalBytes > 0 {
		row.Flags = append(row.Flags, fmt.Sprintf("spill:%dB", row.LocalBytes))
	}
	for _, p := range probeOrder {
		m := r.Probe(p)
		if m == nil || len(m.SamplesNS) == 0 && m.Summary.N == 0 {
			continue
		}
		st := ProbeStat{
			Probe: p, N: m.Summary.N,
			MedianNS: m.Summary.Median, Q1NS: m.Summary.Q1, Q3NS: m.Summary.Q3,
			MinNS: m.Summary.Min, MaxNS: m.Summary.Max,
			Bytes: m.Bytes, Throttled: m.Throttled, Converged: m.Converged,
			Samples: m.SamplesNS, Energy: m.Energy,
		}
		// Derived from bytes and median rather than read, so that every
		// row uses one definition (results.Measurement.Bandwidth).
		st.GBps, st.PctBW = m.Bandwidth(r.Env.ReadBWGBps)
		st.PctFloor = evidence.FloorPct(r, m)
		if st.Throttled > 0 {
			row.Flags = append(row.Flags, "throttled:"+string(p))
		}
		if !st.Converged {
			row.Flags = append(row.Flags, "unconverged:"+string(p))
		}
		row.Probes = append(row.Probes, st)
	}
	return row
}

func verdict(r *results.Record) string {
	var failed []results.Gate
	for _, g := range r.Gates {
		if !g.Pass {
			failed = append(failed, g)
		}
	}
	if len(failed) > 0 {
		s := fmt.Sprintf("FAIL %s@%d", failed[0].Kind, failed[0].NKV)
		if len(failed) > 1 {
			s += fmt.Sprintf(" +%d", len(failed)-1)
		}
		return s
	}
	if r.Status != results.StatusOK {
		return string(r.Status)
	}
	return "ok"
}

// addFailures merges failures that differ only in the record's nkv: the
// gates run once per compiled configuration, so every record of that
// configuration carries the same failing gate.
func (rep *Report) addFailures(fs []Failure) {
	for _, f := range fs {
		merged := false
		for i := range rep.Failures {
			g := &rep.Failures[i]
			if g.Row.key.ConfigKey == f.Row.key.ConfigKey && g.Text == f.Text && sameGate(g.Gate, f.Gate) {
				g.NKVs = append(g.NKVs, f.Row.NKV)
				merged = true
				break
			}
		}
		if !merged {
			f.NKVs = []int{f.Row.NKV}
			rep.Failures = append(rep.Failures, f)
		}
	}
}

func sameGate(a, b *results.Gate) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Kind == b.Kind && a.NKV == b.NKV
}

func failures(row *Row) []Failure {
	var out []Failure
	for i := range row.rec.Gates {
		g := &row.rec.Gates[i]
		if !g.Pass {
			out = append(out, Failure{Row: row, Gate: g, Text: decision.GateEvidence(g)})
		}
	}
	if len(out) == 0 && row.Status != results.StatusOK {
		text := row.rec.Error
		if text == "" && row.rec.Compile.Log != "" {
			text = row.rec.Compile.Log
		}
		out = append(out, Failure{Row: row, Text: oneLine(text)})
	}
	return out
}

func oneLine(s string) string { return decision.OneLine(s) }

// landedBest returns, per device, shape, nkv and probe, the fastest landed
// median. When the landed defines leave an axis open several landed
// records match one point; the baseline is then the best of them, so that
// a speedup is never flattered by a poorly chosen landed configuration.
func landedBest(rows []Row) map[landedKey]float64 {
	best := map[landedKey]float64{}
	for i := range rows {
		r := &rows[i]
		if !r.Landed || r.Status != results.StatusOK {
			continue
		}
		for _, p := range r.Probes {
			k := landedKey{r.Device, r.key.Shape, r.NKV, p.Probe}
			if v, ok := best[k]; !ok || p.MedianNS < v {
				best[k] = p.MedianNS
			}
		}
	}
	return best
}

type landedKey struct {
	Device, Shape string
	NKV           int
	Probe         results.Probe
}

func (rep *Report) fillSpeedups() {
	best := landedBest(rep.Rows)
	for i := range rep.Rows {
		r := &rep.Rows[i]
		for j := range r.Probes {
			p := &r.Probes[j]
			if base, ok := best[landedKey{r.Device, r.key.Shape, r.NKV, p.Probe}]; ok && p.MedianNS > 0 {
				p.Speedup = base / p.MedianNS
			}
		}
	}
}

// floorNS is the time to read bytes once at the read bandwidth measured
// in the run (a streaming float4 read kernel): a reference, not a floor,
// since a decode kernel's reads can run slightly faster than that kernel's.
func floorNS(bytes int64, gbps float64) float64 {
	if gbps <= 0 || bytes <= 0 {
		return math.NaN()
	}
	return float64(bytes) / gbps
}
