package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// writeWorkload writes the section of report.md under a workload: per
// shape, the candidates' expected step time and its bar chart.
func (rep *Report) writeWorkload(w io.Writer, plots []PlotFile, dir string) error {
	v := rep.Workload
	if v == nil {
		return nil
	}
	ew := &errWriter{w: w}
	ew.printf("## Under workload %s\n\nFrom %s. Per shape with a landed kernel and steps at its batch: the expected attention time of one decode step, "+
		"Σ weight · time over the workload's buckets of that batch, each time the candidate's median at the bucket's nkv, interpolated linearly "+
		"between measured nkv and never beyond them (a candidate not measured over every bucket is left out and named), with the 95%% interval of a "+
		"bootstrap of the points' samples; × landed = landed time / candidate time. A bucket regresses where the candidate is slower than landed by more than %.0f%% with its interval above 1.\n",
		v.Name, v.Source, regressThreshold*100)
	for _, n := range v.Notes {
		ew.printf("\n- %s\n", n)
	}
	for i := range v.Shapes {
		ws := &v.Shapes[i]
		title := ws.Shape
		if rep.Devices > 1 {
			title += " on " + ws.Device
		}
		ew.printf("\n### %s (batch %d: %.1f%% of the steps)\n\n", title, ws.Batch, ws.Share*100)
		g := &grid{}
		g.Col("candidate", false)
		g.Col("µs per step [95% CI]", true)
		g.Col("× landed [95% CI]", true)
		g.Col("regressed buckets (share of the steps)", true)
		for _, c := range ws.Candidates {
			x := fmt.Sprintf("%s× [%s–%s]", fmtX(1/c.VsLanded.Center), fmtX(1/c.VsLanded.Hi), fmtX(1/c.VsLanded.Lo))
			if c.Kind == "landed" {
				x = "1 (the baseline)"
			}
			reg := "none"
			if c.RegressedWeight > 0 {
				reg = fmt.Sprintf("%.1f%%", c.RegressedWeight*100)
			}
			name := c.Name
			if c.Interpolated {
				name += " (interpolated)"
			}
			g.Rows = append(g.Rows, escape([]string{name, fmt.Sprintf("%s [%s–%s]", fmtUS(c.Time.Center), fmtUS(c.Time.Lo), fmtUS(c.Time.Hi)), x, reg}, true))
		}
		if ew.err != nil {
			return ew.err
		}
		if err := g.Render(w, true); err != nil {
			return err
		}
		for _, c := range ws.Candidates {
			if c.Note != "" {
				ew.printf("\n%s: %s.\n", c.Name, c.Note)
			}
		}
		if len(ws.Skipped) > 0 {
			ew.printf("\nNot measured over every bucket, so left out: %s.\n", strings.Join(ws.Skipped, ", "))
		}
		for _, p := range plots {
			if p.Kind == "workload" && p.Device == ws.Device && p.Shape == ws.Shape {
				rel, err := filepath.Rel(dir, p.Base)
				if err != nil {
					rel = filepath.Base(p.Base)
				}
				rel = filepath.ToSlash(rel)
				ew.printf("\n![%s](%s.png)\n", strings.ReplaceAll(p.Title, "\n", " "), rel)
			}
		}
	}
	ew.printf("\n")
	return ew.err
}
