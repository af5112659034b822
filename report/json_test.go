package report

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/results"
)

// The JSON document of the slice experiment at two context lengths, as a
// golden file: it is the schema's worked example. It decodes into
// Document with no field left over, and carries its schema version.
func TestDocumentJSON(t *testing.T) {
	var recs []results.Record
	for _, r := range loadH200(t, "slice.jsonl") {
		if r.Config.NKV == 512 || r.Config.NKV == 32768 {
			recs = append(recs, r)
		}
	}
	rep, err := Build(recs, Options{Layers: 28, StepMS: 12})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := rep.WriteJSON(&b, nil, ""); err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "report.json.golden"), b.Bytes())
	dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.DisallowUnknownFields()
	var d Document
	if err := dec.Decode(&d); err != nil {
		t.Fatal(err)
	}
	if d.Schema != DocumentSchema || len(d.Rows) != len(rep.Rows) || len(d.Ship) != 1 || d.Projection == nil {
		t.Errorf("schema %d, %d rows, %d shipped shapes, projection %v", d.Schema, len(d.Rows), len(d.Ship), d.Projection != nil)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b.Bytes(), &top); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "probes", "environments", "ship", "rows", "failures", "warnings"} {
		if _, ok := top[k]; !ok {
			t.Errorf("no %q field", k)
		}
	}
}
