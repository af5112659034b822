package verdict

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/results"
)

// loadJSONL reads a results file of testdata as written, the line-by-line
// JSON a test fixture is.
func loadJSONL(t testing.TB, path string) []results.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []results.Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r results.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// gateInput is the real slice experiment plus the transformed
// candidates of report's testdata/gate.jsonl (report/fixture_test.go makes
// and checks them).
func gateInput(t *testing.T) []results.Record {
	return append(loadJSONL(t, "../experiments/results/h200/slice.jsonl"), loadJSONL(t, "../report/testdata/gate.jsonl")...)
}

func TestGate(t *testing.T) {
	recs := gateInput(t)
	for _, tc := range []struct {
		name    string
		opts    GateOptions
		verdict Verdict
	}{
		// Every sample of the landed kernel ×1.10.
		{"slower", GateOptions{Candidate: "slow", Threshold: 0.02}, VerdictRegression},
		// The landed kernel with one byte off r4 at one gate point.
		{"onebyte", GateOptions{Candidate: "onebyte", Threshold: 0.02}, VerdictNumerics},
		// The landed kernel's samples resampled.
		{"noise", GateOptions{Candidate: "same", Threshold: 0.02}, VerdictPass},
		// Real data: r4 pinned to SPLITS=64 against the landed d2
		// SPLITS=32 is slower at short contexts (12.4 µs against 9.3 µs
		// cold at nkv=1), where 64 splits mostly idle.
		{"pinned", GateOptions{Candidate: "r4", Only: results.DefinesFilter(map[string]string{"SPLITS": "64"}), Threshold: 0.02}, VerdictRegression},
		// A threshold above the slowdown lets the slow candidate through.
		{"threshold", GateOptions{Candidate: "slow", Threshold: 0.2}, VerdictPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := Gate(recs, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.verdict {
				t.Errorf("verdict %s, want %s", res.Verdict, tc.verdict)
			}
			var out bytes.Buffer
			if err := res.WriteText(&out); err != nil {
				t.Fatal(err)
			}
			js, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", "gate_"+tc.name+".txt.golden"), out.Bytes())
			golden.Check(t, filepath.Join("testdata", "gate_"+tc.name+".json.golden"), append(js, '\n'))
		})
	}
}

// The slow candidate is 10% slower at every point and probe, so every
// point is a regression by about 10%.
func TestGateSlowerEverywhere(t *testing.T) {
	res, err := Gate(gateInput(t), GateOptions{Candidate: "slow", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Points) == 0 {
		t.Fatal("no points")
	}
	for _, p := range res.Points {
		if !p.Regression || math.Abs(p.DeltaPct-10) > 0.01 {
			t.Errorf("nkv=%d %s: regression=%v delta %.3f%%, want a 10%% regression", p.NKV, p.Probe, p.Regression, p.DeltaPct)
		}
	}
}

func TestGateMissingAndErrors(t *testing.T) {
	recs := gateInput(t)
	if _, err := Gate(recs, GateOptions{Candidate: "nosuch"}); err == nil {
		t.Error("no error for an unknown candidate")
	}
	// Drop the candidate's record at one nkv: the point is missing.
	var cut []results.Record
	for _, r := range recs {
		if r.Config.Variant == "same" && r.Config.NKV == 8192 {
			continue
		}
		cut = append(cut, r)
	}
	res, err := Gate(cut, GateOptions{Candidate: "same", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictIncomplete || len(res.Missing) != 1 {
		t.Errorf("verdict %s, missing %q; want incomplete with one point", res.Verdict, res.Missing)
	}
	// A bitwise-class candidate without a recorded bitwise gate fails.
	var nogate []results.Record
	for _, r := range recs {
		if r.Config.Variant == "same" {
			r.Gates = nil
		}
		nogate = append(nogate, r)
	}
	res, err = Gate(nogate, GateOptions{Candidate: "same", Threshold: 0.02})
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != VerdictNumerics {
		t.Errorf("verdict %s without gate evidence, want numerics", res.Verdict)
	}
	// Every point of the candidate ended in an error that says nothing
	// of its numerics (an OOM; a sanitizer run that decided nothing, with
	// the runs that passed): incomplete, not a pass and not a numerics
	// failure. A failed gate anywhere still outweighs the errors.
	for _, c := range []struct {
		status results.Status
		gates  []results.Gate
	}{
		{results.StatusOOM, nil},
		{results.StatusError, []results.Gate{{Kind: results.GateSanitizer, Pass: true, Detail: "memcheck: no errors"}}},
	} {
		var errored []results.Record
		for _, r := range recs {
			if r.Config.Variant == "same" {
				r.Status, r.Gates, r.Probes, r.Error = c.status, c.gates, nil, "the point ended in an error (test)"
			}
			errored = append(errored, r)
		}
		res, err = Gate(errored, GateOptions{Candidate: "same", Threshold: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != VerdictIncomplete {
			t.Errorf("%s candidate: verdict %s, want incomplete", c.status, res.Verdict)
		}
		for i := range errored {
			if errored[i].Config.Variant == "same" {
				errored[i].Gates = []results.Gate{{Kind: results.GateTolerance, NKV: errored[i].Config.NKV, Pass: false}}
				break
			}
		}
		res, err = Gate(errored, GateOptions{Candidate: "same", Threshold: 0.02})
		if err != nil {
			t.Fatal(err)
		}
		if res.Verdict != VerdictNumerics {
			t.Errorf("%s candidate with a failed gate: verdict %s, want numerics", c.status, res.Verdict)
		}
	}
}
