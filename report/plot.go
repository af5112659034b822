package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ktune/ktune/internal/results"
)

// A PlotFile is one plot written in every requested format.
type PlotFile struct {
	Kind  string // "splits", "nkv", "probes", "speedup"
	Title string
	Base  string   // path without extension
	Files []string // Base + ".png", Base + ".svg"
	// Series are the legend entries (or heatmap rows) drawn, for checks.
	Series []string
}

// PlotFormats are the formats Plots writes.
var plotFormats = [...]string{"png", "svg"}

// palette10 is a colour-blind-safe qualitative palette (Okabe–Ito, then
// darker tones). Variants take colours in sorted name order so that a
// variant keeps its colour in every plot of a report.
var palette10 = [...]color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {240, 228, 66, 255}, {110, 110, 110, 255},
	{120, 60, 160, 255}, {150, 100, 40, 255},
}

type colours map[string]color.Color

func (rep *Report) colours() colours {
	var names []string
	seen := map[string]bool{}
	for i := range rep.Rows {
		if v := rep.Rows[i].Variant; !seen[v] {
			seen[v] = true
			names = append(names, v)
		}
	}
	sort.Strings(names)
	c := colours{}
	for i, n := range names {
		c[n] = palette10[i%len(palette10)]
	}
	return c
}

// Plots writes every plot of the report into dir as PNG and SVG and
// returns them in the order report.md shows them. The time plots use the
// cold probe: it is the one that reads K/V from DRAM, as a decode step
// does once the rest of the layer has evicted them.
func (rep *Report) Plots(dir string) ([]PlotFile, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("writing plots: %w", err)
	}
	col := rep.colours()
	var out []PlotFile
	for _, g := range rep.shapeGroups() {
		makers := []func(shapeGroup, colours) (*plot.Plot, PlotFile, error){
			rep.plotNKV, rep.plotProbes, rep.plotSpeedup,
		}
		for _, nkv := range g.nkvs {
			nkv := nkv
			makers = append(makers, func(g shapeGroup, c colours) (*plot.Plot, PlotFile, error) {
				return rep.plotSplits(g, nkv, c)
			})
		}
		for _, mk := range makers {
			p, pf, err := mk(g, col)
			if err != nil {
				return nil, err
			}
			if p == nil {
				continue
			}
			pf.Base = filepath.Join(dir, pf.Base)
			for _, f := range plotFormats {
				name := pf.Base + "." + f
				if err := savePlot(p, name, f); err != nil {
					return nil, fmt.Errorf("writing plot %s: %w", name, err)
				}
				pf.Files = append(pf.Files, name)
			}
			out = append(out, pf)
		}
	}
	return out, nil
}

// A shapeGroup is the rows of one device and shape.
type shapeGroup struct {
	device, label, slug string
	rows                []Row
	nkvs                []int
	bytes               map[int]int64 // K+V bytes per nkv
	readBW              float64
}

func (rep *Report) shapeGroups() []shapeGroup {
	var out []shapeGroup
	for i := range rep.Rows {
		r := rep.Rows[i]
		if n := len(out); n == 0 || out[n-1].device != r.Device || out[n-1].rows[0].key.Shape != r.key.Shape {
			slug := slugify(ShapeLabel(r.Shape))
			if rep.Devices > 1 {
				slug = slugify(r.Device) + "_" + slug
			}
			out = append(out, shapeGroup{device: r.Device, label: ShapeLabel(r.Shape), slug: slug, bytes: map[int]int64{}})
		}
		g := &out[len(out)-1]
		g.rows = append(g.rows, r)
		if _, ok := g.bytes[r.NKV]; !ok {
			g.nkvs = append(g.nkvs, r.NKV)
		}
		if st := bwProbe(&r); st != nil && st.Bytes > 0 {
			g.bytes[r.NKV] = st.Bytes
		} else if _, ok := g.bytes[r.NKV]; !ok {
			g.bytes[r.NKV] = 0
		}
		if bw := r.rec.Env.ReadBWGBps; bw > 0 {
			g.readBW = bw
		}
	}
	for i := range out {
		sort.Ints(out[i].nkvs)
	}
	return out
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

// The data part of every plot has one size; a legend is drawn to the
// right of it and widens the image. A legend inside the axes covered data
// as soon as a report held more than a few variants, whatever headroom the
// axes were given.
const (
	plotWidth  = 18 * vg.Centimeter
	plotHeight = 11 * vg.Centimeter
	legendGap  = 4 * vg.Millimeter
)

// yLabel names what every time plot shows: one decode-attention launch
// pair of one layer, not a whole decode step.
const yLabel = "partial+combine time (µs)"

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	p.Add(plotter.NewGrid())
	return p
}

// savePlot writes p to name in format ("png", "svg"), with its legend, if
// it has entries, in a column right of the axes, aligned with their top.
func savePlot(p *plot.Plot, name, format string) (err error) {
	// gonum/plot panics on data its scales cannot draw (a zero on a log
	// axis): one bad plot must cost that plot, not the report.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("drawing %s: %v", name, v)
		}
	}()
	leg := p.Legend
	lw := leg.Rectangle(draw.Canvas{}).Size().X
	w := plotWidth
	if lw > 0 {
		w += legendGap + lw
	}
	c, err := draw.NewFormattedCanvas(w, plotHeight, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	if lw > 0 {
		// Draw the axes without the legend, then the legend beside them.
		p.Legend = plot.NewLegend()
		p.Draw(draw.Crop(dc, 0, -(legendGap + lw), 0, 0))
		p.Legend = leg
		top := vg.Length(0)
		if p.Title.Text != "" {
			top = p.Title.TextStyle.Rectangle(p.Title.Text).Size().Y + p.Title.Padding
		}
		leg.Top, leg.Left = true, true
		leg.Draw(draw.Crop(dc, plotWidth+legendGap, 0, 0, -top))
	} else {
		p.Draw(dc)
	}
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// addSeries draws a line with point markers and adds it to the legend.
func addSeries(p *plot.Plot, name string, c color.Color, xys plotter.XYs, dashed bool) error {
	l, s, err := plotter.NewLinePoints(xys)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", name, err)
	}
	l.Color, s.Color = c, c
	l.Width = vg.Points(1.5)
	s.Shape = draw.CircleGlyph{}
	if dashed {
		l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	p.Add(l, s)
	p.Legend.Add(name, l, s)
	return nil
}

func us(ns float64) float64 { return ns / 1000 }

// landedLabel names the landed reference line by its configuration when
// the landed rows of g share one, "landed (best)" otherwise.
func landedLabel(rows []Row) string {
	label := ""
	for i := range rows {
		if rows[i].Landed {
			l := ConfigLabel(rows[i].Config())
			if label != "" && label != l {
				return "landed (best config)"
			}
			label = l
		}
	}
	return "landed: " + label
}

var black = color.RGBA{0, 0, 0, 255}

// plotSplits is time against SPLITS per variant at one nkv, with the
// landed kernel's time as a horizontal reference. A variant with several
// other defines (NR=4, NR=8) is drawn through its best at each SPLITS.
func (rep *Report) plotSplits(g shapeGroup, nkv int, col colours) (*plot.Plot, PlotFile, error) {
	pf := PlotFile{Kind: "splits", Title: fmt.Sprintf("%s, nkv=%d: cold time vs SPLITS", g.label, nkv),
		Base: fmt.Sprintf("splits_%s_nkv%d", g.slug, nkv)}
	best := map[string]map[int]float64{} // variant → SPLITS → median
	var variants []string
	splitsSeen := map[int]bool{}
	refs := map[string]float64{} // variant without SPLITS → median
	for i := range g.rows {
		r := &g.rows[i]
		st := r.Probe(results.ProbeCold)
		if r.NKV != nkv || r.Status != results.StatusOK || st == nil {
			continue
		}
		if r.Splits < 1 {
			// An external reference (e.g. PyTorch SDPA) has no SPLITS: it is
			// drawn as a horizontal line, like the landed kernel.
			if v, ok := refs[r.Variant]; !ok || st.MedianNS < v {
				refs[r.Variant] = st.MedianNS
			}
			continue
		}
		if best[r.Variant] == nil {
			best[r.Variant] = map[int]float64{}
			variants = append(variants, r.Variant)
		}
		if v, ok := best[r.Variant][r.Splits]; !ok || st.MedianNS < v {
			best[r.Variant][r.Splits] = st.MedianNS
		}
		splitsSeen[r.Splits] = true
	}
	if len(variants) == 0 {
		return nil, pf, nil
	}
	sort.Strings(variants)
	p := newPlot(pf.Title, "SPLITS (log scale)", yLabel)
	p.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	var splits []int
	for s := range splitsSeen {
		splits = append(splits, s)
	}
	sort.Ints(splits)
	for _, s := range splits {
		ticks = append(ticks, plot.Tick{Value: float64(s), Label: fmt.Sprint(s)})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.Y.Min = 0
	// Room on both sides of the outer SPLITS and a little above the data.
	p.X.Min, p.X.Max = float64(splits[0])/1.3, float64(splits[len(splits)-1])*1.3
	top := 0.0
	for _, m := range best {
		for _, v := range m {
			top = math.Max(top, us(v))
		}
	}
	for _, v := range refs {
		top = math.Max(top, us(v))
	}
	if base, ok := landedBest(g.rows)[landedKey{g.device, g.rows[0].key.Shape, nkv, results.ProbeCold}]; ok {
		top = math.Max(top, us(base))
	}
	p.Y.Max = top * 1.1
	for _, v := range variants {
		var xys plotter.XYs
		for _, s := range splits {
			if m, ok := best[v][s]; ok {
				xys = append(xys, plotter.XY{X: float64(s), Y: us(m)})
			}
		}
		if err := addSeries(p, v, col[v], xys, false); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, v)
	}
	if base, ok := landedBest(g.rows)[landedKey{g.device, g.rows[0].key.Shape, nkv, results.ProbeCold}]; ok {
		lo, hi := p.X.Min, p.X.Max
		name := landedLabel(g.rows)
		if err := addRef(p, name, plotter.XYs{{X: lo, Y: us(base)}, {X: hi, Y: us(base)}}, black); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, name)
	}
	var refNames []string
	for v := range refs {
		refNames = append(refNames, v)
	}
	sort.Strings(refNames)
	for _, v := range refNames {
		if err := addRef(p, v, plotter.XYs{{X: p.X.Min, Y: us(refs[v])}, {X: p.X.Max, Y: us(refs[v])}}, col[v]); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, v)
	}
	return p, pf, nil
}

// addRef draws a dashed reference line without markers.
func addRef(p *plot.Plot, name string, xys plotter.XYs, c color.Color) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", name, err)
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	l.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// plotNKV is time against nkv, log–log, one line per variant through its
// best configuration at each nkv (what a dispatch choosing SPLITS per nkv
// would ship), with the landed kernel and the memory floor.
func (rep *Report) plotNKV(g shapeGroup, col colours) (*plot.Plot, PlotFile, error) {
	pf := PlotFile{Kind: "nkv", Title: fmt.Sprintf("%s: cold time vs context length (best SPLITS per variant)", g.label),
		Base: "nkv_" + g.slug}
	byVariant := map[string]plotter.XYs{}
	var variants []string
	for _, r := range BestRows(g.rows, results.ProbeCold) {
		if _, ok := byVariant[r.Variant]; !ok {
			variants = append(variants, r.Variant)
		}
		byVariant[r.Variant] = append(byVariant[r.Variant], plotter.XY{X: float64(r.NKV), Y: us(r.Probe(results.ProbeCold).MedianNS)})
	}
	if len(variants) == 0 {
		return nil, pf, nil
	}
	sort.Strings(variants)
	p := newPlot(pf.Title, "context length nkv (tokens, log scale)", "partial+combine time (µs, log scale)")
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Tick.Marker = sweptTicks(g.nkvs)
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	for _, v := range variants {
		xys := byVariant[v]
		sort.Slice(xys, func(i, j int) bool { return xys[i].X < xys[j].X })
		if err := addSeries(p, v, col[v], xys, false); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, v)
	}
	landed := landedBest(g.rows)
	var lxy, fxy plotter.XYs
	for _, n := range g.nkvs {
		if b, ok := landed[landedKey{g.device, g.rows[0].key.Shape, n, results.ProbeCold}]; ok {
			lxy = append(lxy, plotter.XY{X: float64(n), Y: us(b)})
		}
		if f := floorNS(g.bytes[n], g.readBW); !math.IsNaN(f) {
			fxy = append(fxy, plotter.XY{X: float64(n), Y: us(f)})
		}
	}
	if len(lxy) > 0 {
		name := landedLabel(g.rows)
		if err := addRef(p, name, lxy, black); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, name)
	}
	// The y range follows the kernels, not the floor: at short contexts the
	// floor is a fraction of a microsecond, launch latency dominates, and an
	// axis reaching down to it squeezes every kernel into the top band. The
	// floor line is clipped where it leaves the range.
	lo, hi := math.Inf(1), 0.0
	for _, xys := range append([]plotter.XYs{lxy}, mapValues(byVariant)...) {
		for _, xy := range xys {
			lo, hi = math.Min(lo, xy.Y), math.Max(hi, xy.Y)
		}
	}
	if len(fxy) > 0 {
		name := fmt.Sprintf("memory floor (K+V bytes at %.0f GB/s)", g.readBW)
		if err := addRef(p, name, fxy, color.RGBA{160, 160, 160, 255}); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, name)
	}
	// Set after every p.Add, which widens the axes to the data it adds.
	p.Y.Min, p.Y.Max = lo/2, hi*1.5
	return p, pf, nil
}

func mapValues(m map[string]plotter.XYs) []plotter.XYs {
	out := make([]plotter.XYs, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}

// sweptTicks labels exactly the swept values of a log axis: powers of ten
// alone would leave most nkv values unlabelled. A value too close to the
// previous label to be printed beside it (1641 next to 2048) keeps its
// tick mark without a label.
type sweptTicks []int

// labelCharFrac is the width of one tick-label character as a fraction of
// the axis length (10 pt labels on an axis of about 16 cm).
const labelCharFrac = 1.0 / 80

// Ticks implements plot.Ticker.
func (t sweptTicks) Ticks(min, max float64) []plot.Tick {
	span := math.Log10(max) - math.Log10(min)
	var out []plot.Tick
	last, lastLen := math.Inf(-1), 0
	for _, v := range t {
		label := fmt.Sprint(v)
		x := math.Log10(float64(v))
		// Half of each label plus one character of space between them.
		need := span * (float64(len(label)+lastLen)/2 + 1) * labelCharFrac
		if x-last < need {
			out = append(out, plot.Tick{Value: float64(v)})
			continue
		}
		out = append(out, plot.Tick{Value: float64(v), Label: label})
		last, lastLen = x, len(label)
	}
	return out
}
