package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// TestEnergyColumn: a probe's energy per step shows beside its time, in
// that probe's table only, on the row it was measured at; a point the
// counter could not resolve says so, and a table without energy keeps its
// columns.
func TestEnergyColumn(t *testing.T) {
	recs := loadH200(t, "slice.jsonl")
	var measured, unmeasurable *results.Record
	for i := range recs {
		r := &recs[i]
		if r.Probe(results.ProbeHot) == nil || r.Config.Variant != "d2" {
			continue
		}
		switch {
		case measured == nil:
			measured = r
			r.Probe(results.ProbeHot).Energy = &results.Energy{Method: results.EnergyMethodNVML, Steps: 1000, UJPerStep: 1234.4, EnergyMJ: 1234.4}
		case unmeasurable == nil && r.Config.NKV != measured.Config.NKV:
			unmeasurable = r
			r.Probe(results.ProbeHot).Energy = &results.Energy{Method: results.EnergyMethodNVML, Unmeasurable: "too short"}
		}
	}
	if unmeasurable == nil {
		t.Fatal("the fixture has no two d2 hot records")
	}
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	cold := text.String()
	var md bytes.Buffer
	if err := rep.WriteMarkdownTable(&md); err != nil {
		t.Fatal(err)
	}
	mdOut := md.String()
	hot := strings.Index(mdOut, "hot probe")
	if hot < 0 {
		t.Fatalf("no hot table in the markdown:\n%s", mdOut)
	}
	for _, c := range []struct {
		name, out, head string
	}{{"text cold", cold, "warm µJ/step"}, {"markdown hot", mdOut[hot:], "µJ/step"}} {
		if !strings.Contains(c.out, c.head) {
			t.Errorf("%s: no %q column:\n%s", c.name, c.head, c.out)
			continue
		}
		found := map[string]bool{}
		for _, line := range strings.Split(c.out, "\n") {
			for _, w := range []struct {
				r    *results.Record
				cell string
			}{{measured, "1234"}, {unmeasurable, "unmeasurable"}} {
				cells := strings.FieldsFunc(line, func(r rune) bool { return r == '│' || r == '|' })
				if len(cells) > 2 && strings.TrimSpace(cells[0]) == configCell(rowOf(t, rep, w.r)) && strings.TrimSpace(cells[1]) == fmt.Sprint(w.r.Config.NKV) {
					found[w.cell] = strings.Contains(line, w.cell)
				}
			}
		}
		if !found["1234"] || !found["unmeasurable"] {
			t.Errorf("%s: energy cells on their rows: %v\n%s", c.name, found, c.out)
		}
	}
	var js bytes.Buffer
	if err := rep.WriteJSON(&js, nil, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(js.String(), `"uj_per_step": 1234.4`) || !strings.Contains(js.String(), `"energy_unmeasurable": "too short"`) {
		t.Errorf("the JSON document lacks the energy of its rows")
	}
	// Without energy the tables keep their columns (the goldens of
	// TestTables hold the rest).
	for i := range recs {
		if m := recs[i].Probe(results.ProbeHot); m != nil {
			m.Energy = nil
		}
	}
	rep, err = Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md.Reset()
	if err := rep.WriteMarkdownTable(&md); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(md.String(), "µJ") {
		t.Errorf("an energy column without energy")
	}
}

func rowOf(t *testing.T, rep *Report, r *results.Record) *Row {
	t.Helper()
	for i := range rep.Rows {
		row := &rep.Rows[i]
		if row.Variant == r.Config.Variant && row.NKV == r.Config.NKV && row.Splits == r.Config.Splits {
			return row
		}
	}
	t.Fatalf("no row for %s nkv %d", r.Config.Variant, r.Config.NKV)
	return nil
}
