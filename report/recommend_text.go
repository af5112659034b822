package report

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/decision"
)

// recommendIntro says, once, what the recommendation is.
var recommendIntro = "For each shape with a landed kernel, one dispatch of at most %d nkv ranges over the measured context lengths, " +
	"chosen by `ktune tune`'s rule: at each measured nkv the fastest configuration that passed every gate wins when its cold samples " +
	"differ significantly (Mann-Whitney U, α=" + decision.AlphaText() + ") from the runner-up's, ties keep the landed one, then the neighbours' winner, then the " +
	"smaller SPLITS; with more ranges than the limit, the ranges of least total log-cost against those winners. " +
	"*cost* = arm time / that nkv's winner's time (the price of fewer arms), × = baseline time / arm time (>1: the arm is faster), " +
	"each the Hodges-Lehmann estimate with its 95%% interval; ~ marks a difference the test does not find significant, ? one it cannot decide. " +
	"The full per-nkv answer is under What to ship below."

// WriteRecommend writes the recommendation report.md opens with.
func (rep *Report) WriteRecommend(w io.Writer) error {
	if len(rep.Recommend) == 0 {
		return nil
	}
	ew := &errWriter{w: w}
	ew.printf("## Recommendation\n\n"+recommendIntro+"\n", rep.Recommend[0].MaxArms)
	for i := range rep.Recommend {
		rep.writeRecommendation(ew, &rep.Recommend[i])
	}
	return ew.err
}

func (rep *Report) writeRecommendation(ew *errWriter, rc *Recommendation) {
	title := rc.Shape
	if rep.Devices > 1 {
		title += " on " + rc.Device
	}
	if rc.Error != "" {
		ew.printf("\n### %s\n\nNo recommendation: %s.\n", title, rc.Error)
		return
	}
	var arms []string
	for _, a := range rc.Arms {
		arms = append(arms, fmt.Sprintf("%s for %s", a.Name, nkvSpan(a.MinNKV, a.MaxNKV)))
	}
	ew.printf("\n### %s: %s\n\n", title, strings.Join(arms, "; "))
	ew.printf("%s\n\n", rc.summary())
	g := &grid{}
	g.Col("nkv", true)
	g.Col("arm", false)
	g.Col("µs [95% CI]", true)
	g.Col("cost vs best [95% CI]", true)
	g.Col("best here", false)
	refs := []string{"landed"}
	for _, c := range rc.Cells {
		for _, v := range c.Versus {
			if !slices.Contains(refs, v.Against) {
				refs = append(refs, v.Against)
			}
		}
	}
	sort.Strings(refs[1:])
	for _, r := range refs {
		g.Col("× "+r+" [95% CI]", true)
	}
	missingAt := map[int][]string{}
	for _, m := range rc.Missing {
		missingAt[m.NKV] = append(missingAt[m.NKV], rep.shortName(missingConfig(m)))
	}
	for _, c := range rc.Cells {
		nkv := fmt.Sprint(c.NKV)
		if len(missingAt[c.NKV]) > 0 {
			nkv += " " + unmeasuredMark
		}
		row := []string{nkv, c.Arm}
		if c.Unmeasured {
			best := c.Best
			if c.BestNS > 0 {
				best += " (" + fmtUS(c.BestNS) + " µs)"
			}
			row = append(row, "not measured", "unknown", best)
		} else {
			cost := "0% (the winner)"
			if c.Cost != nil {
				cost = fmtCost(*c.Cost)
			}
			row = append(row, fmtCIns(c.Median), cost, c.Best)
		}
		for _, r := range refs {
			cell := "-"
			for _, v := range c.Versus {
				if v.Against == r {
					cell = fmtRatio(v)
				}
			}
			row = append(row, cell)
		}
		g.Rows = append(g.Rows, escape(row, true))
	}
	if ew.err != nil {
		return
	}
	ew.err = g.Render(ew.w, true)
	if len(rc.Missing) > 0 {
		var at []string
		nkvs := make([]int, 0, len(missingAt))
		for n := range missingAt {
			nkvs = append(nkvs, n)
		}
		sort.Ints(nkvs)
		for _, n := range nkvs {
			at = append(at, fmt.Sprintf("nkv %d: %s", n, strings.Join(missingAt[n], ", ")))
		}
		ew.printf("\n%s Not measured, so the dispatch rests there on what was measured, not on a comparison: %s. Measure them with:\n\n",
			unmeasuredMark, strings.Join(at, "; "))
		for _, s := range rc.Sweeps {
			ew.printf("    %s\n", s)
		}
		ew.printf("\n(a spec whose axes lack one of these nkv needs it added first).\n")
	}
	if len(rc.NoLanded) > 0 {
		ew.printf("\nThe landed kernel was not measured at nkv %s: no speedup over it is claimed there.\n", strings.ReplaceAll(joinInts(rc.NoLanded), ",", ", "))
	}
	ew.printf("\nEmit it as a dispatch table: `%s`\n", rc.Command)
}

// summary is the recommendation in one line: the speedup over landed and
// the references, and the worst cost of the arm limit, over the measured
// cells.
func (rc *Recommendation) summary() string {
	type span struct{ lo, hi float64 }
	by := map[string]*span{}
	var order []string
	worst, worstAt := 0.0, 0
	for _, c := range rc.Cells {
		if c.Cost != nil && c.Cost.Ratio.Center-1 > worst {
			worst, worstAt = c.Cost.Ratio.Center-1, c.NKV
		}
		for _, v := range c.Versus {
			s := by[v.Against]
			if s == nil {
				s = &span{v.Ratio.Center, v.Ratio.Center}
				by[v.Against] = s
				order = append(order, v.Against)
			}
			s.lo, s.hi = min(s.lo, v.Ratio.Center), max(s.hi, v.Ratio.Center)
		}
	}
	var parts []string
	for _, a := range order {
		parts = append(parts, fmt.Sprintf("%s–%s× %s", fmtX(by[a].lo), fmtX(by[a].hi), a))
	}
	cost := "no cost against the per-nkv winners"
	if worst > 0 {
		cost = fmt.Sprintf("at most %+.1f%% against the per-nkv winner (nkv %d)", worst*100, worstAt)
	}
	measured := 0
	for _, c := range rc.Cells {
		if !c.Unmeasured {
			measured++
		}
	}
	return fmt.Sprintf("Over %d measured nkv (%d with the arm measured): %s; cost of %d arm(s) %s. Landed: %s.",
		len(rc.Cells), measured, strings.Join(parts, ", "), len(rc.Arms), cost, rc.Landed)
}

// fmtCost renders arm/best − 1 with its interval: "+3.1% [+2.0%, +4.2%]".
func fmtCost(v Speedup) string {
	s := fmt.Sprintf("%+.1f%%", (v.Ratio.Center-1)*100)
	if v.Ratio.Lo > 0 {
		s += fmt.Sprintf(" [%+.1f%%, %+.1f%%]", (v.Ratio.Lo-1)*100, (v.Ratio.Hi-1)*100)
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

// nkvSpan names a dispatch range: "nkv < 362", "362 ≤ nkv < 4096", "nkv ≥ 4096".
func nkvSpan(lo, hi int) string {
	switch {
	case lo <= 1 && hi == 0:
		return "every nkv"
	case lo <= 1:
		return fmt.Sprintf("nkv < %d", hi)
	case hi == 0:
		return fmt.Sprintf("nkv ≥ %d", lo)
	}
	return fmt.Sprintf("%d ≤ nkv < %d", lo, hi)
}
