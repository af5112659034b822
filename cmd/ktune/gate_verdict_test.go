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

// damage writes a copy of src into a temporary directory with line n
// (1-based) broken by one extra brace, as `sed 'Ns/^{/{{/'` does.
func damage(t *testing.T, src string, n int) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) < n {
		t.Fatalf("%s has %d lines, want ≥ %d", src, len(lines), n)
	}
	lines[n-1] = "{" + lines[n-1]
	path := filepath.Join(t.TempDir(), "damaged.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// One unreadable line (the record that makes d2 a regression) must not
// turn the verdict into a pass: the gate says how many lines it skipped,
// and as that line held a candidate configuration's record at one length,
// names the hole it left (incomplete, even with --allow-damaged). A
// damaged line that hides nothing makes the gate undecided, and passes
// only when told to accept damaged input.
func TestGateDamagedInput(t *testing.T) {
	if _, _, code := runCmd("gate", "--candidate", "d2", h200Slice); code != exitRegression {
		t.Fatalf("intact slice.jsonl: exit %d, want %d", code, exitRegression)
	}
	f := damage(t, h200Slice, 60)
	stdout, _, code := runCmd("gate", "--candidate", "d2", f)
	if code != exitError || !strings.Contains(stdout, "nkv=512: candidate d2 HEAD_DIM=128 KV_F16=1 NR=4 SPLITS=64 has no record here") {
		t.Errorf("damaged input: exit %d, want %d naming the hole\n%s", code, exitError, stdout)
	}
	if !strings.Contains(stdout, "skipped 1 input record") {
		t.Errorf("the text does not count the skipped line:\n%s", stdout)
	}
	stdout, _, code = runCmd("gate", "--candidate", "d2", "--json", f)
	var doc struct {
		Verdict  string   `json:"verdict"`
		ExitCode int      `json:"exit_code"`
		Skipped  int      `json:"skipped_records"`
		Lines    []string `json:"skipped"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatalf("--json: %v\n%s", err, stdout)
	}
	if code != exitError || doc.Verdict != "incomplete" || doc.ExitCode != exitError || doc.Skipped != 1 ||
		len(doc.Lines) != 1 || !strings.Contains(doc.Lines[0], ":60:") {
		t.Errorf("--json: exit %d, %+v", code, doc)
	}
	if _, _, code := runCmd("gate", "--candidate", "d2", "--allow-damaged", f); code != exitError {
		t.Errorf("--allow-damaged over a hole: exit %d, want %d", code, exitError)
	}
	// r4 passes a 50% threshold; one more line, unreadable, hides nothing.
	if _, _, code := runCmd("gate", "--candidate", "r4", "--threshold", "0.5", h200Slice); code != exitOK {
		t.Fatalf("r4 at a 50%% threshold: exit %d, want %d", code, exitOK)
	}
	data, err := os.ReadFile(h200Slice)
	if err != nil {
		t.Fatal(err)
	}
	g := filepath.Join(t.TempDir(), "garbage.jsonl")
	if err := os.WriteFile(g, append(data, "{\"schema\":1,\"hash\":\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, code := runCmd("gate", "--candidate", "r4", "--threshold", "0.5", g); code != exitUndecided {
		t.Errorf("a damaged line: exit %d, want %d", code, exitUndecided)
	}
	if _, _, code := runCmd("gate", "--candidate", "r4", "--threshold", "0.5", "--allow-damaged", g); code != exitOK {
		t.Errorf("--allow-damaged: exit %d, want %d", code, exitOK)
	}
	// The SPEC form reads a results file as well as a directory (r4 is
	// slower than the landed d2 at short contexts).
	if _, stderr, code := runCmd("gate", "../../experiments/slice.yaml", "--candidate", "r4", "--results", h200Slice); code != exitRegression {
		t.Errorf("gate SPEC --results FILE: exit %d, want %d: %s", code, exitRegression, stderr)
	}
}

// twiceAsSlow writes the landed records of slice.jsonl cut to n samples
// per probe, with a candidate "twice" made of the same samples ×2.
func twiceAsSlow(t *testing.T, n int) string {
	t.Helper()
	recs, _, err := results.ReadFile(h200Slice)
	if err != nil {
		t.Fatal(err)
	}
	var out []results.Record
	for _, r := range recs {
		if !r.Landed {
			continue
		}
		for i := range r.Probes {
			m := &r.Probes[i]
			m.SamplesNS = append([]float64(nil), m.SamplesNS[:n]...)
		}
		slow := r
		slow.Landed, slow.Config.Variant, slow.Hash = false, "twice", "2x"+r.Hash
		slow.Probes = make([]results.Measurement, len(r.Probes))
		for i, m := range r.Probes {
			m.SamplesNS = append([]float64(nil), m.SamplesNS...)
			for j := range m.SamplesNS {
				m.SamplesNS[j] *= 2
			}
			slow.Probes[i] = m
		}
		out = append(out, r, slow)
	}
	if len(out) == 0 {
		t.Fatal("slice.jsonl: no landed records")
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range out {
		if err := enc.Encode(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "results.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// A candidate exactly twice as slow as the landed kernel, measured with 3
// samples a side, cannot be shown slower by the U test (its smallest p is
// 0.1): the gate must not pass it. It is undecided and says how many
// samples would decide — and with that many, the gate does decide.
func TestGateUndecidedFewSamples(t *testing.T) {
	path := twiceAsSlow(t, 3)
	stdout, _, code := runCmd("gate", "--candidate", "twice", path)
	if code != exitUndecided {
		t.Fatalf("2x slower with 3 samples a side: exit %d, want %d\n%s", code, exitUndecided, stdout)
	}
	if want := "verdict: undecided"; !strings.Contains(stdout, want) {
		t.Errorf("no %q in\n%s", want, stdout)
	}
	stdout, _, _ = runCmd("gate", "--candidate", "twice", "--json", path)
	var doc struct {
		Undecided      int `json:"undecided"`
		SamplesPerSide int `json:"samples_per_side"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Undecided == 0 || doc.SamplesPerSide <= 3 || doc.SamplesPerSide > 10 {
		t.Fatalf("undecided %d, samples per side %d; want > 0 and 4 to 10 (the landed records hold 10)", doc.Undecided, doc.SamplesPerSide)
	}
	if stdout, _, code := runCmd("gate", "--candidate", "twice", twiceAsSlow(t, doc.SamplesPerSide)); code != exitRegression {
		t.Errorf("with the %d samples a side the verdict asked for: exit %d, want %d\n%s", doc.SamplesPerSide, code, exitRegression, stdout)
	}
}
