package report

import (
	"bytes"
	"testing"
)

func TestTables(t *testing.T) {
	recs := loadJSONL(t, "fixture.jsonl")
	rep, err := Build(recs, Options{Layers: 28, StepMS: 12})
	if err != nil {
		t.Fatal(err)
	}
	var text, md, csv, sum bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := rep.WriteMarkdownTable(&md); err != nil {
		t.Fatal(err)
	}
	if err := SummaryTable(&sum, recs); err != nil {
		t.Fatal(err)
	}
	golden(t, "table.txt.golden", text.Bytes())
	golden(t, "table.md.golden", md.Bytes())
	if err := rep.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	golden(t, "summary.txt.golden", sum.Bytes())
	golden(t, "tables.csv.golden", csv.Bytes())
}
