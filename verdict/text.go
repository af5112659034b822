package verdict

import (
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/table"
)

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

// WriteText writes the verdict, the numerics table and the point table.
func (res *GateResult) WriteText(w io.Writer) error {
	ew := &errWriter{w: w}
	ew.printf("gate: candidate %s against %s (threshold %.1f%%, α=%.2f)\n\n", res.Candidate, res.Baseline, res.Threshold*100, res.Alpha)
	ng := &table.Table{}
	for _, h := range []string{"shape", "candidate config", "numerics", "reason"} {
		ng.Col(h, false)
	}
	for _, n := range res.Numerics {
		v := "pass"
		if n.Error {
			v = "error"
		} else if !n.Pass {
			v = "FAIL"
		}
		ng.Rows = append(ng.Rows, []string{n.Shape, n.Config, v, n.Reason})
	}
	if ew.err != nil {
		return ew.err
	}
	if err := ng.Render(w, false); err != nil {
		return err
	}
	if len(res.Points) > 0 {
		pg := &table.Table{}
		for _, h := range []string{"shape", "nkv", "probe", "candidate", "baseline", "cand µs", "base µs", "delta", "verdict"} {
			pg.Col(h, h == "nkv" || strings.Contains(h, "µs") || h == "delta")
		}
		for _, p := range res.Points {
			pg.Rows = append(pg.Rows, []string{p.Shape, fmt.Sprint(p.NKV), string(p.Probe), p.Candidate, p.Baseline,
				table.US(p.CandNS), table.US(p.BaseNS), fmt.Sprintf("%+.1f%%", p.DeltaPct), p.Reason})
		}
		ew.printf("\n")
		if ew.err != nil {
			return ew.err
		}
		if err := pg.Render(w, false); err != nil {
			return err
		}
		ew.printf("cand µs and base µs are medians; delta is the Hodges-Lehmann estimate of candidate/baseline − 1 " +
			"(the median of the ratios of every candidate sample to every baseline one), the centre of the 95%% interval \"at worst\" bounds\n")
	}
	for _, m := range res.Missing {
		ew.printf("missing: %s\n", m)
	}
	if res.SkippedRecords > 0 {
		how := "a gate over damaged input cannot pass (--allow-damaged to accept it)"
		if res.AllowDamaged {
			how = "allowed by --allow-damaged"
		}
		ew.printf("\nskipped %d input record(s) that could not be read; %s:\n", res.SkippedRecords, how)
		for _, s := range res.Skipped {
			ew.printf("  %s\n", s)
		}
	}
	if res.ExcludedRecords > 0 {
		how := "a gate over records that are not evidence cannot pass (--allow-damaged to accept it)"
		if res.AllowDamaged {
			how = "allowed by --allow-damaged"
		}
		ew.printf("\nexcluded %d record(s) that are not evidence; %s:\n", res.ExcludedRecords, how)
		for _, s := range res.Excluded {
			ew.printf("  %s\n", s)
		}
	}
	if len(res.EnvWarnings) > 0 {
		how := "warning: timings of different machines compared (--same-device makes this undecided)"
		if res.SameDevice {
			how = "undecided under --same-device: the two sides ran on different machines"
		}
		ew.printf("\n%s:\n", how)
		for _, s := range res.EnvWarnings {
			ew.printf("  %s\n", s)
		}
	}
	if res.Undecided > 0 {
		ew.printf("\n%d row(s) undecided: the samples cannot tell a pass from a regression; about %d samples per side would decide\n",
			res.Undecided, res.SamplesPerSide)
	}
	if res.Workload != nil && ew.err == nil {
		ew.err = res.Workload.write(w, res.Threshold)
	}
	ew.printf("\nverdict: %s (%s)\n", res.Verdict, res.Counts)
	return ew.err
}
