package report

import (
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/table"
)

// A grid is a table before rendering: the one shape the terminal and
// Markdown renderers share (internal/table, as every ktune table).
type grid = table.Table

// fmtUS renders a duration in ns as µs (table.US).
func fmtUS(ns float64) string { return table.US(ns) }

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

// configCell names a row's configuration in the tables: the variant with
// its marks (* landed, "(ref)" a reference, "(fixture)" a fault-isolation
// record), SPLITS when the kernel has any, then the other defines.
func configCell(r *Row) string {
	s := variantCell(r)
	switch {
	case r.Reference:
		s += " (ref)"
	case r.Fixture:
		s += " (fixture)"
	}
	if r.Splits > 0 {
		s += fmt.Sprintf(" SPLITS=%d", r.Splits)
	}
	if r.Defines != "" {
		s += " " + strings.ReplaceAll(r.Defines, ",", " ")
	}
	return s
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

// A section is the rows of one device and shape, in row order.
type section struct {
	device, label string
	shape         results.Shape
	rows          []*Row
}

func (rep *Report) sections() []section {
	var out []section
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if n := len(out); n == 0 || out[n-1].device != r.Device || out[n-1].rows[0].key.Shape != r.key.Shape {
			out = append(out, section{device: r.Device, label: r.Label, shape: r.Shape})
		}
		out[len(out)-1].rows = append(out[len(out)-1].rows, r)
	}
	return out
}

func (s *section) title(devices int) string {
	t := fmt.Sprintf("%s: %s", s.label, ShapeDescription(s.shape))
	if devices > 1 {
		t += " on " + s.device
	}
	return t
}

// probeGrid is the table of one section and one probe, one line per
// configuration and nkv: seven columns whatever the input, where one
// table of every probe and property grew past 300 characters.
func probeGrid(rows []*Row, p results.Probe, markdown bool) *grid {
	g := &grid{}
	// Energy per step beside time, where any row of the table has it.
	energy := false
	for _, r := range rows {
		if st := r.Probe(p); st != nil && probeEnergy(r, p) != nil {
			energy = true
		}
	}
	cols := []string{"configuration", "nkv", "µs ±", "× landed", "GB/s", "% BW"}
	if energy && p == results.ProbeCold {
		cols = append(cols, "warm µJ/step")
	} else if energy {
		cols = append(cols, "µJ/step")
	}
	for _, c := range append(cols, "flags") {
		g.Col(c, c != "configuration" && c != "flags")
	}
	for _, r := range rows {
		st := r.Probe(p)
		if st == nil {
			continue
		}
		c := []string{configCell(r), fmt.Sprint(r.NKV), fmtUS(st.MedianNS) + " " + fmtSpread(st), fmtSpeedup(st.Speedup)}
		if st.GBps > 0 {
			c = append(c, fmtGBps(st.GBps), pct(st.PctBW))
		} else {
			c = append(c, "-", "-")
		}
		if energy {
			c = append(c, fmtEnergy(probeEnergy(r, p)))
		}
		c = append(c, dash(strings.Join(r.Flags, " ")))
		g.Rows = append(g.Rows, escape(c, markdown))
	}
	return g
}

// probeEnergy is the energy per step shown beside probe p's time at row
// r: the probe's own; for the cold probe, which has none (a cold step's
// L2 flush is no part of the step, and the counter cannot tell them
// apart), the warm step's of the graph probe, else the hot probe's,
// under the heading "warm µJ/step".
func probeEnergy(r *Row, p results.Probe) *results.Energy {
	if st := r.Probe(p); st != nil && st.Energy != nil {
		return st.Energy
	}
	if p != results.ProbeCold {
		return nil
	}
	for _, w := range []results.Probe{results.ProbeGraph, results.ProbeHot} {
		if st := r.Probe(w); st != nil && st.Energy != nil {
			return st.Energy
		}
	}
	return nil
}

// fmtEnergy is a probe's energy per step in µJ: "-" when none was
// recorded, "unmeasurable" where the counter could not resolve it (the
// record says why).
func fmtEnergy(e *results.Energy) string {
	switch {
	case e == nil:
		return "-"
	case e.UJPerStep == 0:
		return "unmeasurable"
	case e.UJPerStep < 100:
		return fmt.Sprintf("%.1f", e.UJPerStep)
	}
	return fmt.Sprintf("%.0f", e.UJPerStep)
}

// configGrid is one line per configuration of a section: what does not
// change with nkv (the gate verdict, the compiled footprint).
func configGrid(rows []*Row, markdown bool) *grid {
	g := &grid{}
	for _, c := range []string{"configuration", "kernel", "gate", "nkv", "regs", "local B", "occ"} {
		g.Col(c, c == "regs" || c == "local B" || c == "occ")
	}
	type acc struct {
		row  *Row
		nkvs []int
		fail string
	}
	var order []ConfigKey
	by := map[ConfigKey]*acc{}
	for _, r := range rows {
		a := by[r.key.ConfigKey]
		if a == nil {
			a = &acc{row: r}
			by[r.key.ConfigKey] = a
			order = append(order, r.key.ConfigKey)
		}
		a.nkvs = append(a.nkvs, r.NKV)
		if r.Verdict != "ok" && a.fail == "" {
			a.fail = r.Verdict
		}
	}
	for _, k := range order {
		a := by[k]
		r := a.row
		occ := "-"
		if r.Occupancy > 0 {
			occ = fmt.Sprintf("%.0f%%", r.Occupancy*100)
		}
		verdict := "ok"
		if a.fail != "" {
			verdict = a.fail
		}
		g.Rows = append(g.Rows, escape([]string{configCell(r), r.Kernel, verdict, nkvList(a.nkvs), regs(r.Registers), fmt.Sprint(r.LocalBytes), occ}, markdown))
	}
	return g
}

// nkvList shortens a list of context lengths to its first and last when
// long: the per-probe tables list every one.
func nkvList(ns []int) string {
	if len(ns) <= 4 {
		return joinInts(ns)
	}
	return fmt.Sprintf("%d…%d (%d)", ns[0], ns[len(ns)-1], len(ns))
}

func escape(c []string, markdown bool) []string {
	if markdown {
		for i := range c {
			c[i] = strings.ReplaceAll(c[i], "|", `\|`)
		}
	}
	return c
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

const legend = "Marks: * landed configuration (the baseline); (ref) a reference kernel ktune did not build; (fixture) a fault-isolation record. " +
	"± is half the interquartile range over the median. × landed = landed median / row median at the same shape, nkv and probe " +
	"(>1 is faster). GB/s and % BW: K+V bytes over the median (% of the measured streaming read bandwidth)."

// WriteText writes the terminal form of the report: what to ship first,
// then the environments, one cold-probe table per shape, and the gate
// failures. The other probes' tables are in report.md and tables.csv;
// warnings belong on the error stream (WriteWarnings).
func (rep *Report) WriteText(w io.Writer) error {
	if err := rep.WriteShip(w, false); err != nil {
		return err
	}
	ew := &errWriter{w: w}
	ew.printf("\nEnvironments:\n")
	for _, e := range rep.Envs {
		ew.printf("  %s\n", envLine(&e))
	}
	for _, s := range rep.sections() {
		ew.printf("\n%s, cold probe:\n", s.title(rep.Devices))
		if ew.err != nil {
			return ew.err
		}
		g := probeGrid(s.rows, results.ProbeCold, false)
		if len(g.Rows) == 0 {
			ew.printf("  (no cold measurement)\n")
			continue
		}
		if err := g.Render(w, false); err != nil {
			return err
		}
	}
	ew.printf("%s\n", wrap(legend, 100))
	if len(rep.Failures) > 0 {
		ew.printf("\nFailures:\n")
		for _, f := range rep.Failures {
			ew.printf("  %s\n", failureLine(&f))
		}
	}
	if rep.Projection != nil {
		ew.printf("\n")
		if ew.err == nil {
			ew.err = rep.writeProjection(w, false)
		}
	}
	return ew.err
}

// WriteMarkdownTable writes the per-shape tables as Markdown: each
// shape's configurations, then one table per probe.
func (rep *Report) WriteMarkdownTable(w io.Writer) error {
	ew := &errWriter{w: w}
	for _, s := range rep.sections() {
		if err := rep.writeSection(ew, w, s); err != nil {
			return err
		}
	}
	return ew.err
}

// writeSection writes one shape's tables as Markdown: its
// configurations, then one table per probe.
func (rep *Report) writeSection(ew *errWriter, w io.Writer, s section) error {
	ew.printf("\n### %s\n\n", s.title(rep.Devices))
	if ew.err != nil {
		return ew.err
	}
	if err := configGrid(s.rows, true).Render(w, true); err != nil {
		return err
	}
	for _, p := range rep.Probes {
		g := probeGrid(s.rows, p, true)
		if len(g.Rows) == 0 {
			continue
		}
		ew.printf("\n%s probe:\n\n", p)
		if ew.err != nil {
			return ew.err
		}
		if err := g.Render(w, true); err != nil {
			return err
		}
	}
	return ew.err
}

func envLine(e *EnvGroup) string {
	s := fmt.Sprintf("%s (%s, %d SMs, L2 %.0f MiB), driver %s, NVRTC %s",
		dash(e.Device), dash(e.Arch), e.SMs, float64(e.L2Bytes)/(1<<20), dash(e.Driver), dash(e.NVRTC))
	if e.ClockMHz > 0 {
		s += fmt.Sprintf(", SM clock %.0f MHz, memory clock %.0f MHz", e.ClockMHz, e.MemClockMHz)
	}
	if e.ReadBWMax > 0 {
		s += ", measured read bandwidth " + bwRange(e)
	}
	return s + fmt.Sprintf(" [%s, %s; %s]", plural(e.Runs, "run"), plural(e.Records, "record"), dash(strings.Join(e.Builds, "; ")))
}

func bwRange(e *EnvGroup) string {
	if e.ReadBWMax-e.ReadBWMin < 0.5 {
		return fmt.Sprintf("%.0f GB/s", e.ReadBWMax)
	}
	return fmt.Sprintf("%.0f–%.0f GB/s", e.ReadBWMin, e.ReadBWMax)
}

func failureLine(f *Failure) string {
	r := f.Row
	where := fmt.Sprintf("%s %s (records at nkv %s)", r.Label, ConfigLabel(r.Config()), joinInts(f.NKVs))
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
		g.Col("device", false)
	}
	if len(shapes) > 1 {
		g.Col("shape", false)
	}
	for _, c := range []string{"variant", abi.DefineSplits, "nkv", "cold µs", "hot µs", "GB/s", "% BW", "vs landed", "gate"} {
		g.Col(c, c != "variant" && c != "gate")
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		var c []string
		if rep.Devices > 1 {
			c = append(c, r.Device)
		}
		if len(shapes) > 1 {
			c = append(c, r.Label)
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
		g.Rows = append(g.Rows, c)
	}
	if err := g.Render(w, false); err != nil {
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

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
