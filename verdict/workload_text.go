package verdict

import (
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/table"
	"github.com/ktune/ktune/internal/workload"
)

// writeWorkload writes the judgement under a workload: per group, the
// buckets and the expected step time of both sides.
func (wr *WorkloadResult) write(w io.Writer, threshold float64) error {
	ew := &errWriter{w: w}
	ew.printf("\nworkload %s (%s): a bucket regresses when the candidate is slower there by more than %.1f%% with its 95%% interval above 1; "+
		"regressed buckets may carry at most %.1f%% of the steps\n", wr.Name, wr.Source, threshold*100, wr.MaxRegressedWeight*100)
	for _, n := range wr.Notes {
		ew.printf("  %s\n", n)
	}
	if len(wr.Groups) == 0 {
		ew.printf("UNDECIDED: no compared point lies at a batch and probe the workload could be evaluated at\n")
	}
	for _, g := range wr.Groups {
		if ew.err != nil {
			return ew.err
		}
		ew.printf("\n%s, probe %s:\n", g.Shape, g.Probe)
		t := &table.Table{}
		for _, h := range []string{"batch", "nkv", "weight", "cand µs", "base µs", "cand/base [95% CI]", "note"} {
			t.Col(h, h != "note")
		}
		for _, b := range g.Buckets {
			note := ""
			if b.Interpolated {
				note = fmt.Sprintf("interpolated between measured nkv %d and %d", b.From, b.To)
			}
			if b.Regressed {
				note = strings.TrimPrefix(note+"; REGRESSED", "; ")
			}
			if b.Label != "" {
				note = strings.TrimPrefix(b.Label+"; "+note, "; ")
			}
			t.Rows = append(t.Rows, []string{fmt.Sprint(b.Batch), fmt.Sprint(b.NKV), fmt.Sprintf("%.1f%%", b.Weight*100),
				table.US(b.Cand.Center), table.US(b.Base.Center), fmtRatio(b.Ratio), note})
		}
		for _, r := range g.Refused {
			t.Rows = append(t.Rows, []string{fmt.Sprint(r.Batch), fmt.Sprint(r.NKV), fmt.Sprintf("%.1f%%", r.Weight*100), "-", "-", "-", "not evaluated: " + r.Reason})
		}
		if err := t.Render(w, false); err != nil {
			return err
		}
		if len(g.Buckets) > 0 {
			ew.printf("expected attention time per step: candidate %s µs, baseline %s µs; candidate/baseline %s (%.2f× faster)\n",
				fmtEst(g.Cand), fmtEst(g.Base), fmtRatio(g.Ratio), 1/g.Ratio.Center)
		}
		ew.printf("%s\n", g.Reason)
	}
	return ew.err
}

func fmtEst(e workload.Estimate) string {
	return fmt.Sprintf("%s [%s–%s]", table.US(e.Center), table.US(e.Lo), table.US(e.Hi))
}

func fmtRatio(e workload.Estimate) string {
	return fmt.Sprintf("%.3f [%.3f–%.3f]", e.Center, e.Lo, e.Hi)
}
