package report

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plotWorkload is the workload's bar chart for one shape: the expected
// attention time of one decode step under each candidate, fastest at the
// top, with its 95% bootstrap interval; the recommended dispatch, the
// landed kernel and the references in their own colours.
func (rep *Report) plotWorkload(ws *WorkloadShape) (*figure, PlotFile, error) {
	pf := PlotFile{Kind: "workload", Device: ws.Device, Shape: ws.Shape, Base: "workload_" + slugify(ws.Shape)}
	if rep.Devices > 1 {
		pf.Base = "workload_" + slugify(ws.Device) + "_" + slugify(ws.Shape)
	}
	if len(ws.Candidates) == 0 {
		return nil, pf, nil
	}
	pf.Title = fmt.Sprintf("%s under workload %s: expected attention time per decode step\n(batch %d, %.0f%% of the steps; bars: 95%% bootstrap interval)",
		ws.Shape, rep.Workload.Name, ws.Batch, ws.Share*100)
	f := newFigure(pf.Title, "expected partial+combine time per step (µs)", "")
	n := len(ws.Candidates)
	names := make([]string, n)
	hi := 0.0
	var ebs errXPoints
	for i, c := range ws.Candidates {
		y := float64(n - 1 - i) // fastest at the top
		names[n-1-i] = c.Name
		bc, err := plotter.NewBarChart(plotter.Values{us(c.Time.Center)}, vg.Points(14))
		if err != nil {
			return nil, pf, fmt.Errorf("plotting workload: %w", err)
		}
		bc.Horizontal, bc.XMin = true, y
		bc.Color, bc.LineStyle.Width = workloadColour(c.Kind), 0
		f.Add(bc)
		ebs.XYs = append(ebs.XYs, plotter.XY{X: us(c.Time.Center), Y: y})
		ebs.XErrors = append(ebs.XErrors, struct{ Low, High float64 }{us(c.Time.Center - c.Time.Lo), us(c.Time.Hi - c.Time.Center)})
		hi = max(hi, us(c.Time.Hi))
		pf.Series = append(pf.Series, c.Name)
	}
	eb, err := plotter.NewXErrorBars(ebs)
	if err != nil {
		return nil, pf, fmt.Errorf("plotting workload: %w", err)
	}
	eb.Color, eb.Width, eb.CapWidth = black, vg.Points(1), vg.Points(6)
	f.Add(eb)
	f.NominalY(names...)
	f.X.Scale, f.X.Tick.Marker = plot.LinearScale{}, linearTicks{}
	f.X.Min, f.X.Max = 0, hi*1.08
	f.Y.Min, f.Y.Max = -0.6, float64(n)-0.4
	f.notes = append(f.notes, "dark blue: the recommended dispatch; black: landed; red: references; grey: each variant at its best configuration per nkv")
	return f, pf, nil
}

type errXPoints struct {
	plotter.XYs
	plotter.XErrors
}

func workloadColour(kind string) color.Color {
	switch kind {
	case "dispatch":
		return color.RGBA{0, 70, 140, 255}
	case "landed":
		return black
	case "reference":
		return refPalette[0]
	}
	return floorGrey
}
