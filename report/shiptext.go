package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/decision"
)

// shipIntro says what the summary is, once, above the per-shape tables.
var shipIntro = "Per shape and range of measured nkv where one configuration wins: the fastest configuration " +
	"(cold probe, lowest median; of equal medians the landed one, then the smaller SPLITS) that passed every gate, excluding references (kernels ktune did not build) and " +
	"fault-isolation fixtures. × = baseline time / shipped time (>1: the shipped one is faster), the median of the " +
	"pairwise ratios of their samples (Hodges-Lehmann) with the 95% confidence interval of the same statistic; ~ marks a difference the Mann-Whitney U test does not find significant at α=" + decision.AlphaText() + ", ? one " +
	"it cannot decide with so few samples."

// noLandedNote says, once, why the second group of tables has no
// "× landed" column.
const noLandedNote = "No record of these shapes is marked landed: no kernel is in use for them to be compared with, " +
	"so their tables have no × landed column; × compares with the reference kernels measured in the same runs, where there are any."

// WriteShip writes the "what to ship" summary: first the shapes with a
// landed kernel, each with a table of the winning configuration per nkv
// range and its speedups; then, under one heading, the shapes without
// one; last, the full defines of every configuration the tables name by
// its short name.
func (rep *Report) WriteShip(w io.Writer, markdown bool) error {
	ew := &errWriter{w: w}
	intro := shipIntro + " Configurations appear by short name; Configurations below lists their defines."
	if markdown {
		intro = shipIntro + " Configurations appear by short name; [Configurations](#configurations) lists their defines."
		ew.printf("## What to ship\n\n%s\n", intro)
	} else {
		ew.printf("What to ship\n\n%s\n", wrap(intro, 100))
	}
	if len(rep.Ship) == 0 {
		ew.printf("\nNothing: no configuration built by ktune passed every gate with a cold measurement.\n")
		return ew.err
	}
	var with, without []*ShipShape
	for i := range rep.Ship {
		if rep.Ship[i].Landed != "" {
			with = append(with, &rep.Ship[i])
		} else {
			without = append(without, &rep.Ship[i])
		}
	}
	heading := func(h string) {
		if markdown {
			ew.printf("\n### %s\n", h)
		} else {
			ew.printf("\n%s\n", h)
		}
	}
	if len(with) > 0 {
		heading("Shapes with a landed kernel")
	}
	for _, s := range with {
		rep.writeShipShape(ew, s, markdown)
	}
	if len(without) > 0 {
		heading("Shapes without a landed kernel")
		if markdown {
			ew.printf("\n%s\n", noLandedNote)
		} else {
			ew.printf("%s\n", wrap(noLandedNote, 100))
		}
	}
	for _, s := range without {
		rep.writeShipShape(ew, s, markdown)
	}
	heading("Configurations")
	if ew.err != nil {
		return ew.err
	}
	if markdown {
		ew.printf("\n")
	}
	g := &grid{}
	g.Col("name", false)
	g.Col("kernel", false)
	g.Col("configuration (every define)", false)
	for _, c := range rep.ShipConfigs {
		g.Rows = append(g.Rows, escape([]string{c.Name, dash(c.Kernel), c.Config}, markdown))
	}
	if ew.err != nil {
		return ew.err
	}
	return g.Render(w, markdown)
}

// writeShipShape writes one shape's title, table, notes on lengths where
// the shipped configuration wins only for want of measurements, and the
// command that makes its dispatch table.
func (rep *Report) writeShipShape(ew *errWriter, s *ShipShape, markdown bool) {
	title := fmt.Sprintf("%s (%s)", s.Shape, ShapeDescription(s.Dims))
	if rep.Devices > 1 {
		title += " on " + s.Device
	}
	landed := ""
	if s.Landed != "" {
		landed = ", landed: " + s.Landed
	}
	if markdown {
		ew.printf("\n**%s**%s\n\n", title, landed)
	} else {
		ew.printf("\n%s%s\n", title, landed)
	}
	if ew.err != nil {
		return
	}
	ew.err = shipGrid(s, markdown).Render(ew.w, markdown)
	notes := unmeasuredNotes(s)
	if len(notes) > 0 && markdown {
		ew.printf("\n")
	}
	for _, n := range notes {
		if markdown {
			ew.printf("- %s\n", n)
		} else {
			ew.printf("  %s\n", n)
		}
	}
	if markdown {
		ew.printf("\nDispatch table: `%s`\n", s.Command)
	} else {
		ew.printf("  dispatch table: %s\n", s.Command)
	}
}

// unmeasuredMark flags an nkv at which the shipped configuration wins
// only among what was measured.
const unmeasuredMark = "†"

// unmeasuredNotes are the footnotes of the points marked unmeasuredMark,
// one per range.
func unmeasuredNotes(s *ShipShape) []string {
	var out []string
	for _, rg := range s.Ranges {
		var nkvs []int
		var missing []string
		for _, pt := range rg.Points {
			if len(pt.Unmeasured) == 0 {
				continue
			}
			nkvs = append(nkvs, pt.NKV)
			for _, c := range pt.Unmeasured {
				if !slices.Contains(missing, c) {
					missing = append(missing, c)
				}
			}
		}
		if len(nkvs) == 0 {
			continue
		}
		at, verb := "nkv "+strings.ReplaceAll(joinInts(nkvs), ",", ", "), "was"
		if len(missing) > 1 {
			verb = "were"
		}
		out = append(out, fmt.Sprintf("%s %s: %s, shipped at the neighbouring lengths, %s not measured here; %s ships here only because nothing faster was measured.",
			unmeasuredMark, at, strings.Join(missing, " and "), verb, rg.Name))
	}
	return out
}

// shipGrid has one line per measured nkv; the range and configuration
// cells are filled on the first line of each range only, so that a range
// reads as one block. A "× landed" column appears when the shape has a
// landed kernel, and one column per reference measured at the shape.
func shipGrid(s *ShipShape, markdown bool) *grid {
	var refs []string
	for _, rg := range s.Ranges {
		for _, pt := range rg.Points {
			for _, v := range pt.Versus {
				if v.Against != "landed" && !slices.Contains(refs, v.Against) {
					refs = append(refs, v.Against)
				}
			}
		}
	}
	sort.Strings(refs)
	g := &grid{}
	g.Col("nkv range", false)
	g.Col("nkv", true)
	g.Col("ship", false)
	g.Col("µs [95% CI]", true)
	if s.Landed != "" {
		g.Col("× landed [95% CI]", true)
	}
	for _, r := range refs {
		g.Col("× "+r+" [95% CI]", true)
	}
	for _, rg := range s.Ranges {
		for i, pt := range rg.Points {
			rng, cfg := "", ""
			if i == 0 {
				rng = fmt.Sprint(rg.MinNKV)
				if rg.MaxNKV != rg.MinNKV {
					rng += "–" + fmt.Sprint(rg.MaxNKV)
				}
				cfg = rg.Name
				if rg.Landed {
					cfg += " (landed)"
				}
			}
			nkv := fmt.Sprint(pt.NKV)
			if len(pt.Unmeasured) > 0 {
				nkv += " " + unmeasuredMark
			}
			row := []string{rng, nkv, cfg, fmtCIns(pt.Median)}
			if s.Landed != "" {
				row = append(row, versus(pt, "landed"))
			}
			for _, r := range refs {
				row = append(row, versus(pt, r))
			}
			g.Rows = append(g.Rows, escape(row, markdown))
		}
	}
	return g
}

// versus is the speedup cell of pt against the baseline named against,
// "-" where it was not measured at pt's nkv.
func versus(pt ShipPoint, against string) string {
	for _, v := range pt.Versus {
		if v.Against == against {
			return fmtRatio(v)
		}
	}
	return "-"
}

// fmtCIns renders a median in µs with its interval: "25.90 [25.81–26.02]".
func fmtCIns(c CI) string {
	if c.Lo <= 0 {
		return fmtUS(c.Center) + " [n/a]"
	}
	return fmt.Sprintf("%s [%s–%s]", fmtUS(c.Center), fmtUS(c.Lo), fmtUS(c.Hi))
}

// fmtRatio renders a speedup: "21.4× [21.2–21.6]", "~" appended when the
// samples do not differ significantly.
func fmtRatio(v Speedup) string {
	s := fmt.Sprintf("%s×", fmtX(v.Ratio.Center))
	if v.Ratio.Lo > 0 {
		s += fmt.Sprintf(" [%s–%s]", fmtX(v.Ratio.Lo), fmtX(v.Ratio.Hi))
	} else {
		s += " [n/a]"
	}
	switch {
	case !v.Decidable:
		s += " ?"
	case !v.Significant:
		s += " ~"
	}
	return s
}

// fmtX keeps three significant figures of a ratio.
func fmtX(x float64) string {
	switch {
	case x >= 99.5:
		return fmt.Sprintf("%.0f", x)
	case x >= 9.95:
		return fmt.Sprintf("%.1f", x)
	}
	return fmt.Sprintf("%.2f", x)
}

// wrap breaks s into lines of at most width characters at spaces.
func wrap(s string, width int) string {
	var b strings.Builder
	n := 0
	for i, word := range strings.Fields(s) {
		if i > 0 && n+1+len([]rune(word)) > width {
			b.WriteByte('\n')
			n = 0
		} else if i > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len([]rune(word))
	}
	return b.String()
}
