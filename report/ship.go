package report

import (
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// shipProbe is the probe "what to ship" decides by: cold, what a decode
// step sees once the rest of the layer has evicted K/V from L2, and the
// default of `ktune tune`.
const shipProbe = results.ProbeCold

// A ShipShape is the "what to ship" answer for one device and shape.
type ShipShape struct {
	Device string        `json:"device"`
	Shape  string        `json:"shape"` // the unique label
	Dims   results.Shape `json:"dims"`
	Probe  results.Probe `json:"probe"`
	// Landed is the landed configuration ("d2 SPLITS=32 NR=4"), "" when
	// the shape has no landed record. Files of several specs may mark
	// different configurations landed (a port and the engine's own build);
	// then Landed names each, and at every nkv the fastest landed record is
	// the baseline, so that no speedup is taken against the slower one.
	Landed string      `json:"landed"`
	Ranges []ShipRange `json:"ranges"`
	// Sources are the results files holding the shipped configurations,
	// when known; Command turns them into a dispatch table.
	Sources []string `json:"sources,omitempty"`
	Command string   `json:"command"`
}

// A ShipRange is a run of contiguous measured nkv at which the same
// configuration is the fastest that passed every gate.
type ShipRange struct {
	MinNKV int    `json:"min_nkv"` // the first measured nkv of the run
	MaxNKV int    `json:"max_nkv"` // the last measured nkv of the run
	Config string `json:"config"`  // "mma SPLITS=16 BN=64"
	// Name is the configuration's short name in the report ("mma
	// SPLITS=16", or the variant alone when the report ships one
	// configuration of it); Report.ShipNames maps it back to Config.
	Name    string      `json:"name"`
	Variant string      `json:"variant"`
	Kernel  string      `json:"kernel"` // the variant's kernel source
	Landed  bool        `json:"landed"` // the landed configuration wins here
	Points  []ShipPoint `json:"points"`
}

// A ShipPoint is the shipped configuration at one measured nkv, with its
// speedup over each baseline measured there.
type ShipPoint struct {
	NKV int `json:"nkv"`
	// Median with its 95% confidence interval (ns; benchmath's
	// distribution-free interval for the median).
	Median CI        `json:"median_ns"`
	N      int       `json:"n"`
	Versus []Speedup `json:"versus"`
	Flags  []string  `json:"flags,omitempty"`
	// Unmeasured lists the configurations shipped at the neighbouring
	// ranges that have no passing measurement at this nkv: the shipped
	// one wins here only among what was measured, and one of those might
	// have been faster.
	Unmeasured []string `json:"unmeasured,omitempty"`
}

// A CI is a value with the bounds of its confidence interval. Lo and Hi
// are 0 when too few samples were taken for an interval at that level.
type CI struct {
	Center float64 `json:"center"`
	Lo     float64 `json:"lo"`
	Hi     float64 `json:"hi"`
}

// A Speedup is the shipped configuration against one baseline at one nkv.
type Speedup struct {
	// Against is "landed" or the reference variant's name ("sdpa-cudnn").
	Against   string `json:"against"`
	Config    string `json:"config"` // the baseline's configuration
	Reference bool   `json:"reference"`
	// Ratio is baseline time / shipped time (>1: the shipped one is
	// faster): the Hodges-Lehmann estimate (the median of the pairwise
	// ratios of baseline to shipped samples) with the 95% interval that
	// inverts the Mann-Whitney U test on the same ratios, so that the
	// estimate always lies inside its interval (a ratio of medians need
	// not). Lo and Hi are 0 when the sample counts are too small for one.
	Ratio CI `json:"ratio"`
	// P is the Mann-Whitney U p-value of the two sample sets;
	// Significant is P < Alpha. Decidable is false when the sample
	// counts cannot reach Alpha at all: "not significant" then says
	// nothing (stats.Comparison).
	P           float64 `json:"p"`
	Significant bool    `json:"significant"`
	Decidable   bool    `json:"decidable"`
}

// shippable reports whether r may be shipped: measured, every gate
// passed, built by ktune (not a reference) and not a fault fixture.
func shippable(r *Row) bool {
	st := r.Probe(shipProbe)
	return r.Status == results.StatusOK && r.rec.GatesPass() && !r.Reference && !r.Fixture &&
		st != nil && len(st.Samples) > 0 && st.MedianNS > 0
}

// comparable reports whether r may serve as a baseline at its point.
func comparable(r *Row) bool {
	st := r.Probe(shipProbe)
	return r.Status == results.StatusOK && !r.Fixture && st != nil && len(st.Samples) > 0 && st.MedianNS > 0
}

func buildShip(rep *Report) []ShipShape {
	type group struct {
		device, key string
		rows        []*Row
	}
	var groups []*group
	at := map[[2]string]*group{}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		k := [2]string{r.Device, r.key.Shape}
		g := at[k]
		if g == nil {
			g = &group{device: r.Device, key: r.key.Shape}
			at[k] = g
			groups = append(groups, g)
		}
		g.rows = append(g.rows, r)
	}
	var out []ShipShape
	for _, g := range groups {
		if s, ok := shipShape(g.rows); ok {
			out = append(out, s)
		}
	}
	return out
}

// shipShape decides one device and shape. At each measured nkv the
// shipped configuration is the fastest shippable row (decision.Decide,
// TiesEqualMedian); contiguous nkv with the same winner form a range.
func shipShape(rows []*Row) (ShipShape, bool) {
	first := rows[0]
	s := ShipShape{Device: first.Device, Shape: first.Label, Dims: first.Shape, Probe: shipProbe}
	at := map[int][]*Row{} // nkv → the rows that may ship there, in row order
	best := map[int]*Row{}
	landed := map[int]*Row{}
	refs := map[int]map[string]*Row{}
	measured := map[int]map[string]bool{} // nkv → configurations that may ship there
	var landedNames []string
	for _, r := range rows {
		if r.Landed && !slices.Contains(landedNames, ConfigLabel(r.Config())) {
			landedNames = append(landedNames, ConfigLabel(r.Config()))
		}
		if shippable(r) {
			if measured[r.NKV] == nil {
				measured[r.NKV] = map[string]bool{}
			}
			measured[r.NKV][ConfigLabel(r.Config())] = true
			at[r.NKV] = append(at[r.NKV], r)
		}
		if !comparable(r) {
			continue
		}
		if r.Landed {
			if b := landed[r.NKV]; b == nil || r.Probe(shipProbe).MedianNS < b.Probe(shipProbe).MedianNS {
				landed[r.NKV] = r
			}
		}
		if r.Reference {
			if refs[r.NKV] == nil {
				refs[r.NKV] = map[string]*Row{}
			}
			if b := refs[r.NKV][r.Variant]; b == nil || r.Probe(shipProbe).MedianNS < b.Probe(shipProbe).MedianNS {
				refs[r.NKV][r.Variant] = r
			}
		}
	}
	// The winner rule is the dispatch table's (decision.Decide) but for
	// ties within noise: what to ship names the lowest median, the
	// dispatch table the stable choice (decision.TieBreak).
	byNKV := map[int]map[string]*decision.Candidate{}
	rowOf := map[*results.Record]*Row{}
	for n, rs := range at {
		byNKV[n] = map[string]*decision.Candidate{}
		for _, r := range rs {
			c := decision.NewCandidate(r.rec, r.rec.Probe(shipProbe))
			byNKV[n][c.ID] = c
			rowOf[r.rec] = r
		}
	}
	for _, d := range decision.Decide(byNKV, decision.Alpha, decision.TiesEqualMedian) {
		best[d.NKV] = rowOf[d.Winner.Rec]
	}
	if len(best) == 0 {
		return s, false
	}
	nkvs := make([]int, 0, len(best))
	sort.Strings(landedNames)
	s.Landed = strings.Join(landedNames, " or ")
	if len(landedNames) > 1 {
		s.Landed += " (at each nkv the faster)"
	}
	for n := range best {
		nkvs = append(nkvs, n)
	}
	sort.Ints(nkvs)
	sources := map[string]bool{}
	for _, n := range nkvs {
		w := best[n]
		pt := shipPoint(w, landed[n], refs[n])
		cfg := ConfigLabel(w.Config())
		if k := len(s.Ranges); k == 0 || s.Ranges[k-1].Variant != w.Variant || s.Ranges[k-1].Config != cfg {
			s.Ranges = append(s.Ranges, ShipRange{MinNKV: n, Config: cfg, Variant: w.Variant, Kernel: w.Kernel, Landed: w.Landed})
		}
		rg := &s.Ranges[len(s.Ranges)-1]
		rg.MaxNKV = n
		rg.Points = append(rg.Points, pt)
		// The landed configuration's file too: the dispatch table's ties
		// keep the landed one, which it cannot do from the winners' files
		// alone.
		for _, r := range []*Row{w, landed[n]} {
			if r != nil && r.source != "" && !sources[r.source] {
				sources[r.source] = true
				s.Sources = append(s.Sources, r.source)
			}
		}
	}
	markUnmeasured(s.Ranges, measured)
	sort.Strings(s.Sources)
	from := "RESULTS"
	if len(s.Sources) > 0 {
		from = strings.Join(s.Sources, " ")
	}
	s.Command = "ktune tune --from " + from + " -o out/dispatch/" + slugify(s.Shape)
	return s, true
}

func shipPoint(w, landed *Row, refs map[string]*Row) ShipPoint {
	st := w.Probe(shipProbe)
	pt := ShipPoint{NKV: w.NKV, N: len(st.Samples), Flags: w.Flags}
	if landed != nil {
		pt.Versus = append(pt.Versus, speedup(st.Samples, landed, "landed"))
	}
	names := make([]string, 0, len(refs))
	for n := range refs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		pt.Versus = append(pt.Versus, speedup(st.Samples, refs[n], n))
	}
	c := stats.Compare(st.Samples, st.Samples, decision.Alpha)
	pt.Median = CI{Center: c.Old.Center}
	if !math.IsInf(c.Old.Lo, 0) && !math.IsInf(c.Old.Hi, 0) && c.Old.Lo > 0 {
		pt.Median.Lo, pt.Median.Hi = c.Old.Lo, c.Old.Hi
	}
	return pt
}

// speedup compares the shipped samples with a baseline's through
// stats.Compare, the one place that decides whether two samples differ,
// and bounds the ratio with the interval that inverts the same test
// (Hodges-Lehmann on the log-ratios).
func speedup(ship []float64, base *Row, against string) Speedup {
	bs := base.Probe(shipProbe).Samples
	c := stats.Compare(ship, bs, decision.Alpha)
	sp := Speedup{Against: against, Config: ConfigLabel(base.Config()), Reference: base.Reference,
		P: c.P, Significant: c.Significant, Decidable: c.Decidable}
	sp.Ratio.Center = 1 + c.Change // the estimate that goes with the interval
	if lo, hi := c.ChangeLo, c.ChangeHi; !math.IsInf(lo, 0) && !math.IsInf(hi, 0) {
		sp.Ratio.Lo, sp.Ratio.Hi = 1+lo, 1+hi
	}
	return sp
}
