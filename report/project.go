package report

import (
	"errors"
	"fmt"
	"sort"

	"github.com/ktune/ktune/internal/results"
)

// ErrProjection is wrapped by Build's error when the engine figures
// (Options.Layers, Options.StepMS) cannot describe any measured point.
var ErrProjection = errors.New("projection refused")

// A Projection estimates what each variant would do to a whole decode step.
// It is a projection, not a measurement. The model splits the engine's
// measured step into the landed kernel's attention and the rest:
//
//	rest = StepMS − Layers × landed
//	projected step = rest + Layers × kernel
//
// It assumes the attention kernel's time adds linearly per layer and
// that nothing else in the step changes. When Layers × landed exceeds
// StepMS, the rest would be negative: the figures cannot hold at that
// point (the step was measured at a shorter context, or with another
// kernel), and the point is refused rather than projected. Every
// projected step is then at least Layers × kernel > 0, so tokens/s is
// never negative.
type Projection struct {
	Layers int     `json:"layers"`
	StepMS float64 `json:"step_ms"` // the engine's measured step with the landed kernel
	// Probe is the probe the kernel times come from: graph when measured
	// (engines replay their decode step as a graph), else hot, else cold.
	Probe results.Probe   `json:"probe"`
	Rows  []ProjectionRow `json:"rows"`
	// Refused names the points (shape, nkv) where the landed attention
	// alone exceeds the step, with the figures that show it.
	Refused []string `json:"refused,omitempty"`
}

// A ProjectionRow is one variant's best configuration at one point.
type ProjectionRow struct {
	Device   string  `json:"device"`
	Shape    string  `json:"shape"`
	NKV      int     `json:"nkv"`
	Config   string  `json:"config"`    // "d2 SPLITS=32"
	KernelUS float64 `json:"kernel_us"` // the variant's median
	LandedUS float64 `json:"landed_us"` // the landed kernel's best median
	// RestMS = StepMS − Layers × LandedUS / 1000: the step without
	// attention, ≥ 0 on every row.
	RestMS float64 `json:"rest_ms"`
	// DeltaStepMS = Layers × (KernelUS − LandedUS) / 1000.
	DeltaStepMS float64 `json:"delta_step_ms"`
	// TokensPerSec = 1000 / (StepMS + DeltaStepMS); LandedTokensPerSec =
	// 1000 / StepMS. Both are positive.
	TokensPerSec       float64 `json:"tokens_per_sec"`
	LandedTokensPerSec float64 `json:"landed_tokens_per_sec"`
}

func project(rep *Report, opts Options) (*Projection, error) {
	pr := &Projection{Layers: opts.Layers, StepMS: opts.StepMS, Probe: results.ProbeCold}
	for _, p := range []results.Probe{results.ProbeGraph, results.ProbeHot} {
		if containsProbe(rep.Probes, p) {
			pr.Probe = p
			break
		}
	}
	landed := landedBest(rep.Rows)
	refused := map[landedKey]bool{}
	for _, r := range BestRows(rep.Rows, pr.Probe) {
		if r.Fixture {
			continue
		}
		lk := landedKey{r.Device, r.key.Shape, r.NKV, pr.Probe}
		base, ok := landed[lk]
		if !ok {
			continue
		}
		attnMS := float64(opts.Layers) * base / 1e6
		if attnMS > opts.StepMS {
			if !refused[lk] {
				refused[lk] = true
				pr.Refused = append(pr.Refused, fmt.Sprintf("%s nkv=%d: %d layers × %s µs landed (%s) = %.3g ms > the %.3g ms step",
					r.Label, r.NKV, opts.Layers, fmtUS(base), pr.Probe, attnMS, opts.StepMS))
			}
			continue
		}
		k := r.Probe(pr.Probe).MedianNS / 1000
		d := float64(opts.Layers) * (k - base/1000) / 1000
		pr.Rows = append(pr.Rows, ProjectionRow{
			Device: r.Device, Shape: r.Label, NKV: r.NKV, Config: ConfigLabel(r.Config()),
			KernelUS: k, LandedUS: base / 1000, RestMS: opts.StepMS - attnMS, DeltaStepMS: d,
			TokensPerSec: 1000 / (opts.StepMS + d), LandedTokensPerSec: 1000 / opts.StepMS,
		})
	}
	if len(pr.Rows) == 0 {
		why := "no point has both a landed measurement and the " + string(pr.Probe) + " probe"
		if len(pr.Refused) > 0 {
			why = fmt.Sprintf("at every measured point the landed kernel's attention alone exceeds the step (e.g. %s); "+
				"check --layers and --step-ms: the step must be measured with the landed kernel at the same context", pr.Refused[0])
		}
		return nil, fmt.Errorf("%w: --layers %d --step-ms %g: %s", ErrProjection, opts.Layers, opts.StepMS, why)
	}
	return pr, nil
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
		if r.Status != results.StatusOK || !r.rec.GatesPass() || st == nil || st.MedianNS <= 0 {
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
