package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

func TestGateExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--candidate", "slow"}, exitRegression},  // 10% slower
		{[]string{"--candidate", "onebyte"}, exitNumerics}, // one byte off its twin
		{[]string{"--candidate", "same"}, exitOK},          // within noise
		{[]string{"--candidate", "slow", "--threshold", "0.2"}, exitOK},
		{[]string{"--candidate", "r4", "--define", "SPLITS=64"}, exitRegression},   // real: slower at short contexts
		{[]string{"--candidate", "r4", "--only", "SPLITS=64"}, exitRegression},     // the same, in the one filter syntax
		{[]string{"--candidate", "r4", "--only", "SPLITS=64|128,NR=7"}, exitUsage}, // selects no record of r4, as sweep's and report's --only
		{[]string{"--candidate", "r4", "--only", "SPLITS"}, exitUsage},
		{[]string{"--candidate", "nosuch"}, exitError},
		{[]string{"--candidate", "same", "--probes", "warm"}, exitUsage},
		{[]string{"--threshold", "0.02"}, exitUsage}, // no candidate
	} {
		args := append([]string{"gate"}, tc.args...)
		args = append(args, h200Slice, fixtureGate)
		_, stderr, code := runCmd(args...)
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d; stderr: %s", args, code, tc.code, stderr)
		}
	}
	if _, _, code := runCmd("gate", "--candidate", "same", filepath.Join(t.TempDir(), "none.jsonl")); code != exitError {
		t.Errorf("unreadable file: exit %d, want %d", code, exitError)
	}
}

func TestGateJSON(t *testing.T) {
	stdout, _, code := runCmd("gate", "--candidate", "slow", "--json", h200Slice, fixtureGate)
	if code != exitRegression {
		t.Fatalf("exit %d", code)
	}
	var doc struct {
		Verdict  string `json:"verdict"`
		ExitCode int    `json:"exit_code"`
		Points   []struct {
			NKV        int    `json:"nkv"`
			Regression bool   `json:"regression"`
			Reason     string `json:"reason"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("--json output is not one JSON document: %v\n%s", err, stdout)
	}
	if doc.Verdict != "regression" || doc.ExitCode != exitRegression || len(doc.Points) == 0 {
		t.Errorf("doc %+v", doc)
	}
	for _, p := range doc.Points {
		if !p.Regression || !strings.Contains(p.Reason, "slower") {
			t.Errorf("point nkv=%d: %+v", p.NKV, p)
		}
	}
	if strings.Contains(stdout, "\x1b[") {
		t.Error("--json output carries terminal escapes")
	}
}

// In the SPEC form the baseline is the spec's landed entry (slice.yaml
// lands d2 with SPLITS=32), not the records marked landed. The results
// given here mark r4 SPLITS=32 landed instead, so that the two readings
// differ: against r4 SPLITS=32 (faster than d2 at long contexts) the
// resampled d2 "same" would regress.
func TestGateSpecForm(t *testing.T) {
	dir := t.TempDir()
	recs, _, err := results.ReadFiles(h200Slice, fixtureGate)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		r.Landed = r.Config.Variant == "r4" && r.Config.Splits == 32
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "results.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// The records' reading: a regression against r4.
	if _, _, code := runCmd("gate", "--candidate", "same", filepath.Join(dir, "results.jsonl")); code != exitRegression {
		t.Fatalf("against the records marked landed: exit %d, want %d", code, exitRegression)
	}
	const spec = "../../experiments/slice.yaml"
	stdout, stderr, code := runCmd("gate", spec, "--candidate", "same", "--results", dir, "--json")
	if code != exitOK {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	var doc struct {
		Baseline string `json:"baseline"`
		Points   []struct {
			Baseline string `json:"baseline"`
		} `json:"points"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Baseline != "d2 SPLITS=32" || len(doc.Points) == 0 || !strings.HasPrefix(doc.Points[0].Baseline, "d2 SPLITS=32") {
		t.Errorf("baseline %q, points %+v; want the spec's landed d2 SPLITS=32", doc.Baseline, doc.Points)
	}
	// One byte off its twin fails numerics whatever the baseline.
	if _, _, code := runCmd("gate", spec, "--candidate", "onebyte", "--results", dir); code != exitNumerics {
		t.Errorf("onebyte with a failed gate: exit %d, want %d", code, exitNumerics)
	}
	if _, _, code := runCmd("gate", spec, "--candidate", "same", "--results", dir, "--against", "r4"); code != exitUsage {
		t.Errorf("--against with SPEC: exit %d, want %d", code, exitUsage)
	}
}
