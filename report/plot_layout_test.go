package report

import (
	"context"
	"fmt"
	"image"
	"image/color"
	"io"
	"math"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// An affine maps (x, y) to (a·x + b·y + c, d·x + e·y + f).
type affine struct{ a, b, c, d, e, f float64 }

func (m affine) apply(p vg.Point) vg.Point {
	x, y := float64(p.X), float64(p.Y)
	return vg.Point{X: vg.Length(m.a*x + m.b*y + m.c), Y: vg.Length(m.d*x + m.e*y + m.f)}
}

// then returns m applied after n: the canvas's transforms act on the
// coordinates given after them, as gonum's canvases do.
func (m affine) then(n affine) affine {
	return affine{
		a: m.a*n.a + m.b*n.d, b: m.a*n.b + m.b*n.e, c: m.a*n.c + m.b*n.f + m.c,
		d: m.d*n.a + m.e*n.d, e: m.d*n.b + m.e*n.e, f: m.d*n.c + m.e*n.f + m.f,
	}
}

// A textBox is where one string lands on the image.
type textBox struct {
	text string
	r    vg.Rectangle
}

// A textRecorder is a vg.Canvas that draws nothing and records the box
// of every string gonum/plot lays out: from the baseline's start, the
// string's measured width, its font's descent below and ascent above,
// through the transforms in force.
type textRecorder struct {
	w, h  vg.Length
	m     affine
	stack []affine
	boxes []textBox
}

func newTextRecorder(w, h vg.Length) *textRecorder {
	return &textRecorder{w: w, h: h, m: affine{a: 1, e: 1}}
}

func (r *textRecorder) Size() (vg.Length, vg.Length)        { return r.w, r.h }
func (r *textRecorder) SetLineWidth(vg.Length)              {}
func (r *textRecorder) SetLineDash([]vg.Length, vg.Length)  {}
func (r *textRecorder) SetColor(color.Color)                {}
func (r *textRecorder) Stroke(vg.Path)                      {}
func (r *textRecorder) Fill(vg.Path)                        {}
func (r *textRecorder) DrawImage(vg.Rectangle, image.Image) {}
func (r *textRecorder) Push()                               { r.stack = append(r.stack, r.m) }
func (r *textRecorder) Pop() {
	r.m = r.stack[len(r.stack)-1]
	r.stack = r.stack[:len(r.stack)-1]
}
func (r *textRecorder) Rotate(rad float64) {
	s, c := math.Sincos(rad)
	r.m = r.m.then(affine{a: c, b: -s, d: s, e: c})
}
func (r *textRecorder) Translate(p vg.Point) {
	r.m = r.m.then(affine{a: 1, e: 1, c: float64(p.X), f: float64(p.Y)})
}
func (r *textRecorder) Scale(x, y float64) { r.m = r.m.then(affine{a: x, e: y}) }

func (r *textRecorder) FillString(f font.Face, pt vg.Point, s string) {
	ext := f.Extents()
	lo := vg.Point{X: pt.X, Y: pt.Y - vg.Length(math.Abs(float64(ext.Descent)))}
	hi := vg.Point{X: pt.X + f.Width(s), Y: pt.Y + ext.Ascent}
	var box vg.Rectangle
	for i, c := range []vg.Point{lo, {X: hi.X, Y: lo.Y}, hi, {X: lo.X, Y: hi.Y}} {
		q := r.m.apply(c)
		if i == 0 {
			box = vg.Rectangle{Min: q, Max: q}
			continue
		}
		box.Min.X, box.Min.Y = min(box.Min.X, q.X), min(box.Min.Y, q.Y)
		box.Max.X, box.Max.Y = max(box.Max.X, q.X), max(box.Max.Y, q.Y)
	}
	r.boxes = append(r.boxes, textBox{s, box})
}

// overlap is how far two boxes overlap in each direction (≤ 0: apart).
func overlap(a, b vg.Rectangle) (x, y vg.Length) {
	return min(a.Max.X, b.Max.X) - max(a.Min.X, b.Min.X), min(a.Max.Y, b.Max.Y) - max(a.Min.Y, b.Min.Y)
}

// layoutTolerance is how far two text boxes may overlap: a box spans the
// font's whole ascent and descent, which for two lines of one title
// exceeds the line spacing by a tenth of the size.
const layoutTolerance = vg.Length(1.5)

// Every plot of the committed results, laid out as drawOn lays it out:
// no text overlaps another (tick labels, axis titles, legend entries,
// heatmap cells), every text lies inside the image, the legend lies
// below the axes, each log axis has at least three labelled ticks within
// its range, and every series of a plot has a marker of its own.
func TestPlotLayout(t *testing.T) {
	t.Parallel()
	rep, err := Build(allH200(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	figs, err := rep.figures(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(figs) < 100 {
		t.Fatalf("%d plots, want the committed results' hundred or more", len(figs))
	}
	heatmaps := 0
	for _, fg := range figs {
		checkLayout(t, fg.file.Base, fg.fig)
		checkErrorBars(t, fg.file.Base, fg.fig)
		checkChoosing(t, fg.file, fg.fig)
		if strings.HasPrefix(fg.file.Kind, "speedup") {
			heatmaps++
			if sc := fg.fig.scale; sc == nil || len(sc.labels) != len(sc.colours) || len(sc.colours) < 3 || sc.noneLabel == "" {
				t.Errorf("%s: heatmap without a colour scale and a no-data key: %+v", fg.file.Base, sc)
			}
		}
	}
	if heatmaps == 0 {
		t.Error("no heatmap among the committed results' plots")
	}
}

// checkChoosing holds the rules that make a plot one to choose by
// (plot_rules.go): at most maxSeries kernel series, each the best of a
// family before a second of one; a log time axis only over a decade or
// more, with labelled ticks where the data sits; a landed line that says
// which configuration it is, or "no baseline" in the title; and a ratio
// colour scale centred on 1, clipped symmetrically, the clip stated.
func checkChoosing(t *testing.T, pf PlotFile, f *figure) {
	t.Helper()
	kernels, landed := 0, false
	for _, e := range f.legend {
		switch {
		case strings.HasPrefix(e.name, "landed"):
			landed = true
			if !strings.HasPrefix(e.name, "landed: ") || strings.Contains(e.name, "best config") || len(e.name) < len("landed: x SPLITS=1") {
				t.Errorf("%s: landed line %q does not say which configuration it is", pf.Base, e.name)
			}
		case strings.HasSuffix(e.name, "(reference)"), strings.HasPrefix(e.name, readRateLabel):
		default:
			kernels++
		}
	}
	if kernels > maxSeries {
		t.Errorf("%s: %d kernel series in one panel, want at most %d", pf.Base, kernels, maxSeries)
	}
	switch pf.Kind {
	case "nkv", "splits", "probes":
		if landed == strings.Contains(pf.Title, "no baseline") {
			t.Errorf("%s: landed line drawn %v, title %q: a plot without one says \"no baseline\"", pf.Base, landed, pf.Title)
		}
		if f.dataLo <= 0 || f.dataHi < f.dataLo {
			t.Errorf("%s: a time plot whose axis was not set by timeAxis", pf.Base)
			return
		}
		_, logY := f.Y.Scale.(plot.LogScale)
		if logY != (f.dataHi/f.dataLo >= 10) {
			t.Errorf("%s: log axis %v over data %g–%g µs: log only where the values span a decade", pf.Base, logY, f.dataLo, f.dataHi)
		}
		in := 0
		for _, tk := range f.Y.Tick.Marker.Ticks(f.Y.Min, f.Y.Max) {
			if tk.Label != "" && tk.Value >= f.dataLo && tk.Value <= f.dataHi {
				in++
			}
		}
		if in < 2 {
			t.Errorf("%s: %d labelled ticks within the data's %g–%g µs, want 2 or more", pf.Base, in, f.dataLo, f.dataHi)
		}
	case "speedup", "speedup-ref":
		sc := f.scale
		if sc == nil || sc.lo <= 0 || math.Abs(sc.lo*sc.hi-1) > 1e-9 || sc.hi <= 1 || !strings.Contains(sc.title, "clipped at") {
			t.Errorf("%s: colour scale not centred on 1 and clipped symmetrically with the clip stated: %+v", pf.Base, sc)
		}
	}
}

// checkErrorBars: a plot with error bars says in its legend what they
// are or that none is drawn, and every bar it keeps reaches past its
// marker on the smallest data area.
func checkErrorBars(t *testing.T, name string, f *figure) {
	t.Helper()
	if f.bars == 0 {
		return
	}
	noted := false
	for _, n := range f.notes {
		noted = noted || strings.Contains(n, "error bars")
	}
	if !noted {
		t.Errorf("%s: error bars and no note on them: %q", name, f.notes)
	}
	_, logY := f.Y.Scale.(plot.LogScale)
	for _, eb := range f.errBars {
		for i, xy := range eb.XYs {
			e := eb.YErrors[i]
			lo, hi := math.Max(xy.Y-e.Low, f.Y.Min), xy.Y+e.High
			frac := (hi - lo) / (f.Y.Max - f.Y.Min)
			if logY {
				frac = math.Log(hi/lo) / math.Log(f.Y.Max/f.Y.Min)
			}
			if vg.Length(frac)*dataHeight <= markerRadius*1.2 {
				t.Errorf("%s: an error bar of %.2g pt at y=%g, hidden by its marker", name, frac*float64(dataHeight), xy.Y)
			}
		}
	}
}

func checkLayout(t *testing.T, name string, f *figure) {
	t.Helper()
	w, h := f.size()
	rec := newTextRecorder(w, h)
	f.drawOn(rec)
	if len(rec.boxes) == 0 {
		t.Errorf("%s: no text drawn", name)
	}
	for i, a := range rec.boxes {
		if a.r.Min.X < 1 || a.r.Min.Y < 1 || a.r.Max.X > w-1 || a.r.Max.Y > h-1 {
			t.Errorf("%s: %q at %v runs to the edge of the %v × %v image", name, a.text, a.r, w, h)
		}
		for _, b := range rec.boxes[i+1:] {
			if x, y := overlap(a.r, b.r); x > layoutTolerance && y > layoutTolerance {
				t.Errorf("%s: %q and %q overlap by %.1f × %.1f pt", name, a.text, b.text, x, y)
			}
		}
	}
	below := f.below()
	legend := map[string]bool{}
	for _, e := range f.legend {
		legend[e.name] = true
	}
	for _, b := range rec.boxes {
		if legend[b.text] && b.r.Max.Y > below+0.5 {
			t.Errorf("%s: legend entry %q reaches into the axes (top %.1f pt, legend %.1f pt high)", name, b.text, b.r.Max.Y, below)
		}
	}
	for _, ax := range []struct {
		name string
		a    *plot.Axis
	}{{"x", &f.X}, {"y", &f.Y}} {
		if _, ok := ax.a.Scale.(plot.LogScale); !ok {
			continue
		}
		n := 0
		for _, tk := range ax.a.Tick.Marker.Ticks(ax.a.Min, ax.a.Max) {
			if tk.Label != "" && tk.Value >= ax.a.Min && tk.Value <= ax.a.Max {
				n++
			}
		}
		if n < 3 {
			t.Errorf("%s: log %s axis [%g, %g] has %d labelled ticks, want 3 or more", name, ax.name, ax.a.Min, ax.a.Max, n)
		}
	}
}

// The kerned PNG canvas puts each character where gonum/plot's measure
// says, so a drawn string is as wide as the box the layout reserved: the
// x/image face kerns "WA" at 32 pixels per em whatever the size, which
// at 9 points drew it about 2 px narrower than measured.
func TestKernedCanvasFollowsMeasure(t *testing.T) {
	sty := plot.NewLegend().TextStyle
	sty.Font.Size = vg.Points(9)
	face := sty.Handler.Cache().Lookup(sty.Font, sty.Font.Size)
	var got []string
	rec := &charRecorder{textRecorder: newTextRecorder(100, 100), at: &got}
	kernedCanvas{rec}.FillString(face, vg.Point{X: 10, Y: 10}, "WARPS")
	want := []string{"W@10.00", fmt.Sprintf("A@%.2f", 10+face.Width("WA")-face.Width("A")),
		fmt.Sprintf("R@%.2f", 10+face.Width("WAR")-face.Width("R"))}
	if len(got) != 5 || strings.Join(got[:3], " ") != strings.Join(want, " ") {
		t.Errorf("characters at %v, want %v …", got, want)
	}
	if k := face.Width("WA") - face.Width("W") - face.Width("A"); k >= 0 {
		t.Errorf("Liberation Serif kerns WA by %.2f pt, want a negative pair: the test lost its subject", k)
	}
}

// A charRecorder records where each FillString call starts.
type charRecorder struct {
	*textRecorder
	at *[]string
}

func (c *charRecorder) WriteTo(io.Writer) (int64, error) {
	return 0, nil
}

func (c *charRecorder) FillString(f font.Face, pt vg.Point, s string) {
	*c.at = append(*c.at, fmt.Sprintf("%s@%.2f", s, pt.X))
}
