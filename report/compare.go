package report

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"

	"golang.org/x/perf/benchmath"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// confidence of the intervals printed next to medians.
const confidence = stats.Confidence

// A Comparison is the point-by-point difference of two sets of records.
type Comparison struct {
	Rows []CompareRow
	// OnlyOld and OnlyNew list the points present on one side only.
	OnlyOld, OnlyNew []string
	// OldEnvs and NewEnvs name the machines each side was measured on
	// (device, architecture, driver, NVRTC), sorted.
	OldEnvs, NewEnvs []string
	// EnvWarning is set when the sides differ in machine: a change may
	// then be the machine's, not the kernel's.
	EnvWarning string
	// OldSkipped and NewSkipped count the input lines of each side that
	// could not be read as records; the caller that read the files sets
	// them (results.Set.Skipped).
	OldSkipped, NewSkipped int
}

// A CompareRow is one probe at one matched point: the change between
// the two sides' samples (decision.Compare).
type CompareRow struct {
	Shape  string
	Config string // "d2 SPLITS=32 NR=4"
	NKV    int
	Probe  results.Probe
	decision.Change
}

// Delta renders the change as benchstat does: "~" when it is within
// noise, the signed percentage otherwise — and "?" when the sample counts
// cannot reach α at all, where "~" would claim a sameness the test could
// never have rejected.
func (r *CompareRow) Delta() string {
	if r.Powerless {
		return "?"
	}
	if !r.Significant {
		return "~"
	}
	return fmt.Sprintf("%+.2f%%", r.DeltaPct)
}

// matchKey identifies a point across files and machines: not the record
// hash, which covers the spec and the device architecture.
func matchKey(r *results.Record) PointKey {
	k := keyOf(r)
	k.Device = ""
	return k
}

// Compare matches old and new records by variant, shape, defines and nkv
// and tests every probe measured on both sides. When a side holds a
// point twice, the newer record counts.
func Compare(old, new []results.Record) (*Comparison, error) {
	om, nm := latestByKey(old), latestByKey(new)
	// One naming of the shapes of both sides, so that two shapes that share
	// a spec label (a batch-1 and a batch-16 "7b") never share a row name.
	labels := shapeLabels(append(slices.Clone(old), new...))
	label := func(r *results.Record) string { return labels[shapeKey(r.Config.Shape)] }
	if len(om) == 0 || len(nm) == 0 {
		return nil, fmt.Errorf("comparing: %d old and %d new measured records; both sides need some", len(om), len(nm))
	}
	c := &Comparison{OldEnvs: envNames(om), NewEnvs: envNames(nm)}
	if !slices.Equal(c.OldEnvs, c.NewEnvs) {
		c.EnvWarning = fmt.Sprintf("old and new were measured on different GPUs or drivers (old: %s; new: %s): a change may be the machine's, not the kernel's",
			strings.Join(c.OldEnvs, ", "), strings.Join(c.NewEnvs, ", "))
	}
	var keys []PointKey
	for k := range om {
		if _, ok := nm[k]; ok {
			keys = append(keys, k)
		} else {
			c.OnlyOld = append(c.OnlyOld, pointName(om[k], label))
		}
	}
	for k := range nm {
		if _, ok := om[k]; !ok {
			c.OnlyNew = append(c.OnlyNew, pointName(nm[k], label))
		}
	}
	sort.Strings(c.OnlyOld)
	sort.Strings(c.OnlyNew)
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		switch {
		case a.Shape != b.Shape:
			return a.Shape < b.Shape
		case a.Variant != b.Variant:
			return a.Variant < b.Variant
		case a.Defines != b.Defines:
			return definesLess(a.Defines, b.Defines)
		}
		return a.NKV < b.NKV
	})
	for _, k := range keys {
		o, n := om[k], nm[k]
		for _, p := range probeOrder {
			mo, mn := o.Probe(p), n.Probe(p)
			if mo == nil || mn == nil || len(mo.SamplesNS) == 0 || len(mn.SamplesNS) == 0 {
				continue
			}
			row := compareSamples(o, p, mo.SamplesNS, mn.SamplesNS)
			row.Shape = label(o)
			c.Rows = append(c.Rows, row)
		}
	}
	return c, nil
}

// definesLess orders define lists with numeric values numerically, so
// that SPLITS=8 comes before SPLITS=16.
func definesLess(a, b string) bool {
	as, bs := strings.Split(a, ","), strings.Split(b, ",")
	for i := 0; i < len(as) && i < len(bs); i++ {
		if as[i] == bs[i] {
			continue
		}
		var x, y int
		an, _ := fmt.Sscanf(as[i][strings.IndexByte(as[i], '=')+1:], "%d", &x)
		bn, _ := fmt.Sscanf(bs[i][strings.IndexByte(bs[i], '=')+1:], "%d", &y)
		if an == 1 && bn == 1 && as[i][:strings.IndexByte(as[i], '=')] == bs[i][:strings.IndexByte(bs[i], '=')] {
			return x < y
		}
		return as[i] < bs[i]
	}
	return len(as) < len(bs)
}

// compareSamples asks decision.Compare, the one home of "are these two
// samples different", with the interval of the change the gate judges a
// threshold by.
func compareSamples(r *results.Record, p results.Probe, old, new []float64) CompareRow {
	return CompareRow{Shape: ShapeLabel(r.Config.Shape), Config: ConfigLabel(&r.Config), NKV: r.Config.NKV, Probe: p,
		Change: decision.Compare(old, new)}
}

func latestByKey(recs []results.Record) map[PointKey]*results.Record {
	m := map[PointKey]*results.Record{}
	for i := range recs {
		r := &recs[i]
		if r.Status != results.StatusOK || len(r.Probes) == 0 {
			continue
		}
		k := matchKey(r)
		if cur, ok := m[k]; !ok || r.Time.After(cur.Time) {
			m[k] = r
		}
	}
	return m
}

// envNames lists the distinct machines of the measured records m, as
// "NVIDIA H200 sm_90 driver 13.0 NVRTC 13.0".
func envNames(m map[PointKey]*results.Record) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range m {
		e := &r.Env
		s := fmt.Sprintf("%s %s driver %s NVRTC %s", e.Device, e.Arch, e.Driver, e.NVRTC)
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	sort.Strings(out)
	return out
}

func pointName(r *results.Record, label func(*results.Record) string) string {
	return fmt.Sprintf("%s %s nkv=%d", label(r), ConfigLabel(&r.Config), r.Config.NKV)
}

// fmtCI renders a median with its confidence interval as "19.40 ±1%".
func fmtCI(s benchmath.Summary) string {
	return fmtUS(s.Center) + " ±" + s.PctRangeString()
}

// WriteText writes the comparison as a table followed by the points
// present on one side only and the statistical warnings.
func (c *Comparison) WriteText(w io.Writer, markdown bool) error {
	g := &grid{}
	for _, h := range []string{"shape", "config", "nkv", "probe", "old µs", "new µs", "delta", "p / n"} {
		g.Col(h, h == "nkv" || strings.Contains(h, "µs") || h == "delta")
	}
	warned := map[string]bool{}
	var warnings []string
	for i := range c.Rows {
		r := &c.Rows[i]
		g.Rows = append(g.Rows, []string{r.Shape, r.Config, fmt.Sprint(r.NKV), string(r.Probe),
			fmtCI(r.Old), fmtCI(r.New), r.Delta(), fmt.Sprintf("p=%.3f n=%d+%d", r.P, r.N1, r.N2)})
		for _, s := range r.Warnings {
			if !warned[s] {
				warned[s] = true
				warnings = append(warnings, s)
			}
		}
	}
	if len(g.Rows) > 0 {
		if err := g.Render(w, markdown); err != nil {
			return err
		}
	}
	ew := &errWriter{w: w}
	ew.printf("\nmedians with 95%% confidence intervals; delta = new/old − 1 as the Hodges-Lehmann estimate (the median of the ratios of every new sample to every old one, the centre of the change's 95%% interval), when the Mann-Whitney U test rejects equality at α=%.2f, \"~\" otherwise\n", decision.Alpha)
	if n := c.powerless(); n > 0 {
		ew.printf("\"?\" (%d rows): too few samples for the test to reach α=%.2f at all; %d per side can\n", n, decision.Alpha, stats.SamplesToDecide(decision.Alpha))
	}
	if gm, ok := c.geomean(); ok {
		ew.printf("geomean of new/old medians over all rows: %+.2f%%\n", (gm-1)*100)
	}
	for _, s := range c.OnlyOld {
		ew.printf("only in old: %s\n", s)
	}
	for _, s := range c.OnlyNew {
		ew.printf("only in new: %s\n", s)
	}
	if c.OldSkipped+c.NewSkipped > 0 {
		ew.printf("skipped input lines that could not be read: %d old, %d new; their points are missing above\n", c.OldSkipped, c.NewSkipped)
	}
	if c.EnvWarning != "" {
		ew.printf("warning: %s\n", c.EnvWarning)
	}
	for _, s := range warnings {
		ew.printf("warning: %s\n", s)
	}
	return ew.err
}

func (c *Comparison) powerless() int {
	n := 0
	for i := range c.Rows {
		if c.Rows[i].Powerless {
			n++
		}
	}
	return n
}

func (c *Comparison) geomean() (float64, bool) {
	sum, n := 0.0, 0
	for _, r := range c.Rows {
		if r.Old.Center > 0 && r.New.Center > 0 {
			sum += math.Log(r.New.Center / r.Old.Center)
			n++
		}
	}
	if n == 0 {
		return 0, false
	}
	return math.Exp(sum / float64(n)), true
}
