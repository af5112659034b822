package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

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

// Dash patterns: kernel variants are solid, then long-dashed, then
// dash-dotted past each eight; references are dotted, the landed kernel
// dashed black, the read-rate line dashed grey. No kernel variant is
// dotted, so a reference never looks like a kernel.
var (
	dashSolid  []vg.Length
	dashLong   = []vg.Length{vg.Points(8), vg.Points(3)}
	dashDot    = []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)}
	dashDotted = []vg.Length{vg.Points(1.5), vg.Points(2.5)}
	dashLanded = []vg.Length{vg.Points(5), vg.Points(3)}
	black      = color.RGBA{0, 0, 0, 255}
	floorGrey  = color.RGBA{150, 150, 150, 255}
	faintGrey  = color.RGBA{205, 205, 205, 255}
)

var refPalette = [...]color.RGBA{{140, 20, 20, 255}, {20, 20, 140, 255}, {20, 110, 20, 255}, {120, 80, 0, 255}}

var landedStyle = seriesStyle{colour: black, glyph: landedMarker, dashes: dashLanded, width: vg.Points(1.8)}

type styles map[string]seriesStyle

// styles assigns the variants a shape's plots draw their styles: kernel
// variants in sorted name order through the colours and dashes,
// references through their own colours, dotted, and every series a
// marker of its own (the landed kernel's is kept apart), so that two
// series never share a marker in different colours. Styles are per
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
		st[n] = seriesStyle{colour: palette8[i%len(palette8)], glyph: markers[i%len(markers)], dashes: d, width: vg.Points(1.4)}
	}
	for i, n := range g.refs {
		st[n] = seriesStyle{colour: refPalette[i%len(refPalette)], glyph: markers[(len(kernels)+i)%len(markers)], dashes: dashDotted, width: vg.Points(1.8)}
	}
	return st
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
	s.GlyphStyle = draw.GlyphStyle{Color: st.colour, Radius: markerRadius, Shape: st.glyph}
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
		f.errBars = append(f.errBars, eb)
	}
	f.Add(s)
	f.add(name, thumbs...)
	return nil
}

// addRef draws a reference line without markers (the read-rate line).
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
