package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The committed workloads over the committed slice: r4 is about 2× faster
// where a long-context service spends its steps and 4.3% slower (hot
// probe) at nkv 512. Point by point the gate says regression; weighted by
// long-context.csv (3% of the steps at 512) it passes with the weighted
// change printed, and weighted by short-turns.csv (25% at 512) it fails
// naming the bucket.
func TestGateWorkload(t *testing.T) {
	spec := filepath.Join("..", "..", "experiments", "slice.yaml")
	wl := func(name string) string { return filepath.Join("..", "..", "experiments", "workloads", name) }
	gate := func(extra ...string) (string, string, int) {
		return runCmd(append([]string{"gate", spec, "--candidate", "r4", "--results", h200Slice}, extra...)...)
	}
	out, _, code := gate()
	if code != exitRegression || !strings.Contains(out, "verdict: regression (16 point(s): 15 faster, 1 slower beyond the threshold") {
		t.Errorf("without a workload: exit %d, want %d and the counts on the verdict line:\n%s", code, exitRegression, out)
	}
	out, stderr, code := gate("--workload", wl("long-context.csv"))
	if code != exitOK {
		t.Fatalf("long-context workload: exit %d, want pass; stderr: %s\n%s", code, stderr, out)
	}
	for _, want := range []string{
		"expected attention time per step: candidate ",
		"pass: weighted change -50.",
		"interpolated between measured nkv 8192 and 32768",
		"regressed buckets carry 3.0% of the steps ≤ 5.0%: batch 1, nkv 512",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("long-context workload: output lacks %q:\n%s", want, out)
		}
	}
	out, stderr, code = gate("--workload", wl("short-turns.csv"))
	if code != exitRegression || !strings.Contains(out, "REGRESSION hidden in the total") ||
		!strings.Contains(out, "batch 1, nkv 512 (25.0% of the steps) slower by 4.3%") {
		t.Errorf("short-turns workload: exit %d, want %d naming the bucket; stderr: %s\n%s", code, exitRegression, stderr, out)
	}
	// The error a CI log ends with names the bucket too.
	err := run(io.Discard, io.Discard, []string{"gate", spec, "--candidate", "r4", "--results", h200Slice, "--workload", wl("short-turns.csv")})
	if err == nil || !strings.Contains(err.Error(), "probe hot: REGRESSION hidden in the total") || !strings.Contains(err.Error(), "nkv 512") {
		t.Errorf("short-turns workload: error %v, want it to name the probe and the bucket", err)
	}
	// The allowed share is the user's: 30% lets the short turns pass.
	if _, stderr, code := gate("--workload", wl("short-turns.csv"), "--max-regressed-weight", "0.3"); code != exitOK {
		t.Errorf("--max-regressed-weight 0.3: exit %d, want pass; %s", code, stderr)
	}
	// A bucket beyond the measured nkv is refused, never extrapolated:
	// the gate cannot pass on it.
	far := filepath.Join(t.TempDir(), "far.yaml")
	if err := os.WriteFile(far, []byte("workload: 1\nbuckets:\n  - {batch: 1, nkv: 8192, weight: 1}\n  - {batch: 1, nkv: 131072, weight: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = gate("--workload", far, "--json")
	if code != exitUndecided {
		t.Fatalf("a bucket beyond the measured range: exit %d, want %d; %s", code, exitUndecided, stderr)
	}
	var doc struct {
		Workload struct {
			Groups []struct {
				Refused []struct {
					NKV    int    `json:"nkv"`
					Reason string `json:"reason"`
				} `json:"refused"`
				Covered float64 `json:"covered"`
			} `json:"groups"`
		} `json:"workload"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatal(err)
	}
	if g := doc.Workload.Groups; len(g) == 0 || len(g[0].Refused) != 1 || g[0].Refused[0].NKV != 131072 || g[0].Covered != 0.5 {
		t.Errorf("refused buckets in --json: %+v", doc.Workload)
	}
	if _, _, code := gate("--workload", filepath.Join(t.TempDir(), "none.csv")); code != exitUsage {
		t.Errorf("a missing workload file: exit %d, want %d", code, exitUsage)
	}
}
