package report

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
)

// WriteMarkdown writes report.md: what to ship first, then the
// environments, one section per shape (its configurations, a table per
// probe and its plots, linked relative to dir where report.md lives), the
// gate failures with their evidence, the configurations whose gates ran
// under the spec's waivers (a replay gate not run among them), the
// wall-clock projection when
// engine figures were given and, last, one line per kind of warning.
func (rep *Report) WriteMarkdown(w io.Writer, plots []PlotFile, dir string) error {
	ew := &errWriter{w: w}
	ew.printf("# ktune report\n\n")
	if ew.err != nil {
		return ew.err
	}
	if err := rep.WriteRecommend(w); err != nil {
		return err
	}
	if len(rep.Recommend) > 0 {
		ew.printf("\n")
	}
	if err := rep.writeWorkload(w, plots, dir); err != nil {
		return err
	}
	if err := rep.WriteShip(w, true); err != nil {
		return err
	}
	ew.printf("\n## Environment\n\n")
	ew.printf("| device | arch | SMs | L2 | driver | NVRTC | SM clock | memory clock | measured read bandwidth | runs | records | built by |\n")
	ew.printf("|:--|:--|--:|--:|:--|:--|--:|--:|--:|--:|--:|:--|\n")
	for _, e := range rep.Envs {
		clock, mem := "-", "-"
		if e.ClockMHz > 0 {
			clock, mem = fmt.Sprintf("%.0f MHz", e.ClockMHz), fmt.Sprintf("%.0f MHz", e.MemClockMHz)
		}
		ew.printf("| %s | %s | %d | %.0f MiB | %s | %s | %s | %s | %s | %d | %d | %s |\n",
			dash(e.Device), dash(e.Arch), e.SMs, float64(e.L2Bytes)/(1<<20), dash(e.Driver), dash(e.NVRTC),
			clock, mem, bwRange(&e), e.Runs, e.Records, dash(strings.ReplaceAll(strings.Join(e.Builds, "; "), "|", `\|`)))
	}
	ew.printf("\nRuns on the same device, driver and NVRTC whose measured read bandwidths lie within %.0f%% of each other "+
		"are one row. The read bandwidth is measured once per run by a streaming float4 read kernel over a buffer far larger than L2; "+
		"%% BW below is relative to it, and the read-rate line in the plots is K+V bytes divided by it: the time to stream them once at the rate that kernel reached, which a decode kernel can beat slightly (its reads are not the read kernel's), so it is a reference, not a floor.\n", bwNoise*100)
	ew.printf("\n## Results\n\n%s\n", legend)
	if len(plots) > 0 {
		ew.printf("\n%s\n", plotNote)
	}
	if ew.err != nil {
		return ew.err
	}
	byShape := map[string][]PlotFile{}
	for _, p := range plots {
		if p.Kind != "workload" { // linked from the workload's section
			byShape[p.Device+"\x00"+p.Shape] = append(byShape[p.Device+"\x00"+p.Shape], p)
		}
	}
	for _, s := range rep.sections() {
		if err := rep.writeSection(ew, w, s); err != nil {
			return err
		}
		for _, p := range byShape[s.device+"\x00"+s.label] {
			rel, err := filepath.Rel(dir, p.Base)
			if err != nil {
				rel = filepath.Base(p.Base)
			}
			rel = filepath.ToSlash(rel)
			ew.printf("\n#### %s\n\n![%s](%s.png)\n\n[SVG](%s.svg)\n", p.Title, p.Title, rel, rel)
		}
	}

	ew.printf("\n## Gate failures\n\n")
	if len(rep.Failures) == 0 {
		ew.printf("None: every point passed its gates.\n")
	}
	for _, f := range rep.Failures {
		ew.printf("- %s\n", strings.ReplaceAll(failureLine(&f), "|", `\|`))
	}
	rep.writeWaived(ew)
	if rep.Projection != nil {
		ew.printf("\n## Wall-clock projection\n\n")
		if ew.err == nil {
			ew.err = rep.writeProjection(w, true)
		}
	}
	rep.writeDuplicates(ew)
	if sums := SummariseWarnings(rep.Warnings); len(sums) > 0 {
		ew.printf("\n## Warnings\n\n")
		for _, s := range sums {
			ew.printf("- %s\n", s)
		}
	}
	return ew.err
}

// writeProjection writes the projection's model, its rows and the points
// it refused.
func (rep *Report) writeProjection(w io.Writer, markdown bool) error {
	pr := rep.Projection
	ew := &errWriter{w: w}
	intro := fmt.Sprintf("A projection, not a measurement: rest = %.3g ms step − %d layers × landed kernel (%s probe); "+
		"projected step = rest + %d × kernel (each variant's best configuration); tokens/s = 1000 / projected step ms "+
		"(%.1f with the landed kernel). It assumes attention time adds per layer and nothing else in the step changes.",
		pr.StepMS, pr.Layers, pr.Probe, pr.Layers, 1000/pr.StepMS)
	if markdown {
		ew.printf("%s\n\n", intro)
	} else {
		ew.printf("Wall-clock projection\n%s\n", wrap(intro, 100))
	}
	if ew.err != nil {
		return ew.err
	}
	g := &grid{}
	for _, c := range []string{"shape", "nkv", "config", "kernel µs", "landed µs", "rest ms", "Δstep ms", "tokens/s"} {
		g.Col(c, c != "shape" && c != "config")
	}
	for _, r := range pr.Rows {
		g.Rows = append(g.Rows, escape([]string{r.Shape, fmt.Sprint(r.NKV), r.Config, fmtUS(r.KernelUS * 1000), fmtUS(r.LandedUS * 1000),
			fmt.Sprintf("%.3f", r.RestMS), fmt.Sprintf("%+.3f", r.DeltaStepMS), fmt.Sprintf("%.1f", r.TokensPerSec)}, markdown))
	}
	if err := g.Render(w, markdown); err != nil {
		return err
	}
	if len(pr.Refused) > 0 {
		ew.printf("\nRefused (the landed attention alone exceeds the step, so the figures cannot describe these points):\n")
		if markdown {
			ew.printf("\n")
		}
		for _, s := range pr.Refused {
			ew.printf("- %s\n", s)
		}
	}
	return ew.err
}
