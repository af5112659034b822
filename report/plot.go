package report

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/ktune/ktune/internal/results"
)

// A PlotFile is one plot written in every requested format.
type PlotFile struct {
	Kind   string // "splits", "nkv", "probes", "speedup"
	Device string
	Shape  string // the shape's label
	Title  string
	Base   string   // path without extension
	Files  []string // Base + ".png", Base + ".svg"
	// Series are the legend entries (or heatmap rows) drawn, for checks.
	Series []string
	// Covers lists the variants a family's series stands for where one
	// series draws the fastest of several (the nkv plot).
	Covers []string
}

// PlotFormats are the formats Plots writes.
var plotFormats = [...]string{"png", "svg"}

// plotNote says in report.md how the plots choose and draw their series.
var plotNote = fmt.Sprintf("Each plot draws at most %[1]d kernel series, each variant through its best "+
	"configuration: time against nkv a line per kernel, the fastest of its variants at each nkv, the other variants light grey; the other plots %[1]d variants, the best of each kernel first "+
	"(those what to ship names, then by the geometric mean of their cold time over the landed kernel's). "+
	"A time axis is logarithmic only where the values span a decade or more. "+
	"The landed kernel, the references and the time to read K+V once at the streaming-read rate measured in the run are always drawn; error bars span the interquartile range of the samples where it is wider than the marker, and the legend says when none is.", maxSeries)

// readRateLabel names the reference line of the time plots: K+V bytes
// over the streaming-read rate measured in the run.
const readRateLabel = "K+V at the run's streaming-read rate"

// maxSeries caps the kernel variants of one plot; the landed kernel, the
// references and the read-rate line are drawn besides them. Six mma
// tunings in similar hues on one panel could not be told apart; five,
// the best of each family first, can.
const maxSeries = 5

// Plots writes every plot of the report into dir as PNG and SVG and
// returns them in the order report.md shows them.
func (rep *Report) Plots(dir string) ([]PlotFile, error) {
	return rep.plots(context.Background(), dir)
}

// plots draws, per device and shape: time against nkv, cold vs hot vs
// graph, the speedup heatmap, and time against SPLITS at each nkv where
// some variant was measured at more than one SPLITS. The time plots use
// the cold probe: it is the one that reads K/V from DRAM, as a decode step
// does once the rest of the layer has evicted them. Fixtures and records
// that failed a gate or did not run are never drawn; a plot with nothing
// to draw is not written.
func (rep *Report) plots(ctx context.Context, dir string) ([]PlotFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing plots: %w", err)
	}
	figs, err := rep.figures(ctx)
	if err != nil {
		return nil, err
	}
	var out []PlotFile
	for _, fg := range figs {
		f, pf := fg.fig, fg.file
		pf.Base = filepath.Join(dir, pf.Base)
		for _, ext := range plotFormats {
			name := pf.Base + "." + ext
			if err := savePlot(f, name, ext); err != nil {
				return nil, fmt.Errorf("writing plot %s: %w", name, err)
			}
			pf.Files = append(pf.Files, name)
		}
		out = append(out, pf)
	}
	return out, nil
}

// A drawnPlot is a figure with its file description (Base without the
// directory, no Files yet).
type drawnPlot struct {
	fig  *figure
	file PlotFile
}

// figures builds every plot of the report, in report.md's order.
func (rep *Report) figures(ctx context.Context) ([]drawnPlot, error) {
	var out []drawnPlot
	for _, g := range rep.shapeGroups() {
		sty := g.styles()
		makers := []func(*shapeGroup, styles) (*figure, PlotFile, error){
			rep.plotNKV, rep.plotProbes, rep.plotSpeedup, rep.plotSpeedupRef,
		}
		for _, nkv := range g.nkvs {
			nkv := nkv
			makers = append(makers, func(g *shapeGroup, s styles) (*figure, PlotFile, error) {
				return rep.plotSplits(g, nkv, s)
			})
		}
		for _, mk := range makers {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("writing plots: %w", err)
			}
			f, pf, err := mk(g, sty)
			if err != nil {
				return nil, err
			}
			if f == nil {
				continue
			}
			pf.Device, pf.Shape = g.device, g.label
			f.finish()
			out = append(out, drawnPlot{f, pf})
		}
	}
	if rep.Workload != nil {
		for i := range rep.Workload.Shapes {
			f, pf, err := rep.plotWorkload(&rep.Workload.Shapes[i])
			if err != nil {
				return nil, err
			}
			if f != nil {
				f.finish()
				out = append(out, drawnPlot{f, pf})
			}
		}
	}
	return out, nil
}

// A shapeGroup is the drawable rows of one device and shape: measured,
// every gate passed, not a fixture.
type shapeGroup struct {
	device, label, slug, key string
	rows                     []Row
	nkvs                     []int
	bytes                    map[int]int64 // K+V bytes per nkv
	readBW                   float64
	// chosen are the kernel variants drawn, best first (see choose);
	// variants counts every kernel variant measured; refs the references.
	chosen   []string
	variants int
	refs     []string
	// faint are the kernel variants past maxSeries, drawn unlabelled;
	// order is every kernel variant in choose's order of preference.
	faint []string
	order []string
}

func (rep *Report) shapeGroups() []*shapeGroup {
	var out []*shapeGroup
	for i := range rep.Rows {
		r := rep.Rows[i]
		if r.Fixture || r.Status != results.StatusOK || !r.rec.GatesPass() || len(r.Probes) == 0 {
			continue
		}
		if n := len(out); n == 0 || out[n-1].device != r.Device || out[n-1].key != r.key.Shape {
			slug := slugify(r.Label)
			if rep.Devices > 1 {
				slug = slugify(r.Device) + "_" + slug
			}
			out = append(out, &shapeGroup{device: r.Device, label: r.Label, slug: slug, key: r.key.Shape, bytes: map[int]int64{}})
		}
		g := out[len(out)-1]
		g.rows = append(g.rows, r)
		if _, ok := g.bytes[r.NKV]; !ok {
			g.nkvs = append(g.nkvs, r.NKV)
			g.bytes[r.NKV] = 0
		}
		if st := bwProbe(&r); st != nil && st.Bytes > 0 {
			g.bytes[r.NKV] = st.Bytes
		}
		if bw := r.rec.Env.ReadBWGBps; bw > 0 && !r.Reference {
			g.readBW = bw
		}
	}
	for _, g := range out {
		sort.Ints(g.nkvs)
		rep.choose(g)
	}
	return out
}

// choose picks the kernel variants a shape's plots draw, up to maxSeries:
// the variants "what to ship" names for the shape (those shipped at more
// nkv first), then the others by the geometric mean, over the nkv both
// measured, of their best cold time over the landed kernel's (lowest
// first; a variant never measured where the landed kernel was comes
// last), the best of each kernel family before a second of any
// (pickSeries). The rest are drawn faint.
func (rep *Report) choose(g *shapeGroup) {
	landed := landedBest(g.rows)
	sum, cnt := map[string]float64{}, map[string]int{}
	isRef := map[string]bool{}
	for _, r := range BestRows(g.rows, results.ProbeCold) {
		if r.Reference {
			isRef[r.Variant] = true
			continue
		}
		if _, ok := sum[r.Variant]; !ok {
			sum[r.Variant] = 0
		}
		if b, ok := landed[landedKey{r.Device, r.key.Shape, r.NKV, results.ProbeCold}]; ok {
			sum[r.Variant] += math.Log(r.Probe(results.ProbeCold).MedianNS / b)
			cnt[r.Variant]++
		}
	}
	for v := range isRef {
		g.refs = append(g.refs, v)
	}
	sort.Strings(g.refs)
	score := func(v string) float64 {
		if cnt[v] == 0 {
			return math.Inf(1)
		}
		return sum[v] / float64(cnt[v])
	}
	var names []string
	for v := range sum {
		names = append(names, v)
	}
	g.variants = len(names)
	sort.Slice(names, func(i, j int) bool {
		si, sj := score(names[i]), score(names[j])
		if si != sj {
			return si < sj
		}
		return names[i] < names[j]
	})
	// Shipped variants first, those shipped at more nkv before others.
	shipped := map[string]int{}
	for _, s := range rep.Ship {
		if s.Device == g.device && s.Shape == g.label {
			for _, rg := range s.Ranges {
				shipped[rg.Variant] += len(rg.Points)
			}
		}
	}
	sort.SliceStable(names, func(i, j int) bool { return shipped[names[i]] > shipped[names[j]] })
	g.order = names
	g.chosen, g.faint = pickSeries(g.rows, names)
}

// subtitle says how many of the variants a plot could show it draws,
// when the cap left some out.
func subtitle(drawn, measured int) string {
	if drawn >= measured {
		return ""
	}
	return fmt.Sprintf("\n%d of %d variants: the best of each kernel first, the shipped ones before others", drawn, measured)
}

func slugify(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, s)
}

// landedRows returns the fastest landed row of g at each nkv, by cold.
func landedRows(g *shapeGroup) map[int]*Row {
	out := map[int]*Row{}
	for i := range g.rows {
		r := &g.rows[i]
		st := r.Probe(results.ProbeCold)
		if !r.Landed || st == nil {
			continue
		}
		if b := out[r.NKV]; b == nil || st.MedianNS < b.Probe(results.ProbeCold).MedianNS {
			out[r.NKV] = r
		}
	}
	return out
}

// plotNKV is time against nkv, log–log, one line per drawn variant
// through its best configuration at each nkv (what a dispatch choosing
// SPLITS per nkv would ship), with the landed kernel, the references and
// the read-rate line; error bars span each point's interquartile range.
func (rep *Report) plotNKV(g *shapeGroup, sty styles) (*figure, PlotFile, error) {
	pf := PlotFile{Kind: "nkv", Base: "nkv_" + g.slug}
	pts := map[string]plotter.XYs{}
	bars := map[string]plotter.YErrors{}
	onlyLanded := map[string]bool{}
	for _, r := range BestRows(g.rows, results.ProbeCold) {
		st := r.Probe(results.ProbeCold)
		if _, ok := onlyLanded[r.Variant]; !ok {
			onlyLanded[r.Variant] = true
		}
		onlyLanded[r.Variant] = onlyLanded[r.Variant] && r.Landed
		pts[r.Variant] = append(pts[r.Variant], plotter.XY{X: float64(r.NKV), Y: us(st.MedianNS)})
		bars[r.Variant] = append(bars[r.Variant], iqrOf(st)...)
	}
	var drawable []string
	for _, v := range g.order {
		// The landed variant's line is the landed line when its best
		// configuration is the landed one everywhere: drawn once.
		if len(pts[v]) > 0 && !onlyLanded[v] {
			drawable = append(drawable, v)
		}
	}
	fams, faint := families(g.rows, drawable)
	var drawn []string
	for _, fm := range fams {
		drawn = append(drawn, fm.members...)
	}
	landed := landedRows(g)
	refs := 0
	for _, v := range g.refs {
		refs += len(pts[v])
	}
	if len(drawn) == 0 && len(landed) == 0 && refs == 0 {
		return nil, pf, nil
	}
	pf.Title = fmt.Sprintf("%s: cold time vs context length (best configuration per variant)", g.label) + familySubtitle(fams, len(drawable))
	if len(landed) == 0 {
		pf.Title += noBaseline(g)
	}
	f := newFigure(pf.Title, "context length nkv (tokens, log scale)", "partial+combine time (µs, log scale)")
	f.X.Scale = plot.LogScale{}
	f.X.Tick.Marker = measuredTicks{values: g.nkvs, axis: dataWidth}
	if err := f.addFaint(faint, func(v string) plotter.XYs { return pts[v] }); err != nil {
		return nil, pf, err
	}
	lo, hi := math.Inf(1), 0.0
	span := func(xys plotter.XYs, e plotter.YErrors) {
		for i, xy := range xys {
			lo, hi = math.Min(lo, xy.Y-e[i].Low), math.Max(hi, xy.Y+e[i].High)
		}
	}
	for i, fm := range fams {
		xys, e := fm.envelope(pts, bars)
		// Styles by place in this panel: at most maxSeries series,
		// each its own colour and marker.
		st := seriesStyle{colour: palette8[i%len(palette8)], glyph: markers[i%len(markers)], width: vg.Points(1.4)}
		if err := f.addSeries(fm.name(), st, xys, e, true); err != nil {
			return nil, pf, err
		}
		span(xys, e)
		pf.Series = append(pf.Series, fm.name())
		if len(fm.members) > 1 {
			pf.Covers = append(pf.Covers, fm.members...)
		}
	}
	var lxy plotter.XYs
	var lbar plotter.YErrors
	var fxy plotter.XYs
	var lrows []*Row
	for _, n := range g.nkvs {
		if r := landed[n]; r != nil {
			lrows = append(lrows, r)
			st := r.Probe(results.ProbeCold)
			lxy = append(lxy, plotter.XY{X: float64(n), Y: us(st.MedianNS)})
			lbar = append(lbar, iqrOf(st)...)
		}
		if fl := floorNS(g.bytes[n], g.readBW); !math.IsNaN(fl) {
			fxy = append(fxy, plotter.XY{X: float64(n), Y: us(fl)})
		}
	}
	if len(lxy) > 0 {
		name := landedName(lrows)
		if err := f.addSeries(name, landedStyle, lxy, lbar, true); err != nil {
			return nil, pf, err
		}
		span(lxy, lbar)
		pf.Series = append(pf.Series, name)
	}
	for _, v := range g.refs {
		if len(pts[v]) == 0 {
			continue
		}
		if err := f.addSeries(v+" (reference)", sty[v], pts[v], bars[v], true); err != nil {
			return nil, pf, err
		}
		span(pts[v], bars[v])
		pf.Series = append(pf.Series, v)
	}
	// The y range follows the kernels, not the read-rate line: at short
	// contexts it is a fraction of a microsecond, launch latency
	// dominates, and an axis reaching down to it squeezes every kernel
	// into the top band. The line is clipped where it leaves the range.
	// It is named for what it is, the streaming-read rate the run
	// measured, not a floor: kernels can beat that rate slightly (d256 at
	// batch 16 and 131072 tokens does).
	if len(fxy) > 0 {
		name := fmt.Sprintf("%s (%.0f GB/s)", readRateLabel, g.readBW)
		if err := f.addRef(name, seriesStyle{colour: floorGrey, dashes: dashLong, width: vg15}, fxy); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, name)
	}
	// Set after every Add, which widens the axes to the data it adds.
	f.timeAxis(lo, hi, "partial+combine time")
	f.X.Min, f.X.Max = float64(g.nkvs[0])/1.4, float64(g.nkvs[len(g.nkvs)-1])*1.4
	return f, pf, nil
}
