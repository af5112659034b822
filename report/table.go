package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/ktune/ktune/internal/results"
)

// A grid is a table before rendering: the one shape the terminal and
// Markdown renderers share.
type grid struct {
	header []string
	right  []bool // right-align the column (numbers)
	rows   [][]string
}

func (g *grid) col(name string, right bool) {
	g.header = append(g.header, name)
	g.right = append(g.right, right)
}

// render writes g with tablewriter. Headers keep their case: "µs" and
// "SPLITS" mean something, and tablewriter upper-cases by default.
func (g *grid) render(w io.Writer, markdown bool) error {
	aligns := make([]tw.Align, len(g.header))
	for i, r := range g.right {
		aligns[i] = tw.AlignLeft
		if r {
			aligns[i] = tw.AlignRight
		}
	}
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	t := tablewriter.NewTable(w, opts...)
	t.Header(g.header)
	for _, r := range g.rows {
		if err := t.Append(r); err != nil {
			return fmt.Errorf("rendering table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("rendering table: %w", err)
	}
	return nil
}

// fmtUS renders a duration in ns as µs with three significant figures or
// more: kernel times span 5 µs to 2 ms and a fixed number of decimals
// would either hide differences or print noise.
func fmtUS(ns float64) string {
	us := ns / 1000
	// The bounds sit half a unit of the next format's last digit below
	// 100 and 10, so that 9.9999 prints as 10.00, not 10.000.
	switch {
	case us >= 99.95:
		return fmt.Sprintf("%.1f", us)
	case us >= 9.995:
		return fmt.Sprintf("%.2f", us)
	default:
		return fmt.Sprintf("%.3f", us)
	}
}

// fmtGBps keeps a decimal below 10 GB/s: a one-token context reads 2 KiB,
// and "0" would read as "nothing measured".
func fmtGBps(v float64) string {
	if v < 9.95 {
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.0f", v)
}

// fmtSpread is half the interquartile range as a percentage of the
// median: the ± a reader can expect on a rerun.
func fmtSpread(p *ProbeStat) string {
	if p.MedianNS <= 0 {
		return ""
	}
	return fmt.Sprintf("±%.1f%%", (p.Q3NS-p.Q1NS)/2/p.MedianNS*100)
}

func fmtSpeedup(s float64) string {
	if s <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f×", s)
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// variantCell marks the landed configuration with a trailing '*'.
func variantCell(r *Row) string {
	if r.Landed {
		return r.Variant + "*"
	}
	return r.Variant
}

// bwProbe is the probe whose bandwidth the tables show: cold, the one that
// reads K/V from DRAM, when measured.
func bwProbe(r *Row) *ProbeStat {
	if p := r.Probe(results.ProbeCold); p != nil {
		return p
	}
	if len(r.Probes) > 0 {
		return &r.Probes[0]
	}
	return nil
}

// fullGrid is the complete row table.
func (rep *Report) fullGrid(markdown bool) *grid {
	g := &grid{}
	if rep.Devices > 1 {
		g.col("device", false)
	}
	g.col("shape", false)
	g.col("variant", false)
	g.col("SPLITS", true)
	g.col("defines", false)
	g.col("nkv", true)
	for _, p := range rep.Probes {
		g.col(string(p)+" µs", true)
		g.col(string(p)+" ×", true)
	}
	g.col("GB/s", true)
	g.col("% BW", true)
	g.col("gate", false)
	g.col("regs", true)
	g.col("local B", true)
	g.col("occ", true)
	g.col("flags", false)
	for i := range rep.Rows {
		r := &rep.Rows[i]
		var c []string
		if rep.Devices > 1 {
			c = append(c, r.Device)
		}
		c = append(c, ShapeLabel(r.Shape), variantCell(r), fmt.Sprint(r.Splits), dash(r.Defines), fmt.Sprint(r.NKV))
		for _, p := range rep.Probes {
			if st := r.Probe(p); st != nil {
				c = append(c, fmtUS(st.MedianNS)+" "+fmtSpread(st), fmtSpeedup(st.Speedup))
			} else {
				c = append(c, "-", "-")
			}
		}
		if st := bwProbe(r); st != nil && st.GBps > 0 {
			c = append(c, fmtGBps(st.GBps), pct(st.PctBW))
		} else {
			c = append(c, "-", "-")
		}
		occ := "-"
		if r.Occupancy > 0 {
			occ = fmt.Sprintf("%.0f%%", r.Occupancy*100)
		}
		c = append(c, r.Verdict, regs(r.Registers), fmt.Sprint(r.LocalBytes), occ, dash(strings.Join(r.Flags, " ")))
		if markdown {
			for i := range c {
				c[i] = strings.ReplaceAll(c[i], "|", `\|`)
			}
		}
		g.rows = append(g.rows, c)
	}
	return g
}

func pct(v float64) string {
	switch {
	case v <= 0:
		return "-"
	case v < 0.05:
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", v)
}

func regs(n int) string {
	if n <= 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

const legend = "* landed configuration (the baseline). ± is half the interquartile range over the median. " +
	"× = landed median / row median at the same shape and nkv (>1 is faster). GB/s and % BW are for the cold probe " +
	"(% of the measured streaming read bandwidth)."

// WriteText writes the terminal form of the report: environment, the row
// table and the gate failures.
func (rep *Report) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, e := range rep.Envs {
		ew.printf("%s\n", envLine(&e))
	}
	for _, s := range rep.Warnings {
		ew.printf("warning: %s\n", s)
	}
	if ew.err != nil {
		return ew.err
	}
	if err := rep.fullGrid(false).render(w, false); err != nil {
		return err
	}
	ew.printf("%s\n", legend)
	if len(rep.Failures) > 0 {
		ew.printf("\nFailures:\n")
		for _, f := range rep.Failures {
			ew.printf("  %s\n", failureLine(&f))
		}
	}
	return ew.err
}

// WriteMarkdownTable writes the row table as Markdown.
func (rep *Report) WriteMarkdownTable(w io.Writer) error {
	return rep.fullGrid(true).render(w, true)
}

func envLine(e *EnvInfo) string {
	s := fmt.Sprintf("%s (%s, %d SMs, L2 %.0f MiB), driver %s, NVRTC %s, SM clock %.0f MHz, memory clock %.0f MHz",
		dash(e.Device), dash(e.Arch), e.SMs, float64(e.L2Bytes)/(1<<20), dash(e.Driver), dash(e.NVRTC), e.ClockMHz, e.MemClockMHz)
	if e.ReadBWGBps > 0 {
		s += fmt.Sprintf(", measured read bandwidth %.0f GB/s", e.ReadBWGBps)
	}
	return s + fmt.Sprintf(" [%d records]", e.Records)
}

func failureLine(f *Failure) string {
	r := f.Row
	where := fmt.Sprintf("%s %s (records at nkv %s)", ShapeLabel(r.Shape), ConfigLabel(r.Config()), joinInts(f.NKVs))
	if f.Gate != nil {
		return fmt.Sprintf("%s: %s gate failed at nkv=%d: %s", where, f.Gate.Kind, f.Gate.NKV, f.Text)
	}
	return fmt.Sprintf("%s: %s: %s", where, r.Status, dash(f.Text))
}

// SummaryTable writes the compact table `ktune sweep` prints when it
// ends: one line per configuration and context length with the cold and
// hot medians, the cold bandwidth, the cold speedup over the landed kernel
// and the gate verdict.
func SummaryTable(w io.Writer, recs []results.Record) error {
	rep, err := Build(recs, Options{})
	if err != nil {
		return err
	}
	shapes := map[string]bool{}
	for i := range rep.Rows {
		shapes[rep.Rows[i].key.Shape] = true
	}
	g := &grid{}
	if rep.Devices > 1 {
		g.col("device", false)
	}
	if len(shapes) > 1 {
		g.col("shape", false)
	}
	for _, c := range []string{"variant", "SPLITS", "nkv", "cold µs", "hot µs", "GB/s", "% BW", "vs landed", "gate"} {
		g.col(c, c != "variant" && c != "gate")
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		var c []string
		if rep.Devices > 1 {
			c = append(c, r.Device)
		}
		if len(shapes) > 1 {
			c = append(c, ShapeLabel(r.Shape))
		}
		v := variantCell(r)
		if r.Defines != "" {
			v += " " + r.Defines
		}
		c = append(c, v, fmt.Sprint(r.Splits), fmt.Sprint(r.NKV))
		cold, hot := r.Probe(results.ProbeCold), r.Probe(results.ProbeHot)
		c = append(c, usOrDash(cold), usOrDash(hot))
		if cold != nil && cold.GBps > 0 {
			c = append(c, fmtGBps(cold.GBps), pct(cold.PctBW), fmtSpeedup(cold.Speedup))
		} else {
			c = append(c, "-", "-", "-")
		}
		c = append(c, r.Verdict)
		g.rows = append(g.rows, c)
	}
	if err := g.render(w, false); err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, "* landed configuration; vs landed = landed cold median / cold median (>1 is faster)")
	return err
}

func usOrDash(p *ProbeStat) string {
	if p == nil || p.MedianNS <= 0 {
		return "-"
	}
	return fmtUS(p.MedianNS)
}

// errWriter keeps the first write error so that a renderer can check once.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) printf(format string, args ...any) {
	if e.err == nil {
		_, e.err = fmt.Fprintf(e.w, format, args...)
	}
}

func joinInts(xs []int) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ",")
}
