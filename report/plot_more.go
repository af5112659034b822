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

// plotProbes shows cold, hot and graph medians per variant at one nkv,
// each variant through its best configuration by cold time. Points joined
// per variant rather than grouped bars: the colour then keeps meaning
// "variant" as in every other plot.
//
// The nkv is the largest one at which the most variants were measured:
// the largest of all may hold a single extra experiment's variants only,
// which would hide the comparison the plot is for.
func (rep *Report) plotProbes(g shapeGroup, col colours) (*plot.Plot, PlotFile, error) {
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
	pf := PlotFile{Kind: "probes", Title: fmt.Sprintf("%s, nkv=%d: cold vs hot vs graph (best SPLITS by cold)", g.label, nkv),
		Base: "probes_" + g.slug}
	var rows []*Row
	for _, r := range best {
		if r.NKV == nkv {
			rows = append(rows, r)
		}
	}
	if len(rows) == 0 {
		return nil, pf, nil
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Variant < rows[j].Variant })
	p := newPlot(pf.Title, "probe", yLabel)
	names := make([]string, len(probeOrder))
	for i, pr := range probeOrder {
		names[i] = string(pr)
	}
	p.NominalX(names...)
	p.Y.Min = 0
	top := 0.0
	for _, r := range rows {
		for _, st := range r.Probes {
			top = math.Max(top, us(st.MedianNS))
		}
	}
	p.Y.Max = top * 1.1
	for _, r := range rows {
		var xys plotter.XYs
		for i, pr := range probeOrder {
			if st := r.Probe(pr); st != nil {
				xys = append(xys, plotter.XY{X: float64(i), Y: us(st.MedianNS)})
			}
		}
		name := ConfigLabel(r.Config())
		if err := addSeries(p, name, col[r.Variant], xys, false); err != nil {
			return nil, pf, err
		}
		pf.Series = append(pf.Series, name)
	}
	p.X.Min, p.X.Max = -0.5, float64(len(probeOrder))-0.5
	return p, pf, nil
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
// variant × nkv, each cell the variant's best configuration there, with
// the value written in the cell.
func (rep *Report) plotSpeedup(g shapeGroup, _ colours) (*plot.Plot, PlotFile, error) {
	pf := PlotFile{Kind: "speedup", Title: fmt.Sprintf("%s: cold speedup vs landed (best SPLITS per variant)", g.label),
		Base: "speedup_" + g.slug}
	cells := map[string]map[int]float64{}
	var variants []string
	for _, r := range BestRows(g.rows, results.ProbeCold) {
		st := r.Probe(results.ProbeCold)
		if st.Speedup <= 0 {
			continue
		}
		if cells[r.Variant] == nil {
			cells[r.Variant] = map[int]float64{}
			variants = append(variants, r.Variant)
		}
		cells[r.Variant][r.NKV] = st.Speedup
	}
	if len(variants) == 0 {
		return nil, pf, nil
	}
	// Reverse-sorted so that the first name reads at the top.
	sort.Sort(sort.Reverse(sort.StringSlice(variants)))
	grid := speedGrid{}
	maxAbs := 0.0
	var labels plotter.XYLabels
	var zs []float64
	for ri, v := range variants {
		row := make([]float64, len(g.nkvs))
		for ci, n := range g.nkvs {
			s, ok := cells[v][n]
			row[ci] = math.NaN()
			if ok {
				row[ci] = math.Log2(s)
				maxAbs = math.Max(maxAbs, math.Abs(row[ci]))
				labels.XYs = append(labels.XYs, plotter.XY{X: float64(ci), Y: float64(ri)})
				labels.Labels = append(labels.Labels, fmt.Sprintf("%.2f×", s))
				zs = append(zs, row[ci])
			}
		}
		grid.z = append(grid.z, row)
	}
	if maxAbs == 0 {
		maxAbs = 1
	}
	pal, err := brewer.GetPalette(brewer.TypeDiverging, "RdBu", 11)
	if err != nil {
		return nil, pf, fmt.Errorf("plotting speedup: %w", err)
	}
	hm := plotter.NewHeatMap(grid, pal)
	hm.Min, hm.Max = -maxAbs, maxAbs
	hm.NaN = color.RGBA{230, 230, 230, 255}
	p := plot.New()
	p.Title.Text = pf.Title
	p.X.Label.Text = "context length nkv (tokens)"
	p.Y.Label.Text = "variant"
	p.Add(hm)
	lab, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, pf, fmt.Errorf("plotting speedup: %w", err)
	}
	for i := range lab.TextStyle {
		lab.TextStyle[i].XAlign = draw.XCenter
		lab.TextStyle[i].YAlign = draw.YCenter
		lab.TextStyle[i].Font.Size = vg.Points(11)
		// Dark cells at either end of the palette need light text.
		if math.Abs(zs[i]) > 0.6*maxAbs {
			lab.TextStyle[i].Color = color.White
		}
	}
	p.Add(lab)
	p.NominalY(variants...)
	names := make([]string, len(g.nkvs))
	for i, n := range g.nkvs {
		names[i] = fmt.Sprint(n)
	}
	p.NominalX(names...)
	p.X.Min, p.X.Max = -0.5, float64(len(g.nkvs))-0.5
	p.Y.Min, p.Y.Max = -0.5, float64(len(variants))-0.5
	pf.Series = append(pf.Series, variants...)
	return p, pf, nil
}
