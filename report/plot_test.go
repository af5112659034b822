package report

import (
	"encoding/xml"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/ktune/ktune/internal/results"
)

// allH200 is every committed results file, as `make report` reads them.
func allH200(t testing.TB) []results.Record {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(h200Dir, "*.jsonl"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no results under %s: %v", h200Dir, err)
	}
	var recs []results.Record
	for _, n := range names {
		recs = append(recs, loadH200(t, filepath.Base(n))...)
	}
	return recs
}

func writePlots(t *testing.T, recs []results.Record) (*Report, []PlotFile) {
	t.Helper()
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if d := os.Getenv("KTUNE_PLOT_DIR"); d != "" {
		dir = d // keep the images to look at them
	}
	plots, err := rep.Plots(dir)
	if err != nil {
		t.Fatal(err)
	}
	return rep, plots
}

// The splits experiment: rows, r4 and d2 over SPLITS 8..64 and eight
// context lengths, with all three probes.
func TestPlots(t *testing.T) {
	recs := loadH200(t, "splits.jsonl")
	rep, plots := writePlots(t, recs)
	checkPlots(t, rep, recs, plots)
}

// Every committed file at once: four shapes (one of them the fault
// fixtures), 29 variants, two PyTorch references.
func TestPlotsAllH200(t *testing.T) {
	t.Parallel()
	recs := allH200(t)
	rep, plots := writePlots(t, recs)
	checkPlots(t, rep, recs, plots)
}

// checkPlots decodes every file and checks what the records call for:
// the landed kernel and every reference drawn, at most maxSeries kernel
// series beside them, every shipped variant drawn (alone or within its
// family's series), no fixture and no record that failed a gate drawn, one set of
// file names per shape.
func checkPlots(t *testing.T, rep *Report, recs []results.Record, plots []PlotFile) {
	t.Helper()
	fixtures := results.FixtureSpecs(recs)
	// Variants that only ever failed, and variants of fixture specs only:
	// a name shared with a real measurement may be drawn for that one.
	failed, fixtureVariants, good := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, r := range recs {
		switch {
		case fixtures[r.Config.Spec]:
			fixtureVariants[r.Config.Variant] = true
		case r.Status != results.StatusOK || !r.GatesPass():
			failed[r.Config.Variant] = true
		default:
			good[r.Config.Variant] = true
		}
	}
	for v := range good {
		delete(failed, v)
		delete(fixtureVariants, v)
	}
	names := map[string]bool{}
	kinds := map[string]map[string]int{} // shape → kind → plots
	for _, pf := range plots {
		if kinds[pf.Shape] == nil {
			kinds[pf.Shape] = map[string]int{}
		}
		kinds[pf.Shape][pf.Kind]++
		if names[pf.Base] {
			t.Errorf("two plots write %s", pf.Base)
		}
		names[pf.Base] = true
		if len(pf.Series) == 0 {
			t.Errorf("%s: no series", pf.Base)
		}
		if len(pf.Files) != len(plotFormats) {
			t.Errorf("%s: files %q", pf.Base, pf.Files)
		}
		for _, name := range pf.Files {
			switch {
			case strings.HasSuffix(name, ".png"):
				checkPNG(t, name)
			case strings.HasSuffix(name, ".svg"):
				checkSVG(t, name, append([]string{strings.Split(pf.Title, "\n")[0]}, pf.Series...))
			default:
				t.Errorf("unexpected plot file %s", name)
			}
		}
		for _, s := range pf.Series {
			if fixtureVariants[s] || failed[s] {
				t.Errorf("%s draws %q, a fixture or a failed variant", pf.Base, s)
			}
		}
	}
	// A shape has a speedup plot exactly when it has a landed measurement
	// to be faster than.
	landed := map[string]bool{}
	for i := range rep.Rows {
		if r := &rep.Rows[i]; r.Landed && r.Status == results.StatusOK {
			landed[r.Label] = true
		}
	}
	for _, s := range rep.Ship {
		want := 0
		if landed[s.Shape] {
			want = 1
		}
		if kinds[s.Shape]["nkv"] != 1 || kinds[s.Shape]["speedup"] != want {
			t.Errorf("shape %s: plots %v, want one nkv and %d speedup plot", s.Shape, kinds[s.Shape], want)
		}
	}
	for shape := range kinds {
		for i := range rep.Rows {
			if r := &rep.Rows[i]; r.Label == shape && r.Fixture {
				t.Errorf("shape %s of fixtures has plots", shape)
				break
			}
		}
	}
	for _, pf := range plots {
		if pf.Kind != "nkv" {
			continue
		}
		got := "|" + strings.Join(pf.Series, "|") + "|"
		covered := "|" + strings.Join(pf.Covers, "|") + "|"
		kernels := 0
		for _, s := range pf.Series {
			if !strings.HasPrefix(s, "landed") && !strings.HasPrefix(s, readRateLabel) && !rep.isReferenceVariant(s) {
				kernels++
			}
		}
		shipped := map[string]bool{}
		for _, s := range rep.Ship {
			if s.Shape == pf.Shape {
				for _, rg := range s.Ranges {
					shipped[rg.Variant] = true
				}
			}
		}
		if kernels > maxSeries {
			t.Errorf("%s: %d kernel variants %q, more than %d", pf.Base, kernels, got, maxSeries)
		}
		for v := range shipped {
			if !strings.Contains(got, "|"+v+"|") && !strings.Contains(covered, "|"+v+"|") && !onlyLanded(rep, pf.Shape, v) {
				t.Errorf("%s: shipped variant %s not drawn: %q", pf.Base, v, got)
			}
		}
		for i := range rep.Rows {
			r := &rep.Rows[i]
			if r.Label == pf.Shape && r.Reference && r.Status == results.StatusOK && !strings.Contains(got, "|"+r.Variant+"|") {
				t.Errorf("%s: reference %s not drawn: %q", pf.Base, r.Variant, got)
			}
		}
		for _, s := range []string{"|landed", "|" + readRateLabel} {
			if s == "|landed" && !landed[pf.Shape] {
				continue
			}
			if !strings.Contains(got, s) {
				t.Errorf("%s series %q lack %q", pf.Base, got, s)
			}
		}
	}
}

// onlyLanded reports whether a variant ships only as the landed
// configuration, which the landed line draws.
func onlyLanded(rep *Report, shape, v string) bool {
	for _, s := range rep.Ship {
		if s.Shape != shape {
			continue
		}
		for _, rg := range s.Ranges {
			if rg.Variant == v && !rg.Landed {
				return false
			}
		}
	}
	return true
}

// Same-name shapes: sdpa.jsonl holds the "7b" shape at batch 1 and 16.
// Each has its own label, section and plot files.
func TestSameNameShapesApart(t *testing.T) {
	recs := loadH200(t, "sdpa.jsonl")
	rep, plots := writePlots(t, recs)
	labels := map[string]int{}
	for i := range rep.Rows {
		labels[rep.Rows[i].Label] += 0
		if want := fmt.Sprintf("7b-b%d", rep.Rows[i].Shape.Batch); rep.Rows[i].Label != want {
			t.Errorf("batch %d labelled %q, want %q", rep.Rows[i].Shape.Batch, rep.Rows[i].Label, want)
		}
	}
	if len(labels) != 2 || len(rep.sections()) != 2 {
		t.Errorf("labels %v, %d sections; want two of each", labels, len(rep.sections()))
	}
	files := map[string]bool{}
	for _, p := range plots {
		files[filepath.Base(p.Base)] = true
	}
	for _, f := range []string{"nkv_7b-b1", "nkv_7b-b16"} {
		if !files[f] {
			t.Errorf("no plot %s among %v", f, files)
		}
	}
}

// Labels that collide after the most used name are told apart by the
// fields that differ: here the capacity of two batch-1 "7b" shapes.
func TestShapeLabelsDisambiguate(t *testing.T) {
	s := results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768}
	b := s
	b.Capacity = 8192
	c := s
	c.Name, c.Batch = "7b-b16", 16
	recs := []results.Record{{Config: results.Config{Shape: s}}, {Config: results.Config{Shape: b}}, {Config: results.Config{Shape: c}}}
	got := shapeLabels(recs)
	want := map[string]string{shapeKey(s): "7b-cap32768", shapeKey(b): "7b-cap8192", shapeKey(c): "7b-b16"}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: label %q, want %q", k, got[k], w)
		}
	}
}

// No two series a plot can draw look alike, and every style differs in
// colour, marker or dash pattern from every other of its shape.
func TestSeriesStylesDistinct(t *testing.T) {
	t.Parallel()
	rep, err := Build(allH200(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range rep.shapeGroups() {
		st := g.styles()
		seen := map[string]string{}
		all := append(append([]string(nil), g.chosen...), g.refs...)
		for _, v := range all {
			s, ok := st[v]
			if !ok {
				t.Errorf("%s: %s has no style", g.label, v)
				continue
			}
			key := fmt.Sprintf("%v|%v|%v", s.colour, s.glyph, s.dashes)
			if other, dup := seen[key]; dup {
				t.Errorf("%s: %s and %s look alike", g.label, v, other)
			}
			seen[key] = v
		}
		// Markers alone are distinct too, the landed kernel's included:
		// two series with one marker in two colours read as one.
		marks := map[string]string{fmt.Sprint(landedStyle.glyph): "the landed kernel"}
		for _, v := range all {
			m := fmt.Sprint(st[v].glyph)
			if o, dup := marks[m]; dup {
				t.Errorf("%s: %s and %s share a marker", g.label, v, o)
			}
			marks[m] = v
		}
		// Colours alone are distinct too while there are no more kernel
		// variants than colours.
		if len(g.chosen) <= len(palette8) {
			cols := map[string]string{}
			for _, v := range g.chosen {
				c := fmt.Sprint(st[v].colour)
				if o, dup := cols[c]; dup {
					t.Errorf("%s: %s and %s share a colour", g.label, v, o)
				}
				cols[c] = v
			}
		}
	}
}

// Every measured value gets a tick, labels never overlap, and the last
// value is always labelled: the committed nkv and SPLITS axes, 32 beside
// 33 included.
func TestMeasuredTicks(t *testing.T) {
	sty := plot.New().X.Tick.Label
	for _, vals := range [][]int{
		{1, 29, 52, 128, 256, 512, 1641, 2048, 4096, 8192, 32768, 131072},
		{8, 16, 32, 33, 64},
		{2048, 8192, 32768, 131072},
	} {
		lo, hi := float64(vals[0])/1.4, float64(vals[len(vals)-1])*1.4
		ticks := measuredTicks{values: vals, axis: dataWidth}.Ticks(lo, hi)
		if len(ticks) != len(vals) {
			t.Fatalf("%v: %d ticks", vals, len(ticks))
		}
		if ticks[len(ticks)-1].Label == "" {
			t.Errorf("%v: the last value is unlabelled", vals)
		}
		pos := func(v float64) vg.Length {
			return vg.Length((math.Log(v) - math.Log(lo)) / (math.Log(hi) - math.Log(lo)) * dataWidth.Points())
		}
		lastRight := vg.Length(math.Inf(-1))
		for _, tk := range ticks {
			if tk.Label == "" {
				continue
			}
			half := sty.Width(tk.Label) / 2
			if pos(tk.Value)-half < lastRight {
				t.Errorf("%v: label %s overlaps the previous one", vals, tk.Label)
			}
			lastRight = pos(tk.Value) + half
		}
	}
}

// The form of each plot: time axes log, the SPLITS axis the measured
// values each labelled, error bars on the time plots, no line joining the
// probes' categories.
func TestPlotForms(t *testing.T) {
	rep, err := Build(loadH200(t, "splits.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	g := rep.shapeGroups()[0]
	sty := g.styles()
	f, _, err := rep.plotSplits(g, 32768, sty)
	if err != nil || f == nil {
		t.Fatalf("no SPLITS plot: %v", err)
	}
	var labels []string
	for _, tk := range f.X.Tick.Marker.Ticks(f.X.Min, f.X.Max) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	var want []string
	for _, r := range g.rows {
		if s := fmt.Sprint(r.Splits); r.NKV == 32768 && !r.Reference && slices.Contains(g.chosen, r.Variant) && !slices.Contains(want, s) {
			want = append(want, s)
		}
	}
	if len(labels) != len(want) || len(want) < 3 {
		t.Errorf("SPLITS axis labels %q, want one per measured SPLITS %q", labels, want)
	}
	if _, log := f.Y.Scale.(plot.LogScale); log != (f.dataHi/f.dataLo >= 10) {
		t.Errorf("SPLITS plot time axis %T over %g–%g µs: log only over a decade or more", f.Y.Scale, f.dataLo, f.dataHi)
	}
	if f.bars == 0 {
		t.Error("SPLITS plot has no error bars")
	}
	f, _, err = rep.plotNKV(g, sty)
	if err != nil || f == nil || f.bars == 0 {
		t.Errorf("nkv plot: %v, error bars %v", err, f != nil && f.bars > 0)
	}
	f, _, err = rep.plotProbes(g, sty)
	if err != nil || f == nil {
		t.Fatalf("no probes plot: %v", err)
	}
	if f.lines != 0 || f.bars == 0 {
		t.Errorf("probes plot: %d lines, %d error-bar sets; want points with bars, no lines", f.lines, f.bars)
	}
}

// Records with nothing to draw (fixtures, failures) give no plot file.
func TestNoEmptyPlots(t *testing.T) {
	_, plots := writePlots(t, loadH200(t, "faults.jsonl"))
	if len(plots) != 0 {
		t.Errorf("fault fixtures drew %d plots: %v", len(plots), plots[0].Base)
	}
}

func checkPNG(t *testing.T, name string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	// The axes are 18 × 11 cm (680 × 416 px at 96 dpi); the legend sits
	// below them and never widens the image.
	if b := img.Bounds(); b.Dx() < 670 || b.Dx() > 690 || b.Dy() < 400 || b.Dy() > 700 {
		t.Errorf("%s: %v is not the size of a readable plot", name, b)
	}
}

// checkSVG parses the SVG and checks that every text wanted appears in
// its text elements (titles, legend entries, heatmap row names).
func checkSVG(t *testing.T, name string, want []string) {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	dec := xml.NewDecoder(f)
	inText := false
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() == "EOF" {
				break
			}
			t.Fatalf("%s: %v", name, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			inText = tok.Name.Local == "text"
		case xml.EndElement:
			inText = false
		case xml.CharData:
			if inText {
				texts = append(texts, string(tok))
			}
		}
	}
	all := strings.Join(texts, "\n")
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("%s: no text %q", name, w)
		}
	}
}

// A log time axis gets at least three labels however short its range:
// steps of 1, 2 or 5 × 10^k inside a factor of two (1850 to 1880 µs).
func TestLogTicksLabelShortRanges(t *testing.T) {
	for _, c := range []struct {
		lo, hi float64
		min    int
	}{{100, 600, 3}, {22, 75, 4}, {5, 2800, 4}, {1850, 1880, 3}, {0.9, 1.1, 3}, {9, 1400, 5}} {
		n := 0
		for _, tk := range (logTicks{axis: dataHeight, vertical: true}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				n++
			}
			if tk.Value < c.lo || tk.Value > c.hi {
				t.Errorf("[%g, %g]: tick %g outside the range", c.lo, c.hi, tk.Value)
			}
		}
		if n < c.min {
			t.Errorf("[%g, %g]: %d labels, want at least %d", c.lo, c.hi, n, c.min)
		}
	}
}
