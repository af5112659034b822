package report

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A legendEntry is one line of a plot's legend: a series with its
// thumbnails.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// A figure is a plot with its legend, which drawOn draws below the axes
// in as many columns as fit: a legend beside the axes took up to half
// the image width, one inside them covered data.
type figure struct {
	*plot.Plot
	legend []legendEntry
	// notes are lines below the legend's columns, across the whole width:
	// what the error bars show, which would widen every column.
	notes []string
	// maxCols caps the legend's columns (legendCols when zero): a colour
	// scale's short swatch labels fit more to a row than series names.
	maxCols int
	// lines and bars count the lines and error-bar sets drawn, so that
	// tests can check a plot's form without decoding its image.
	lines, bars int
	// errBars are the error-bar sets, which finish prunes to the bars
	// that show beside their markers.
	errBars  []*plotter.YErrorBars
	finished bool
	// scale, when set, is drawn below the axes instead of a legend.
	scale *colourScale
	// dataLo and dataHi are the time range a time axis was set for
	// (timeAxis), 0 on other plots.
	dataLo, dataHi float64
}

// A colourScale is a heatmap's key: a row of coloured boxes, each with
// the value at its middle written below it, then a box for "no data".
type colourScale struct {
	title     string
	colours   []color.Color
	labels    []string // one per colour
	none      color.Color
	noneLabel string
	// lo and hi are the ratios at the two ends: clipped symmetrically
	// about 1 (lo·hi = 1).
	lo, hi float64
}

// scaleHeight is the height of a colour scale below the axes: its title,
// the boxes and their labels.
const scaleHeight vg.Length = 48

// draw draws the scale across the bottom scaleHeight of c.
func (s *colourScale) draw(c draw.Canvas) {
	sty := plot.NewLegend().TextStyle
	sty.Font.Size = vg.Points(legendFont)
	left, width := c.Min.X+vg.Points(legendMargin), c.Max.X-c.Min.X-2*vg.Points(legendMargin)
	top := c.Min.Y + scaleHeight
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YTop
	c.FillText(sty, vg.Point{X: left, Y: top}, s.title)
	noneW := sty.Width(s.noneLabel)
	box := (width - noneW - vg.Points(24)) / vg.Length(len(s.colours))
	boxTop, boxH := top-sty.Height(s.title)-vg.Points(3), vg.Length(12)
	sty.XAlign = draw.XCenter
	rect := func(x0, x1 vg.Length, col color.Color) {
		p := make(vg.Path, 0, 5)
		p.Move(vg.Point{X: x0, Y: boxTop - boxH})
		p.Line(vg.Point{X: x1, Y: boxTop - boxH})
		p.Line(vg.Point{X: x1, Y: boxTop})
		p.Line(vg.Point{X: x0, Y: boxTop})
		p.Close()
		c.SetColor(col)
		c.Fill(p)
		c.SetLineStyle(draw.LineStyle{Color: color.Gray{Y: 120}, Width: vg.Points(0.5)})
		c.Stroke(p)
	}
	for i, col := range s.colours {
		x0 := left + vg.Length(i)*box
		rect(x0, x0+box, col)
		c.FillText(sty, vg.Point{X: x0 + box/2, Y: boxTop - boxH - vg.Points(2)}, s.labels[i])
	}
	x0 := left + vg.Length(len(s.colours))*box + vg.Points(24)
	rect(x0, x0+noneW, s.none)
	c.FillText(sty, vg.Point{X: x0 + noneW/2, Y: boxTop - boxH - vg.Points(2)}, s.noneLabel)
}

// markerRadius is the radius of every series marker (vg.Length is in
// points).
const markerRadius vg.Length = 3

// finish keeps, once the axis ranges are set, only the error bars that
// reach past their markers on the smallest data area a plot can have
// (an interquartile range of 0.3% on an axis of three decades is a
// fraction of a pixel, and a bar hidden by its marker reads as "no
// spread measured"), and says in the legend what the bars are and how
// many are drawn, or that none is and why.
func (f *figure) finish() {
	if f.finished || len(f.errBars) == 0 {
		f.finished = true
		return
	}
	f.finished = true
	_, logY := f.Y.Scale.(plot.LogScale)
	frac := func(lo, hi float64) float64 { // of the axis height
		if logY {
			return math.Log(hi/lo) / math.Log(f.Y.Max/f.Y.Min)
		}
		return (hi - lo) / (f.Y.Max - f.Y.Min)
	}
	reach := markerRadius*1.2 + vg.Points(1)
	kept, total, widest := 0, 0, 0.0
	for _, eb := range f.errBars {
		var xys plotter.XYs
		var errs plotter.YErrors
		for i, xy := range eb.XYs {
			e := eb.YErrors[i]
			total++
			up := vg.Length(frac(xy.Y, xy.Y+e.High)) * dataHeight
			down := vg.Length(frac(math.Max(xy.Y-e.Low, f.Y.Min), xy.Y)) * dataHeight
			if max(up, down) > reach {
				xys, errs = append(xys, xy), append(errs, e)
				kept++
			} else if xy.Y > 0 {
				widest = math.Max(widest, (e.Low+e.High)/2/xy.Y)
			}
		}
		eb.XYs, eb.YErrors = xys, errs
	}
	switch {
	case kept == total:
		f.notes = append(f.notes, "error bars: interquartile range of the samples")
	case kept > 0:
		f.notes = append(f.notes, fmt.Sprintf("error bars: interquartile range, drawn where wider than the marker (%d of %d points)", kept, total))
	default:
		f.notes = append(f.notes, fmt.Sprintf("no error bars: every interquartile range lies inside its marker (at most ±%s%%)", fmtPctSpread(widest*100)))
	}
}

func (f *figure) add(name string, thumbs ...plot.Thumbnailer) {
	f.legend = append(f.legend, legendEntry{name, thumbs})
}

// The data part of every plot has one size; the legend adds rows below.
const (
	plotWidth  = 18 * vg.Centimeter
	plotHeight = 11 * vg.Centimeter
	legendFont = 9 // points
	legendCols = 3 // at most, for series names
	// legendMargin is the white left of the legend and right of its
	// last column.
	legendMargin = 8 // points
)

func newFigure(title, x, y string) *figure {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	return &figure{Plot: p}
}

// A legendLayout is where drawOn puts the legend.
type legendLayout struct {
	style      draw.TextStyle
	thumbWidth vg.Length
	cols, rows int
	colSpan    vg.Length // the width of one column
	height     vg.Length // of the whole legend, 0 without one
}

// layoutLegend fits the legend into as many columns of equal width as
// its widest entry allows, up to maxCols.
func (f *figure) layoutLegend() legendLayout {
	leg := plot.NewLegend()
	l := legendLayout{style: leg.TextStyle, thumbWidth: vg.Points(26)}
	l.style.Font.Size = vg.Points(legendFont)
	rowH := l.style.Rectangle("Xg").Max.Y + vg.Points(2) // gonum's entry height and padding
	if len(f.legend) == 0 {
		if len(f.notes) > 0 {
			l.height = vg.Length(len(f.notes))*rowH + vg.Points(8)
		}
		return l
	}
	widest := vg.Length(0)
	for _, e := range f.legend {
		widest = max(widest, l.style.Width(e.name))
	}
	colW := widest + l.thumbWidth + vg.Points(14)
	maxCols := f.maxCols
	if maxCols == 0 {
		maxCols = legendCols
	}
	usable := plotWidth - 2*vg.Points(legendMargin)
	l.cols = max(1, min(maxCols, len(f.legend), int(usable/colW)))
	l.rows = (len(f.legend) + l.cols - 1) / l.cols
	l.colSpan = usable / vg.Length(l.cols)
	l.height = vg.Length(l.rows+len(f.notes))*rowH + vg.Points(8)
	return l
}

// size is the image size of f: the data part and the legend below it.
func (f *figure) size() (w, h vg.Length) {
	return plotWidth, plotHeight + f.below()
}

// below is the height of what drawOn puts below the axes.
func (f *figure) below() vg.Length {
	if f.scale != nil {
		return scaleHeight
	}
	return f.layoutLegend().height
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
	f.finish()
	w, h := f.size()
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	if format == "png" {
		c = kernedCanvas{c}
	}
	f.drawOn(c)
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

// drawOn draws f on c, which must be f.size(): the axes on top, the
// y-axis title in a strip left of them, the legend below.
func (f *figure) drawOn(c vg.CanvasSizer) {
	lay, below := f.layoutLegend(), f.below()
	dc := draw.New(c)
	f.Plot.Legend = plot.NewLegend() // the axes draw no legend of their own
	// gonum/plot reserves room for a y-axis label at the arithmetic middle
	// of the axis range, which on a log axis lies near the top and left a
	// band of white above the data: the label is drawn here instead, in a
	// strip left of the axes, centred on the plot's height.
	ylab := f.Y.Label
	f.Y.Label.Text = ""
	strip := vg.Points(4) // gonum/plot sets tick labels flush with its canvas's edge
	if ylab.Text != "" {
		strip += ylab.TextStyle.Height(ylab.Text) + vg.Points(2)
		sty := ylab.TextStyle
		sty.Rotation = math.Pi / 2
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		dc.FillText(sty, vg.Point{X: strip / 2, Y: below + plotHeight/2}, ylab.Text)
	}
	f.Plot.Draw(draw.Crop(dc, strip, 0, below, -vg.Points(4)))
	f.Y.Label = ylab
	if f.scale != nil {
		f.scale.draw(dc)
		return
	}
	for k := 0; k < lay.cols; k++ {
		l := plot.NewLegend()
		l.TextStyle, l.ThumbnailWidth, l.Top, l.Left = lay.style, lay.thumbWidth, true, true
		l.Padding = vg.Points(2)
		room := lay.colSpan - lay.thumbWidth - vg.Points(10)
		for i := k * lay.rows; i < min((k+1)*lay.rows, len(f.legend)); i++ {
			l.Add(fitText(lay.style, f.legend[i].name, room), f.legend[i].thumbs...)
		}
		left := vg.Points(legendMargin) + vg.Length(k)*lay.colSpan
		right := -(plotWidth - vg.Points(legendMargin) - vg.Length(k+1)*lay.colSpan)
		l.Draw(draw.Crop(dc, left, right, 0, -(plotHeight + vg.Points(4))))
	}
	if len(f.notes) > 0 {
		l := plot.NewLegend()
		l.TextStyle, l.ThumbnailWidth, l.Top, l.Left = lay.style, lay.thumbWidth, true, true
		l.Padding = vg.Points(2)
		for _, n := range f.notes {
			l.Add(fitText(lay.style, n, plotWidth-2*vg.Points(legendMargin)-lay.thumbWidth-vg.Points(10)))
		}
		rowH := lay.style.Rectangle("Xg").Max.Y + vg.Points(2)
		top := plotHeight + vg.Points(4) + vg.Length(lay.rows)*rowH
		l.Draw(draw.Crop(dc, vg.Points(legendMargin), -vg.Points(legendMargin), 0, -top))
	}
}

// fitText shortens s with an ellipsis until it is at most w wide in sty:
// a name longer than a legend column would run into the next one or off
// the image.
func fitText(sty draw.TextStyle, s string, w vg.Length) string {
	if sty.Width(s) <= w {
		return s
	}
	r := []rune(s)
	for len(r) > 1 && sty.Width(string(r)+"…") > w {
		r = r[:len(r)-1]
	}
	return string(r) + "…"
}

// A kernedCanvas draws each string one character at a time, at the
// offsets gonum/plot's own text measure gives (glyph advances and kerning
// scaled to the font size). The PNG canvas leaves kerning to
// golang.org/x/image/font/opentype, whose Face.Kern returns the kerning
// at a fixed 32 pixels per em whatever the size (golang/go#46727): at the
// plots' 9 and 10 point fonts on 96 dpi, 2.4 to 2.7 times too much, so
// "WARPS" drew its W into its A and read as "W ARPS", and a string came
// out narrower than the box the layout had measured for it. A single
// character has no pair to kern.
type kernedCanvas struct{ vg.CanvasWriterTo }

// FillString implements vg.Canvas.
func (c kernedCanvas) FillString(f font.Face, pt vg.Point, s string) {
	for i, r := range s {
		ch := string(r)
		if r == ' ' {
			continue
		}
		x := f.Width(s[:i+len(ch)]) - f.Width(ch)
		c.CanvasWriterTo.FillString(f, vg.Point{X: pt.X + x, Y: pt.Y}, ch)
	}
}

// fmtPctSpread keeps two significant figures of a small percentage, so
// that a spread of 0.04% does not print as ±0.0%.
func fmtPctSpread(p float64) string {
	if p >= 1 {
		return fmt.Sprintf("%.1f", p)
	}
	return strconv.FormatFloat(p, 'g', 2, 64)
}
