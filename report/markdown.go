package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// WriteMarkdown writes report.md: the environment, the row table, the
// plots (linked relative to dir, where report.md lives), the gate
// failures with their evidence and, when engine figures were given, the
// wall-clock projection.
func (rep *Report) WriteMarkdown(w io.Writer, plots []PlotFile, dir string) error {
	ew := &errWriter{w: w}
	ew.printf("# ktune report\n\n## Environment\n\n")
	ew.printf("| device | arch | SMs | L2 | driver | NVRTC | SM clock | memory clock | measured read bandwidth | records |\n")
	ew.printf("|:--|:--|--:|--:|:--|:--|--:|--:|--:|--:|\n")
	for _, e := range rep.Envs {
		ew.printf("| %s | %s | %d | %.0f MiB | %s | %s | %.0f MHz | %.0f MHz | %.0f GB/s | %d |\n",
			dash(e.Device), dash(e.Arch), e.SMs, float64(e.L2Bytes)/(1<<20), dash(e.Driver), dash(e.NVRTC),
			e.ClockMHz, e.MemClockMHz, e.ReadBWGBps, e.Records)
	}
	ew.printf("\nThe read bandwidth is measured once per run by a streaming float4 read kernel over a buffer far larger than L2; " +
		"%% BW below is relative to it, and the memory floor in the plots is K+V bytes divided by it.\n")
	for _, s := range rep.Warnings {
		ew.printf("\n> warning: %s\n", s)
	}
	ew.printf("\n## Results\n\n")
	if ew.err != nil {
		return ew.err
	}
	if err := rep.WriteMarkdownTable(w); err != nil {
		return err
	}
	ew.printf("\n%s\n", legend)

	if len(plots) > 0 {
		ew.printf("\n## Plots\n")
		for _, p := range plots {
			rel, err := filepath.Rel(dir, p.Base)
			if err != nil {
				rel = filepath.Base(p.Base)
			}
			rel = filepath.ToSlash(rel)
			ew.printf("\n### %s\n\n![%s](%s.png)\n\n[SVG](%s.svg)\n", p.Title, p.Title, rel, rel)
		}
	}

	ew.printf("\n## Gate failures\n\n")
	if len(rep.Failures) == 0 {
		ew.printf("None: every point passed its gates.\n")
	}
	for _, f := range rep.Failures {
		ew.printf("- %s\n", failureLine(&f))
	}

	if pr := rep.Projection; pr != nil {
		ew.printf("\n## Wall-clock projection\n\n")
		ew.printf("A projection, not a measurement: Δstep = %d layers × Δkernel (%s probe, each variant's best configuration), "+
			"projected tokens/s = 1000 / (%.3g ms + Δstep ms). It assumes attention time adds per layer and nothing else in the step changes.\n\n",
			pr.Layers, pr.Probe, pr.StepMS)
		ew.printf("| shape | nkv | config | kernel µs | landed µs | Δstep ms | projected tokens/s | landed tokens/s |\n")
		ew.printf("|:--|--:|:--|--:|--:|--:|--:|--:|\n")
		for _, r := range pr.Rows {
			ew.printf("| %s | %d | %s | %s | %s | %+.3f | %.1f | %.1f |\n", r.Shape, r.NKV, r.Config,
				fmtUS(r.KernelUS*1000), fmtUS(r.LandedUS*1000), r.DeltaStepMS, r.TokensPerSec, r.LandedTokensPerSec)
		}
	}
	return ew.err
}

// Write renders the whole report into dir: report.md, tables.csv and the
// plots. It returns the plot files written.
func (rep *Report) Write(dir string) ([]PlotFile, error) {
	plots, err := rep.Plots(dir)
	if err != nil {
		return nil, err
	}
	for _, out := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{"report.md", func(w io.Writer) error { return rep.WriteMarkdown(w, plots, dir) }},
		{"tables.csv", rep.WriteCSV},
	} {
		path := filepath.Join(dir, out.name)
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		werr := out.write(f)
		cerr := f.Close()
		if werr != nil {
			return nil, fmt.Errorf("writing %s: %w", path, werr)
		}
		if cerr != nil {
			return nil, fmt.Errorf("writing %s: %w", path, cerr)
		}
	}
	return plots, nil
}
