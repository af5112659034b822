package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/report"
)

func decodeCompare(t *testing.T, stdout string) report.CompareDoc {
	t.Helper()
	var doc report.CompareDoc
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("compare --json is not a CompareDoc: %v\n%s", err, stdout)
	}
	return doc
}

func TestCompareJSON(t *testing.T) {
	stdout, stderr, code := runCmd("compare", "--json", h200Slice, h200Rerun)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	doc := decodeCompare(t, stdout)
	if doc.Schema != report.CompareSchema || doc.Alpha != decision.Alpha || len(doc.Rows) == 0 || len(doc.OnlyOld) == 0 {
		t.Errorf("schema %d, alpha %g, %d rows, %d only-old", doc.Schema, doc.Alpha, len(doc.Rows), len(doc.OnlyOld))
	}
	for _, r := range doc.Rows {
		if r.Delta != "~" || r.Significant || r.RatioLoPct == nil || r.RatioHiPct == nil || *r.RatioLoPct > 0 || *r.RatioHiPct < 0 {
			t.Errorf("the landed point measured twice: %+v", r)
		}
	}
	if doc.EnvWarning != "" || strings.Contains(stderr, "different GPUs") {
		t.Errorf("same machine, but warned: %q %q", doc.EnvWarning, stderr)
	}
	if _, _, code := runCmd("compare", "--json", "--markdown", h200Slice, h200Rerun); code != exitUsage {
		t.Errorf("--json --markdown: exit %d, want %d", code, exitUsage)
	}
}

// A damaged old file: the skipped line is counted in the text and in the
// JSON document, not only warned about.
func TestCompareCountsSkipped(t *testing.T) {
	f := damage(t, h200Slice, 60)
	stdout, _, code := runCmd("compare", f, h200Rerun)
	if code != exitOK || !strings.Contains(stdout, "could not be read: 1 old, 0 new") {
		t.Errorf("exit %d, no count of the skipped line:\n%s", code, stdout)
	}
	stdout, _, _ = runCmd("compare", "--json", f, h200Rerun)
	if doc := decodeCompare(t, stdout); doc.Old.SkippedRecords != 1 || doc.New.SkippedRecords != 0 {
		t.Errorf("skipped %d old, %d new; want 1, 0", doc.Old.SkippedRecords, doc.New.SkippedRecords)
	}
}

// Two files from different drivers: compare says so on stderr, in the
// text and in the JSON document.
func TestCompareWarnsOtherMachine(t *testing.T) {
	recs, _, err := results.ReadFile(h200Rerun)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range recs {
		recs[i].Env.Driver = "12.8"
		if err := enc.Encode(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "other.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCmd("compare", h200Slice, path)
	if code != exitOK || !strings.Contains(stderr, "different GPUs or drivers") || !strings.Contains(stdout, "driver 12.8") {
		t.Errorf("exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}
	stdout, _, _ = runCmd("compare", "--json", h200Slice, path)
	doc := decodeCompare(t, stdout)
	if doc.EnvWarning == "" || len(doc.New.Envs) != 1 || !strings.Contains(doc.New.Envs[0], "driver 12.8") {
		t.Errorf("env warning %q, new envs %q", doc.EnvWarning, doc.New.Envs)
	}
}
