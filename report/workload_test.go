package report

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/workload"
)

// Under the committed long-context workload, the slice's landed kernel
// takes Σ weight · median, its nkv 16384 bucket interpolated between the
// medians at 8192 and 32768 (computed here from the rows, not by the
// package); every candidate's interval holds its estimate, the fastest
// comes first, the recommendation is among them, and the bar chart keeps
// the layout rules.
func TestWorkloadView(t *testing.T) {
	t.Parallel()
	w, err := workload.Load(filepath.Join("..", "experiments", "workloads", "long-context.csv"))
	if err != nil {
		t.Fatal(err)
	}
	recs := loadH200(t, "slice.jsonl")
	rep, err := Build(recs, Options{MaxArms: DefaultMaxArms, Workload: w})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Workload == nil || len(rep.Workload.Shapes) != 1 {
		t.Fatalf("workload view %+v, want the slice's one shape", rep.Workload)
	}
	ws := rep.Workload.Shapes[0]
	landedAt := map[int]float64{}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		if st := r.Probe(shipProbe); r.Landed && st != nil {
			landedAt[r.NKV] = st.MedianNS
		}
	}
	want := 0.0
	for _, b := range w.Buckets {
		m, ok := landedAt[b.NKV]
		if !ok { // 16384 lies between the measured 8192 and 32768
			m = landedAt[8192] + (landedAt[32768]-landedAt[8192])*float64(b.NKV-8192)/float64(32768-8192)
		}
		want += b.Weight * m
	}
	var kinds []string
	prev := 0.0
	for _, c := range ws.Candidates {
		kinds = append(kinds, c.Kind)
		if !(c.Time.Lo <= c.Time.Center && c.Time.Center <= c.Time.Hi) || c.Time.Center < prev {
			t.Errorf("%s: %+v (after %g): interval or order wrong", c.Name, c.Time, prev)
		}
		prev = c.Time.Center
		if c.Kind == "landed" && (math.Abs(c.Time.Center-want) > 1e-6*want || math.Abs(c.VsLanded.Center-1) > 1e-12) {
			t.Errorf("landed: %g ns per step (ratio %g), want %g", c.Time.Center, c.VsLanded.Center, want)
		}
	}
	joined := strings.Join(kinds, " ")
	if !strings.Contains(joined, "dispatch") || !strings.Contains(joined, "landed") {
		t.Errorf("candidate kinds %q: want the recommended dispatch and landed", joined)
	}
	figs, err := rep.figures(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var md bytes.Buffer
	bars := 0
	var plots []PlotFile
	for _, fg := range figs {
		plots = append(plots, fg.file)
		if fg.file.Kind == "workload" {
			bars++
			checkLayout(t, fg.file.Base, fg.fig)
		}
	}
	if bars != 1 {
		t.Errorf("%d workload bar charts, want 1", bars)
	}
	if err := rep.WriteMarkdown(&md, plots, "."); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Under workload long-context", "| landed (interpolated)", "](workload_7b.png)"} {
		if !strings.Contains(md.String(), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
}
