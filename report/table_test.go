package report

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/ktune/ktune/internal/golden"
)

// The table goldens render the slice experiment as measured on the H200:
// r4 and d2 at SPLITS 8..64 over eight context lengths, d2 SPLITS=32
// landed, cold and hot probes, and a few cold points flagged unconverged.
func TestTables(t *testing.T) {
	recs := loadH200(t, "slice.jsonl")
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
	if err := rep.WriteCSV(&csv); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "table.txt.golden"), text.Bytes())
	golden.Check(t, filepath.Join("testdata", "table.md.golden"), md.Bytes())
	golden.Check(t, filepath.Join("testdata", "summary.txt.golden"), sum.Bytes())
	golden.Check(t, filepath.Join("testdata", "tables.csv.golden"), csv.Bytes())
}

// A gate failure shows in the verdict column and in the failure list with
// its evidence: the onebyte candidate next to the real records.
func TestTableGateFailure(t *testing.T) {
	recs := append(loadH200(t, "slice.jsonl"), loadJSONL(t, "gate.jsonl")...)
	rep, err := Build(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "table_gatefail.txt.golden"), text.Bytes())
	if len(rep.Failures) != 1 {
		t.Fatalf("%d failures, want the onebyte one: %+v", len(rep.Failures), rep.Failures)
	}
	f := rep.Failures[0]
	if f.Row.Variant != "onebyte" || f.Gate == nil || f.Gate.DiffBytes != 1 || len(f.NKVs) != len(landedRecords(recs)) {
		t.Errorf("failure %+v at nkv %v", f.Gate, f.NKVs)
	}
}
