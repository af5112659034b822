package report

import (
	"fmt"
	"math"
	"path"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ktune/ktune/internal/results"
)

// The rules every plot keeps, so that it can be read for choosing (the
// layout test holds each):
//
//   - at most maxSeries kernel series a panel, the best variant of each
//     kernel family first (choose); the other variants are drawn faint,
//     without markers or a legend entry of their own;
//   - a time axis is logarithmic only where the values span a decade or
//     more (timeAxis): on a narrower range a log axis hides the 5–15%
//     differences between candidates;
//   - the landed line says which configuration it is (landedName);
//   - a plot without a landed line says so in its title (noBaseline);
//   - a colour scale of ratios is centred on 1 and clipped symmetrically,
//     the clip written in its title (plotSpeedup).

// timeAxis sets f's y axis for times spanning [lo, hi] µs.
func (f *figure) timeAxis(lo, hi float64, what string) {
	f.dataLo, f.dataHi = lo, hi
	if hi/lo >= 10 {
		f.Y.Scale = plot.LogScale{}
		f.Y.Tick.Marker = logTicks{axis: dataHeight, vertical: true}
		f.Y.Label.Text = what + " (µs, log scale)"
		f.Y.Min, f.Y.Max = lo/1.4, hi*1.4
		return
	}
	f.Y.Scale = plot.LinearScale{}
	f.Y.Tick.Marker = linearTicks{}
	f.Y.Label.Text = what + " (µs)"
	pad := (hi - lo) * 0.08
	if pad == 0 {
		pad = hi * 0.05
	}
	f.Y.Min, f.Y.Max = math.Max(0, lo-pad), hi+pad
}

// family is a variant's kernel family: the kernel source it builds.
// Tunings of one kernel (mma-b16, mma-short, …) are one family.
func family(rows []Row, variant string) string {
	for i := range rows {
		if rows[i].Variant == variant {
			return rows[i].Kernel
		}
	}
	return variant
}

// pickSeries returns at most maxSeries of names (in their order of
// preference): first the best of each family, then the next best
// whatever their family; the rest are faint.
func pickSeries(rows []Row, names []string) (chosen, faint []string) {
	seen := map[string]bool{}
	for _, v := range names {
		if f := family(rows, v); !seen[f] && len(chosen) < maxSeries {
			seen[f] = true
			chosen = append(chosen, v)
		}
	}
	for _, v := range names {
		if !slices.Contains(chosen, v) && len(chosen) < maxSeries {
			chosen = append(chosen, v)
		}
	}
	for _, v := range names {
		if !slices.Contains(chosen, v) {
			faint = append(faint, v)
		}
	}
	return chosen, faint
}

// maxFaint caps the faint lines of one plot.
const maxFaint = 16

// addFaint draws the faint variants' lines: thin, light, no markers, one
// legend note for all of them.
func (f *figure) addFaint(faint []string, xy func(v string) plotter.XYs) error {
	n := 0
	for _, v := range faint {
		pts := xy(v)
		if len(pts) < 1 || n == maxFaint {
			continue
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", v, err)
		}
		l.Color, l.Width = faintGrey, vg.Points(0.7)
		f.Add(l)
		f.lines++
		n++
	}
	if n > 0 {
		f.notes = append(f.notes, fmt.Sprintf("light grey, unlabelled: %d other variant(s), each through its best configuration", n))
	}
	return nil
}

// A seriesFamily is one series of the nkv plot: the drawable variants of
// one kernel, drawn through the fastest of them at each nkv.
type seriesFamily struct {
	kernel  string
	members []string // in choose's order
}

// families groups variants (in order of preference) by kernel, keeps
// the first maxSeries families, and returns the variants drawn faint:
// every member of a family of several (the series is their envelope) and
// every variant of a family left out.
func families(rows []Row, variants []string) (fams []seriesFamily, faint []string) {
	at := map[string]int{}
	var all []seriesFamily
	for _, v := range variants {
		k := family(rows, v)
		i, ok := at[k]
		if !ok {
			i = len(all)
			at[k] = i
			all = append(all, seriesFamily{kernel: k})
		}
		all[i].members = append(all[i].members, v)
	}
	for i, fm := range all {
		if i < maxSeries {
			fams = append(fams, fm)
			if len(fm.members) > 1 {
				faint = append(faint, fm.members...)
			}
			continue
		}
		faint = append(faint, fm.members...)
	}
	return fams, faint
}

// familySubtitle says what the family series are, when any draws the
// fastest of several variants or families were left out.
func familySubtitle(fams []seriesFamily, variants int) string {
	drawn := 0
	multi := false
	for _, fm := range fams {
		drawn += len(fm.members)
		multi = multi || len(fm.members) > 1
	}
	if !multi && drawn == variants {
		return ""
	}
	return fmt.Sprintf("\na line per kernel: the fastest of its variants at each nkv (%d of %d variants; the others light grey)", drawn, variants)
}

// name is the legend entry: the variant, or the kernel and how many
// variants its line is the fastest of.
func (fm seriesFamily) name() string {
	if len(fm.members) == 1 {
		return fm.members[0]
	}
	k := strings.TrimSuffix(path.Base(fm.kernel), path.Ext(fm.kernel))
	return fmt.Sprintf("%s: fastest of %d variants", k, len(fm.members))
}

// envelope is the family's line: at each nkv the fastest member there,
// with that member's error bar.
func (fm seriesFamily) envelope(pts map[string]plotter.XYs, bars map[string]plotter.YErrors) (plotter.XYs, plotter.YErrors) {
	type pt struct {
		xy plotter.XY
		e  struct{ Low, High float64 }
	}
	best := map[float64]pt{}
	for _, v := range fm.members {
		for i, xy := range pts[v] {
			if b, ok := best[xy.X]; !ok || xy.Y < b.xy.Y {
				p := pt{xy: xy}
				p.e.Low, p.e.High = bars[v][i].Low, bars[v][i].High
				best[xy.X] = p
			}
		}
	}
	xs := make([]float64, 0, len(best))
	for x := range best {
		xs = append(xs, x)
	}
	sort.Float64s(xs)
	var xys plotter.XYs
	var e plotter.YErrors
	for _, x := range xs {
		xys = append(xys, best[x].xy)
		e = append(e, struct{ Low, High float64 }{best[x].e.Low, best[x].e.High})
	}
	return xys, e
}

// landedName names the landed line drawn through rows (one per nkv): the
// configuration when one, else which configurations and that the line
// takes the faster of them.
func landedName(rows []*Row) string {
	var cfgs []string
	for _, r := range rows {
		if c := ConfigLabel(r.Config()); !slices.Contains(cfgs, c) {
			cfgs = append(cfgs, c)
		}
	}
	sort.Strings(cfgs)
	if len(cfgs) == 1 {
		return "landed: " + cfgs[0]
	}
	return "landed: the faster of " + strings.Join(cfgs, " / ")
}

// landedNameAt names the landed point of one nkv: its configuration, and
// how many landed configurations it was the fastest of.
func landedNameAt(g *shapeGroup, r *Row) string {
	n := 0
	for i := range g.rows {
		if g.rows[i].Landed && g.rows[i].NKV == r.NKV && g.rows[i].Probe(results.ProbeCold) != nil {
			n++
		}
	}
	name := "landed: " + ConfigLabel(r.Config())
	if n > 1 {
		name += fmt.Sprintf(" (the faster of %d landed kernels here)", n)
	}
	return name
}

// noBaseline is the title note of a plot with no landed line.
func noBaseline(g *shapeGroup) string {
	if len(landedRows(g)) == 0 {
		return "\nno baseline: no record of this shape is marked landed"
	}
	return "\nno baseline: the landed kernel was not measured here"
}

// linearTicks labels about six evenly spaced round values (a step of 1,
// 2, 2.5 or 5 times a power of ten) across a linear axis, so that the
// labels sit among the data; gonum's default labels three on a narrow
// range, which left one label within the data of some plots.
type linearTicks struct{}

func (linearTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) {
		return nil
	}
	raw := (hi - lo) / 6
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag * 10
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	decimals := max(0, int(-math.Floor(math.Log10(step)+1e-9)))
	if d := step / math.Pow(10, -float64(decimals)); math.Abs(d-math.Round(d)) > 1e-6 {
		decimals++ // 2.5 × 10^k
	}
	var out []plot.Tick
	for i := math.Ceil(lo / step); i*step <= hi+step*1e-9; i++ {
		v := i * step
		out = append(out, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', decimals, 64)})
		for k := 1; k < 5; k++ { // unlabelled minor ticks
			if m := v + float64(k)*step/5; m <= hi {
				out = append(out, plot.Tick{Value: m})
			}
		}
	}
	return out
}
