package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/palette/brewer"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/ktune/ktune/internal/results"
)

// plotSplits is cold time against SPLITS at one nkv, the y axis log
// where the times span a decade (timeAxis), the x axis
// the measured SPLITS evenly spaced, each labelled (on a log axis 33 sat
// beside 32 with no room for its label), one line per drawn variant
// through its best configuration at each SPLITS, with the landed kernel
// and the references as horizontal lines. It is drawn only where some variant was
// measured at two SPLITS or more: otherwise it says nothing about SPLITS.
func (rep *Report) plotSplits(g *shapeGroup, nkv int, sty styles) (*figure, PlotFile, error) {
	pf := PlotFile{Kind: "splits", Base: fmt.Sprintf("splits_%s_nkv%d", g.slug, nkv)}
	best := map[string]map[int]*Row{} // variant → SPLITS → row
	refs := map[string]*Row{}
	splitsSeen := map[int]bool{}
	chosen, measured := map[string]bool{}, map[string]bool{}
	for _, v := range g.chosen {
		chosen[v] = true
	}
	for i := range g.rows {
		r := &g.rows[i]
		st := r.Probe(results.ProbeCold)
		if r.NKV != nkv || st == nil {
			continue
		}
		if r.Reference || r.Splits < 1 {
			if b := refs[r.Variant]; b == nil || st.MedianNS < b.Probe(results.ProbeCold).MedianNS {
				refs[r.Variant] = r
			}
			continue
		}
		measured[r.Variant] = true
		if !chosen[r.Variant] {
			continue
		}
		if best[r.Variant] == nil {
			best[r.Variant] = map[int]*Row{}
		}
		if b := best[r.Variant][r.Splits]; b == nil || st.MedianNS < b.Probe(results.ProbeCold).MedianNS {
			best[r.Variant][r.Splits] = r
		}
		splitsSeen[r.Splits] = true
	}
	multi := false
	var drawn []string
	for _, v := range g.chosen {
		if len(best[v]) > 0 {
			drawn = append(drawn, v)
		}
		multi = multi || len(best[v]) > 1
	}
	if !multi {
		return nil, pf, nil
	}
	var splits []int
	for s := range splitsSeen {
		splits = append(splits, s)
	}
	sort.Ints(splits)
	pf.Title = fmt.Sprintf("%s, nkv=%d: cold time vs SPLITS", g.label, nkv) + subtitle(len(drawn), len(measured))
	if landedRows(g)[nkv] == nil {
		pf.Title += noBaseline(g)
	}
	f := newFigure(pf.Title, "SPLITS (the measured values, evenly spaced)", "partial+combine time (µs, log scale)")
	column := map[int]float64{}
	names := make([]string, len(splits))
	for i, s := range splits {
		column[s], names[i] = float64(i), fmt.Sprint(s)
	}
	f.NominalX(names...)
	lo, hi := math.Inf(1), 0.0
	for _, v := range drawn {
		var xys plotter.XYs
		var bars plotter.YErrors
		for _, s := range splits {
			if r := best[v][s]; r != nil {
				st := r.Probe(results.ProbeCold)
				xys = append(xys, plotter.XY{X: column[s], Y: us(st.MedianNS)})
				bars = append(bars, iqrOf(st)...)
				lo, hi = math.Min(lo, us(st.Q1NS)), math.Max(hi, us(st.Q3NS))
			}
		}
		if err := f.addSeries(v, sty[v], xys, bars, true); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, v)
	}
	xlo, xhi := -0.5, float64(len(splits))-0.5
	if r := landedRows(g)[nkv]; r != nil {
		y := us(r.Probe(results.ProbeCold).MedianNS)
		name := landedNameAt(g, r)
		if err := f.addRef(name, landedStyle, plotter.XYs{{X: xlo, Y: y}, {X: xhi, Y: y}}); err != nil {
			return nil, pf, err
		}
		lo, hi = math.Min(lo, y), math.Max(hi, y)
		pf.Series = append(pf.Series, name)
	}
	var refNames []string
	for v := range refs {
		refNames = append(refNames, v)
	}
	sort.Strings(refNames)
	for _, v := range refNames {
		y := us(refs[v].Probe(results.ProbeCold).MedianNS)
		if err := f.addRef(v+" (reference)", sty[v], plotter.XYs{{X: xlo, Y: y}, {X: xhi, Y: y}}); err != nil {
			return nil, pf, err
		}
		lo, hi = math.Min(lo, y), math.Max(hi, y)
		pf.Series = append(pf.Series, v)
	}
	f.X.Min, f.X.Max = xlo, xhi
	f.timeAxis(lo, hi, "partial+combine time")
	return f, pf, nil
}

// plotProbes shows the cold, hot and graph medians of each drawn variant
// and reference at one nkv, each through its best configuration by cold
// time: points with interquartile error bars, side by side within each
// probe, never joined by lines (the probes are categories, not a scale).
// The y axis is log: the variants differ by up to 20× at one nkv.
//
// The nkv is the largest one at which the most variants were measured:
// the largest of all may hold a single extra experiment's variants only,
// which would hide the comparison the plot is for.
func (rep *Report) plotProbes(g *shapeGroup, sty styles) (*figure, PlotFile, error) {
	best := BestRows(g.rows, results.ProbeCold)
	count := map[int]int{}
	for _, r := range best {
		count[r.NKV]++
	}
	nkv := g.nkvs[len(g.nkvs)-1]
	for _, n := range g.nkvs {
		if count[n] >= count[nkv] {
			nkv = n
		}
	}
	pf := PlotFile{Kind: "probes", Base: "probes_" + g.slug}
	drawSet := map[string]bool{}
	for _, v := range append(append([]string(nil), g.chosen...), g.refs...) {
		drawSet[v] = true
	}
	var rows []*Row
	for _, r := range best {
		if r.NKV == nkv && drawSet[r.Variant] && !r.Landed && len(r.Probes) > 1 {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, pf, nil
	}
	sort.SliceStable(rows, func(i, j int) bool {
		if rows[i].Reference != rows[j].Reference {
			return !rows[i].Reference
		}
		return rows[i].Variant < rows[j].Variant
	})
	// The landed kernel is drawn whether or not it is its variant's best.
	if l := landedRows(g)[nkv]; l != nil && len(l.Probes) > 1 {
		rows = append([]*Row{l}, rows...)
	}
	pf.Title = fmt.Sprintf("%s, nkv=%d: time per probe (best configuration by cold)", g.label, nkv)
	if landedRows(g)[nkv] == nil || len(landedRows(g)[nkv].Probes) < 2 {
		pf.Title += noBaseline(g)
	}
	f := newFigure(pf.Title, "probe", "partial+combine time (µs, log scale)")
	// Only the probes some drawn row measured: an empty category reads
	// as a missing measurement of every kernel.
	var probes []results.Probe
	for _, pr := range probeOrder {
		for _, r := range rows {
			if r.Probe(pr) != nil {
				probes = append(probes, pr)
				break
			}
		}
	}
	names := make([]string, len(probes))
	for i, pr := range probes {
		names[i] = string(pr)
	}
	f.NominalX(names...)
	lo, hi := math.Inf(1), 0.0
	width := 0.7 // of each category
	for k, r := range rows {
		off := (float64(k)+0.5)/float64(len(rows))*width - width/2
		var xys plotter.XYs
		var bars plotter.YErrors
		for i, pr := range probes {
			if st := r.Probe(pr); st != nil {
				xys = append(xys, plotter.XY{X: float64(i) + off, Y: us(st.MedianNS)})
				bars = append(bars, iqrOf(st)...)
				lo, hi = math.Min(lo, us(st.Q1NS)), math.Max(hi, us(st.Q3NS))
			}
		}
		// The variant and its SPLITS: every define would run past a
		// legend column; report.md's tables hold them.
		name := fmt.Sprintf("%s SPLITS=%d", r.Variant, r.Splits)
		st := sty[r.Variant]
		if r.Landed {
			name, st = landedNameAt(g, r), landedStyle
		} else if r.Reference {
			name = r.Variant + " (reference)"
		}
		if err := f.addSeries(name, st, xys, bars, false); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, name)
	}
	f.X.Min, f.X.Max = -0.5, float64(len(probes))-0.5
	f.timeAxis(lo, hi, "partial+combine time")
	return f, pf, nil
}

// speedGrid is the heatmap's grid: columns are nkv, rows variants, the
// value log2(speedup) so that 2× faster and 2× slower sit equally far from
// the neutral colour.
type speedGrid struct {
	z [][]float64 // [row][col]
}

func (s speedGrid) Dims() (c, r int)   { return len(s.z[0]), len(s.z) }
func (s speedGrid) Z(c, r int) float64 { return s.z[r][c] }
func (s speedGrid) X(c int) float64    { return float64(c) }
func (s speedGrid) Y(r int) float64    { return float64(r) }

// plotSpeedup is the cold speedup over the landed kernel as a heatmap,
// variant × nkv, for the drawn variants and the references, each cell the
// variant's best configuration there, with the value written in the cell.
func (rep *Report) plotSpeedup(g *shapeGroup, sty styles) (*figure, PlotFile, error) {
	return rep.plotRatio(g, false)
}

// plotSpeedupRef is the same against the fastest reference measured at
// each nkv (cuDNN, FlashInfer…): where every candidate is 4–7× the landed
// kernel, the contest that decides is the one with the reference, and its
// 5–15% differences need a scale of their own.
func (rep *Report) plotSpeedupRef(g *shapeGroup, sty styles) (*figure, PlotFile, error) {
	if len(g.refs) == 0 {
		return nil, PlotFile{}, nil
	}
	return rep.plotRatio(g, true)
}

// Clips of the ratio heatmaps' colours, symmetric about 1 in log space: a
// scale stretched to the largest ratio (7× over landed at batch 16) left
// every difference that matters in one colour.
const (
	clipLanded    = 2.0 // 0.5× … 2×
	clipReference = 1.5 // 0.67× … 1.5×
)

func (rep *Report) plotRatio(g *shapeGroup, vsRef bool) (*figure, PlotFile, error) {
	pf := PlotFile{Kind: "speedup", Base: "speedup_" + g.slug}
	against, clip := "landed", clipLanded
	if vsRef {
		pf.Kind, pf.Base, against, clip = "speedup-ref", "speedup-ref_"+g.slug, "the fastest reference", clipReference
	}
	drawSet := map[string]bool{}
	for _, v := range g.chosen {
		drawSet[v] = true
	}
	if !vsRef {
		for _, v := range g.refs {
			drawSet[v] = true
		}
	}
	best := BestRows(g.rows, results.ProbeCold)
	refAt := map[int]float64{}
	for _, r := range best {
		if m := r.Probe(results.ProbeCold).MedianNS; r.Reference && (refAt[r.NKV] == 0 || m < refAt[r.NKV]) {
			refAt[r.NKV] = m
		}
	}
	cells := map[string]map[int]float64{}
	var variants []string
	for _, r := range best {
		st := r.Probe(results.ProbeCold)
		s := st.Speedup
		if vsRef {
			s = 0
			if refAt[r.NKV] > 0 && st.MedianNS > 0 {
				s = refAt[r.NKV] / st.MedianNS
			}
		}
		if s <= 0 || !drawSet[r.Variant] {
			continue
		}
		if cells[r.Variant] == nil {
			cells[r.Variant] = map[int]float64{}
			variants = append(variants, r.Variant)
		}
		cells[r.Variant][r.NKV] = s
	}
	if len(variants) == 0 {
		return nil, pf, nil
	}
	pf.Title = fmt.Sprintf("%s: cold speedup vs %s (best configuration per variant)", g.label, against) + subtitle(len(variants)-len(g.refs), g.variants)
	if vsRef {
		pf.Title = fmt.Sprintf("%s: cold speedup vs %s (best configuration per variant)", g.label, against) + subtitle(len(variants), g.variants)
	}
	// Reverse-sorted so that the first name reads at the top.
	sort.Sort(sort.Reverse(sort.StringSlice(variants)))
	var cols []int
	for _, n := range g.nkvs {
		for _, v := range variants {
			if _, ok := cells[v][n]; ok {
				cols = append(cols, n)
				break
			}
		}
	}
	grid := speedGrid{}
	maxAbs := math.Log2(clip)
	var labels plotter.XYLabels
	var zs []float64
	for ri, v := range variants {
		row := make([]float64, len(cols))
		for ci, n := range cols {
			s, ok := cells[v][n]
			row[ci] = math.NaN()
			if ok {
				row[ci] = math.Max(-maxAbs, math.Min(maxAbs, math.Log2(s)))
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(ci), Y: float64(ri)})
				labels.Labels = append(labels.Labels, fmt.Sprintf("%s×", fmtX(s)))
				zs = append(zs, row[ci])
			}
		}
		grid.z = append(grid.z, row)
	}
	pal, err := brewer.GetPalette(brewer.TypeDiverging, "RdBu", 11)
	if err != nil {
		return nil, pf, fmt.Errorf("plotting speedup: %w", err)
	}
	hm := plotter.NewHeatMap(grid, pal)
	hm.Min, hm.Max = -maxAbs, maxAbs
	hm.NaN = color.RGBA{230, 230, 230, 255}
	f := newFigure(pf.Title, "context length nkv (tokens)", "")
	f.Plot = plot.New()
	f.Title.Text = pf.Title
	f.X.Label.Text = "context length nkv (tokens)"
	f.Add(hm)
	lab, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, pf, fmt.Errorf("plotting speedup: %w", err)
	}
	size := vg.Points(10)
	if len(cols) > 9 {
		size = vg.Points(8)
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i].XAlign = draw.XCenter
		lab.TextStyle[i].YAlign = draw.YCenter
		lab.TextStyle[i].Font.Size = size
		// Dark cells at either end of the palette need light text.
		if math.Abs(zs[i]) > 0.6*maxAbs {
			lab.TextStyle[i].Color = color.White
		}
	}
	f.Add(lab)
	rowNames := make([]string, len(variants))
	for i, v := range variants {
		rowNames[i] = v
		if rep.isReferenceVariant(v) {
			rowNames[i] = v + " (ref)"
		}
	}
	f.NominalY(rowNames...)
	names := make([]string, len(cols))
	for i, n := range cols {
		names[i] = fmt.Sprint(n)
	}
	f.NominalX(names...)
	f.X.Min, f.X.Max = -0.5, float64(len(cols))-0.5
	f.Y.Min, f.Y.Max = -0.5, float64(len(variants))-0.5
	pf.Series = append(pf.Series, variants...)
	speedupScale(f, pal.Colors(), clip, against, hm.NaN)
	return f, pf, nil
}

// speedupScale gives the heatmap its colour scale: one box per palette
// colour, labelled with the speedup at the middle of the colour's band
// (the heatmap maps log2(speedup), clipped to ±log2(clip), evenly onto
// the colours), and the colour of a cell with no data.
func speedupScale(f *figure, cols []color.Color, clip float64, against string, none color.Color) {
	sc := &colourScale{title: fmt.Sprintf("cell colour: cold speedup vs %s (log scale, centred on 1×, clipped at %s× and %s×; cells give the value)",
		against, fmtX(1/clip), fmtX(clip)), colours: cols,
		none: none, noneLabel: "no data (variant or " + against + " not measured at that nkv)", lo: 1 / clip, hi: clip}
	maxAbs := math.Log2(clip)
	step := 2 * maxAbs / float64(len(cols)-1)
	for i := range cols {
		sc.labels = append(sc.labels, fmt.Sprintf("%s×", fmtX(math.Exp2(-maxAbs+float64(i)*step))))
	}
	f.scale = sc
}

func (rep *Report) isReferenceVariant(v string) bool {
	for i := range rep.Rows {
		if rep.Rows[i].Variant == v {
			return rep.Rows[i].Reference
		}
	}
	return false
}
