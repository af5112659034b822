package report

import (
	"sort"

	"github.com/ktune/ktune/internal/results"
)

// A Projection estimates what each variant would do to a whole decode step.
// It is a projection, not a measurement: it assumes the attention kernel's
// time adds linearly per layer and that nothing else in the step changes.
type Projection struct {
	Layers int
	StepMS float64 // the engine's measured step with the landed kernel
	// Probe is the probe the kernel deltas come from: graph when measured
	// (engines replay their decode step as a graph), else hot, else cold.
	Probe results.Probe
	Rows  []ProjectionRow
}

// A ProjectionRow is one variant's best configuration at one point.
type ProjectionRow struct {
	Device   string
	Shape    string
	NKV      int
	Config   string  // "d2 SPLITS=32"
	KernelUS float64 // the variant's median
	LandedUS float64 // the landed kernel's best median
	// DeltaStepMS = Layers × (KernelUS − LandedUS) / 1000.
	DeltaStepMS float64
	// TokensPerSec = 1000 / (StepMS + DeltaStepMS); LandedTokensPerSec =
	// 1000 / StepMS.
	TokensPerSec       float64
	LandedTokensPerSec float64
}

func project(rep *Report, opts Options) *Projection {
	pr := &Projection{Layers: opts.Layers, StepMS: opts.StepMS, Probe: results.ProbeCold}
	for _, p := range []results.Probe{results.ProbeGraph, results.ProbeHot} {
		if containsProbe(rep.Probes, p) {
			pr.Probe = p
			break
		}
	}
	landed := landedBest(rep.Rows)
	for _, r := range BestRows(rep.Rows, pr.Probe) {
		base, ok := landed[landedKey{r.Device, r.key.Shape, r.NKV, pr.Probe}]
		if !ok {
			continue
		}
		k := r.Probe(pr.Probe).MedianNS / 1000
		d := float64(opts.Layers) * (k - base/1000) / 1000
		pr.Rows = append(pr.Rows, ProjectionRow{
			Device: r.Device, Shape: ShapeLabel(r.Shape), NKV: r.NKV, Config: ConfigLabel(r.Config()),
			KernelUS: k, LandedUS: base / 1000, DeltaStepMS: d,
			TokensPerSec: 1000 / (opts.StepMS + d), LandedTokensPerSec: 1000 / opts.StepMS,
		})
	}
	return pr
}

func containsProbe(ps []results.Probe, p results.Probe) bool {
	for _, q := range ps {
		if q == p {
			return true
		}
	}
	return false
}

// BestRows returns, for every device, shape, variant and context length,
// the row whose probe p has the lowest median among the rows that passed
// their gates, in the order of rows. Plots and projections draw one line
// per variant through these: the best SPLITS at each context length is
// what a dispatch that picks SPLITS per nkv would ship.
func BestRows(rows []Row, p results.Probe) []*Row {
	type k struct {
		Device, Shape, Variant string
		NKV                    int
	}
	best := map[k]*Row{}
	var order []k
	for i := range rows {
		r := &rows[i]
		st := r.Probe(p)
		if r.Status != results.StatusOK || st == nil || st.MedianNS <= 0 {
			continue
		}
		key := k{r.Device, r.key.Shape, r.Variant, r.NKV}
		cur, ok := best[key]
		if !ok {
			order = append(order, key)
		}
		if !ok || st.MedianNS < cur.Probe(p).MedianNS {
			best[key] = r
		}
	}
	out := make([]*Row, 0, len(order))
	for _, key := range order {
		out = append(out, best[key])
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		switch {
		case a.Device != b.Device:
			return a.Device < b.Device
		case a.key.Shape != b.key.Shape:
			return a.key.Shape < b.key.Shape
		case a.NKV != b.NKV:
			return a.NKV < b.NKV
		}
		return a.Variant < b.Variant
	})
	return out
}
