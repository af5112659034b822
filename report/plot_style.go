package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A seriesStyle is how one series looks: every series of a plot differs
// from every other in at least one of colour, marker and dash, and a
// variant keeps its style in every plot of a report.
type seriesStyle struct {
	colour color.Color
	glyph  draw.GlyphDrawer
	dashes []vg.Length
	width  vg.Length
}

// palette8 is the Okabe–Ito colour-blind-safe palette without its yellow,
// which vanishes on white, plus a dark grey and a purple.
var palette8 = [...]color.RGBA{
	{0, 114, 178, 255}, {230, 159, 0, 255}, {0, 158, 115, 255}, {204, 121, 167, 255},
	{86, 180, 233, 255}, {213, 94, 0, 255}, {90, 90, 90, 255}, {120, 60, 160, 255},
}

// glyphs has seven markers, prime to the eight colours: the first 56
// variants all get a distinct (colour, marker) pair.
var glyphs = [...]draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.PyramidGlyph{}, draw.CrossGlyph{},
	draw.RingGlyph{}, draw.PlusGlyph{}, draw.TriangleGlyph{},
}

// Dash patterns: kernel variants are solid, then long-dashed, then
// dash-dotted past each eight; references are dotted, the landed kernel
// dashed black, the memory floor dashed grey. No kernel variant is
// dotted, so a reference never looks like a kernel.
var (
	dashSolid  []vg.Length
	dashLong   = []vg.Length{vg.Points(8), vg.Points(3)}
	dashDot    = []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}
	dashDotted = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
	dashLanded = []vg.Length{vg.Points(5), vg.Points(3)}
	black      = color.RGBA{0, 0, 0, 255}
	floorGrey  = color.RGBA{150, 150, 150, 255}
)

var refPalette = [...]color.RGBA{{140, 20, 20, 255}, {20, 20, 140, 255}, {20, 110, 20, 255}, {120, 80, 0, 255}}

var landedStyle = seriesStyle{colour: black, glyph: draw.BoxGlyph{}, dashes: dashLanded, width: vg.Points(1.8)}

type styles map[string]seriesStyle

// styles assigns the variants a shape's plots draw their styles: kernel
// variants in sorted name order through the colour × marker × dash
// cycle, references through their own colours, dotted. Styles are per
// shape, not per report: with at most maxSeries kernel variants (more
// only when more are shipped) each gets a colour of its own, where one
// report-wide assignment over 27 variants gave two variants of one plot
// the same colour.
func (g *shapeGroup) styles() styles {
	kernels := append([]string(nil), g.chosen...)
	sort.Strings(kernels)
	st := styles{}
	for i, n := range kernels {
		d := [...][]vg.Length{dashSolid, dashLong, dashDot}[(i/len(palette8))%3]
		st[n] = seriesStyle{colour: palette8[i%len(palette8)], glyph: glyphs[i%len(glyphs)], dashes: d, width: vg.Points(1.4)}
	}
	for i, n := range g.refs {
		st[n] = seriesStyle{colour: refPalette[i%len(refPalette)], glyph: glyphs[(i+3)%len(glyphs)], dashes: dashDotted, width: vg.Points(1.8)}
	}
	return st
}

// A legendEntry is one line of a plot's legend.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// A figure is a plot with its legend, which savePlot draws below the
// axes in as many columns as fit: a legend beside the axes took up to
// half the image width, one inside them covered data.
type figure struct {
	*plot.Plot
	legend []legendEntry
	// lines and bars count the lines and error-bar sets drawn, so that
	// tests can check a plot's form without decoding its image.
	lines, bars int
}

func (f *figure) add(name string, thumbs ...plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name, thumbs})
}

// The data part of every plot has one size; the legend adds rows below.
const (
	plotWidth  = 18 * vg.Centimeter
	plotHeight = 11 * vg.Centimeter
	legendFont = 9 // points
	legendCols = 3 // at most
)

// yLabel names what every time plot shows: one decode-attention launch
// pair of one layer, not a whole decode step.
const yLabel = "partial+combine time (µs)"

func newFigure(title, x, y string) *figure {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return &figure{Plot: p}
}

// savePlot writes f to name in format ("png", "svg").
func savePlot(f *figure, name, format string) (err error) {
	// gonum/plot panics on data its scales cannot draw (a zero on a log
	// axis): one bad plot must cost that plot, not the report.
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("drawing %s: %v", name, v)
		}
	}()
	leg := plot.NewLegend()
	leg.TextStyle.Font.Size = vg.Points(legendFont)
	leg.ThumbnailWidth = vg.Points(26)
	leg.Top, leg.Left = true, true
	widest := vg.Length(0)
	for _, e := range f.legend {
		widest = max(widest, leg.TextStyle.Width(e.name))
	}
	colW := widest + leg.ThumbnailWidth + vg.Points(14)
	cols := max(1, min(legendCols, int(plotWidth/colW)))
	if n := len(f.legend); n > 0 && cols > n {
		cols = n
	}
	rows := 0
	if len(f.legend) > 0 {
		rows = (len(f.legend) + cols - 1) / cols
	}
	rowH := leg.TextStyle.Height("Xg") + vg.Points(2)
	legH := vg.Length(0)
	if rows > 0 {
		legH = vg.Length(rows)*rowH + vg.Points(8)
	}
	c, err := draw.NewFormattedCanvas(plotWidth, plotHeight+legH, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	f.Plot.Legend = plot.NewLegend() // the axes draw no legend of their own
	// gonum/plot reserves room for a y-axis label at the arithmetic middle
	// of the axis range, which on a log axis lies near the top and left a
	// band of white above the data: the label is drawn here instead, in a
	// strip left of the axes, centred on the plot's height.
	ylab := f.Y.Label
	f.Y.Label.Text = ""
	strip := vg.Length(0)
	if ylab.Text != "" {
		strip = ylab.TextStyle.Height(ylab.Text) + vg.Points(4)
		sty := ylab.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(sty, vg.Point{X: strip / 2, Y: legH + plotHeight/2}, ylab.Text)
	}
	f.Plot.Draw(draw.Crop(dc, strip, 0, legH, -vg.Points(4)))
	f.Y.Label = ylab
	colSpan := plotWidth / vg.Length(cols)
	for k := 0; k < cols; k++ {
		l := plot.NewLegend()
		l.TextStyle, l.ThumbnailWidth, l.Top, l.Left = leg.TextStyle, leg.ThumbnailWidth, true, true
		l.Padding = vg.Points(2)
		for i := k * rows; i < min((k+1)*rows, len(f.legend)); i++ {
			l.Add(f.legend[i].name, f.legend[i].thumbs...)
		}
		left := vg.Points(8) + vg.Length(k)*colSpan
		right := -(plotWidth - vg.Length(k+1)*colSpan)
		l.Draw(draw.Crop(dc, left, right, 0, -(plotHeight + vg.Points(4))))
	}
	out, err := os.Create(name)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(out); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// errPoints are points with asymmetric vertical error bars.
type errPoints struct {
	plotter.XYs
	plotter.YErrors
}

// addSeries draws a line through xys with markers and the interquartile
// range of each point as an error bar (iqr[i] = {median − Q1, Q3 −
// median}), and adds it to the legend. A nil line style draws markers
// only, for categories that no line may join.
func (f *figure) addSeries(name string, st seriesStyle, xys plotter.XYs, iqr plotter.YErrors, line bool) error {
	s, err := plotter.NewScatter(xys)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", name, err)
	}
	s.GlyphStyle = draw.GlyphStyle{Color: st.colour, Radius: vg.Points(3), Shape: st.glyph}
	thumbs := []plot.Thumbnailer{s}
	if line {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("plotting %s: %w", name, err)
		}
		l.Color, l.Width, l.Dashes = st.colour, st.width, st.dashes
		f.Add(l)
		f.lines++
		thumbs = []plot.Thumbnailer{l, s}
	}
	if len(iqr) == len(xys) {
		eb, err := plotter.NewYErrorBars(errPoints{xys, iqr})
		if err != nil {
			return fmt.Errorf("plotting %s: %w", name, err)
		}
		eb.Color, eb.Width, eb.CapWidth = st.colour, vg.Points(1), vg.Points(5)
		f.Add(eb)
		f.bars++
	}
	f.Add(s)
	f.add(name, thumbs...)
	return nil
}

// addRef draws a reference line without markers (the memory floor).
func (f *figure) addRef(name string, st seriesStyle, xys plotter.XYs) error {
	l, err := plotter.NewLine(xys)
	if err != nil {
		return fmt.Errorf("plotting %s: %w", name, err)
	}
	l.Color, l.Width, l.Dashes = st.colour, st.width, st.dashes
	f.Add(l)
	f.lines++
	f.add(name, l)
	return nil
}

// iqrOf is the error bar of one probe statistic, in µs.
func iqrOf(st *ProbeStat) plotter.YErrors {
	return plotter.YErrors{{Low: us(st.MedianNS - st.Q1NS), High: us(st.Q3NS - st.MedianNS)}}
}

// measuredTicks marks every measured value of a log axis and labels as
// many as fit: a label is dropped when it would touch the previous one,
// measured with the label font on the shortest data width the axis can
// have, so that labels never overlap. The last value is always labelled.
type measuredTicks struct {
	values []int
	axis   vg.Length // a lower bound of the axis length
}

// Ticks implements plot.Ticker.
func (t measuredTicks) Ticks(lo, hi float64) []plot.Tick {
	sty := plot.New().X.Tick.Label
	span := math.Log(hi) - math.Log(lo)
	pos := func(v int) vg.Length { return vg.Length((math.Log(float64(v))-math.Log(lo))/span) * t.axis }
	gap := sty.Width("0")
	out := make([]plot.Tick, len(t.values))
	lastRight := vg.Length(math.Inf(-1))
	var labelled []int
	for i, v := range t.values {
		out[i] = plot.Tick{Value: float64(v)}
		label := fmt.Sprint(v)
		half := sty.Width(label) / 2
		if pos(v)-half >= lastRight+gap {
			out[i].Label = label
			lastRight = pos(v) + half
			labelled = append(labelled, i)
		}
	}
	if n := len(t.values); n > 0 && out[n-1].Label == "" {
		last := t.values[n-1]
		left := pos(last) - sty.Width(fmt.Sprint(last))/2
		for k := len(labelled) - 1; k >= 0; k-- {
			j := labelled[k]
			if pos(t.values[j])+sty.Width(out[j].Label)/2+gap <= left {
				break
			}
			out[j].Label = ""
		}
		out[n-1].Label = fmt.Sprint(last)
	}
	return out
}

// dataWidth is a lower bound of the width of a plot's data area: the
// image less the widest room the y axis, its labels and the padding take.
const dataWidth = plotWidth - 3*vg.Centimeter

func us(ns float64) float64 { return ns / 1000 }

var vg15 = vg.Points(1.5)

// logTicks labels a log time axis at every m × 10^k when it spans less
// than a decade, at 1, 2 and 5 × 10^k below two decades and at the
// powers of ten otherwise (the others stay unlabelled marks): powers of
// ten alone left an axis from 100 to 600 µs without a single label.
type logTicks struct{}

// Ticks implements plot.Ticker.
func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	span := math.Log10(hi / lo)
	var out []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for _, m := range []float64{1, 2, 3, 4, 5, 6, 7, 8, 9} {
			v := m * p
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || span < 2 && (m == 2 || m == 5) || span < 1 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			out = append(out, t)
		}
	}
	return out
}
