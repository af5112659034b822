package report

import (
	"fmt"
	"io"
	"strings"
)

// shipIntro says what the summary is, once, above the per-shape tables.
const shipIntro = "Per shape and range of measured nkv where one configuration wins: the fastest configuration " +
	"(cold probe, lowest median) that passed every gate, excluding references (kernels ktune did not build) and " +
	"fault-isolation fixtures. × = baseline time / shipped time (>1: the shipped one is faster), the median of the " +
	"pairwise ratios of their samples (Hodges-Lehmann) with the 95% confidence interval of the same statistic; ~ marks a difference the Mann-Whitney U test does not find significant at α=0.05, ? one " +
	"it cannot decide with so few samples."

// WriteShip writes the "what to ship" summary: per shape, a table of the
// winning configuration per nkv range with its speedups, and the command
// that turns the results into a dispatch table.
func (rep *Report) WriteShip(w io.Writer, markdown bool) error {
	ew := &errWriter{w: w}
	if markdown {
		ew.printf("## What to ship\n\n%s\n", shipIntro)
	} else {
		ew.printf("What to ship\n\n%s\n", wrap(shipIntro, 100))
	}
	if len(rep.Ship) == 0 {
		ew.printf("\nNothing: no configuration built by ktune passed every gate with a cold measurement.\n")
	}
	for i := range rep.Ship {
		s := &rep.Ship[i]
		title := fmt.Sprintf("%s (%s)", s.Shape, ShapeDescription(s.Dims))
		if rep.Devices > 1 {
			title += " on " + s.Device
		}
		landed := "no landed record"
		if s.Landed != "" {
			landed = "landed: " + s.Landed
		}
		if markdown {
			ew.printf("\n**%s**, %s. Dispatch table: `%s`\n\n", title, landed, s.Command)
		} else {
			ew.printf("\n%s, %s\n", title, landed)
		}
		if ew.err != nil {
			return ew.err
		}
		if err := shipGrid(s, markdown).Render(w, markdown); err != nil {
			return err
		}
		if !markdown {
			ew.printf("  dispatch table: %s\n", s.Command)
		}
	}
	return ew.err
}

// shipGrid has one line per measured nkv; the range and configuration
// cells are filled on the first line of each range only, so that a range
// reads as one block.
func shipGrid(s *ShipShape, markdown bool) *grid {
	g := &grid{}
	for _, c := range []string{"nkv range", "nkv", "ship", "µs [95% CI]", "× landed [95% CI]", "× references [95% CI]"} {
		g.Col(c, c == "nkv" || c == "µs [95% CI]" || c == "× landed [95% CI]")
	}
	for _, rg := range s.Ranges {
		for i, pt := range rg.Points {
			rng, cfg := "", ""
			if i == 0 {
				rng = fmt.Sprint(rg.MinNKV)
				if rg.MaxNKV != rg.MinNKV {
					rng += "–" + fmt.Sprint(rg.MaxNKV)
				}
				cfg = rg.Config
				if rg.Landed {
					cfg += " (landed)"
				}
			}
			landed, refs := "-", []string{}
			for _, v := range pt.Versus {
				if v.Against == "landed" {
					landed = fmtRatio(v)
				} else {
					refs = append(refs, v.Against+" "+fmtRatio(v))
				}
			}
			ref := "-"
			if len(refs) > 0 {
				ref = strings.Join(refs, "; ")
			}
			g.Rows = append(g.Rows, escape([]string{rng, fmt.Sprint(pt.NKV), cfg, fmtCIns(pt.Median), landed, ref}, markdown))
		}
	}
	return g
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
