package report

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// The printed change is the Hodges-Lehmann estimate, the centre of the
// interval the gate judges, not the ratio of the medians: on samples where
// the two estimators part, the row, its JSON and the table all show the
// one the interval is built around.
func TestDeltaIsTheIntervalsCentre(t *testing.T) {
	// A tight old side against a new one in two clusters, 6 and 6: the
	// new median falls between the clusters, the pairwise ratios do not.
	var old, new []float64
	for i := range 12 {
		old = append(old, 100+float64(i)*0.5)
		gap := 0.0
		if i >= 6 {
			gap = 40
		}
		new = append(new, 104+gap+float64(i)*0.5)
	}
	c := stats.Compare(old, new, decision.Alpha)
	hl, medians := c.Change*100, (c.Ratio-1)*100
	if math.Abs(hl-medians) < 1 {
		t.Fatalf("the samples do not part the estimators: Hodges-Lehmann %+.2f%%, medians %+.2f%%", hl, medians)
	}
	rec := &results.Record{Config: results.Config{Variant: "d2", NKV: 64}}
	row := compareSamples(rec, results.ProbeCold, old, new)
	if row.DeltaPct != hl || row.DeltaPct < row.RatioLo*100 || row.DeltaPct > row.RatioHi*100 {
		t.Errorf("delta %+.2f%%, interval [%+.2f%%, %+.2f%%]; want the Hodges-Lehmann %+.2f%% inside it (medians give %+.2f%%)",
			row.DeltaPct, row.RatioLo*100, row.RatioHi*100, hl, medians)
	}
	if !row.Significant {
		t.Fatalf("p=%.3f: the table would print ~", row.P)
	}
	var out bytes.Buffer
	if err := (&Comparison{Rows: []CompareRow{row}}).WriteText(&out, false); err != nil {
		t.Fatal(err)
	}
	// The geomean line below the table is of the medians, and says so.
	table, legend, _ := strings.Cut(out.String(), "\nmedians with")
	want, wrong := fmt.Sprintf("%+.2f%%", hl), fmt.Sprintf("%+.2f%%", medians)
	if !strings.Contains(table, want) || strings.Contains(table, wrong) || !strings.Contains(legend, "Hodges-Lehmann") {
		t.Errorf("the table should print %s (Hodges-Lehmann), not %s (medians):\n%s", want, wrong, out.String())
	}
	if d := (&Comparison{Rows: []CompareRow{row}}).Doc(); d.Rows[0].DeltaPct != hl || d.Schema < 2 {
		t.Errorf("JSON delta_pct %+.2f%% (schema %d), want %+.2f%%", d.Rows[0].DeltaPct, d.Schema, hl)
	}
}
