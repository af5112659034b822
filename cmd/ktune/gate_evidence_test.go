package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// Each edit below turned `ktune gate --candidate r4 slice.jsonl` (a
// regression at nkv 512, hot probe) into a pass, because the verdict
// trusted what the records said. A verdict rests on evidence now: each is
// undecided, incomplete or a failure, never a pass.

func TestGateNeedsSamplesOnBothSides(t *testing.T) {
	if _, _, code := runCmd("gate", "--candidate", "r4", h200Slice); code != exitRegression {
		t.Fatalf("intact: exit %d, want %d", code, exitRegression)
	}
	for _, side := range []string{"candidate", "baseline"} {
		recs := readJRecs(t, h200Slice)
		for _, r := range recs {
			if (variantOf(r) == "r4") == (side == "candidate") {
				for _, p := range probesOf(r) {
					p.(jrec)["samples_ns"] = []any{}
				}
			}
		}
		f := writeJRecs(t, t.TempDir(), "x.jsonl", recs)
		if stdout, stderr, code := runCmd("gate", "--candidate", "r4", f); code == exitOK {
			t.Errorf("%s samples emptied: exit 0\n%s%s", side, stdout, stderr)
		}
	}
}

// editRegressing applies edit to the record behind the regressing point
// and gates the result.
func editRegressing(t *testing.T, edit func(r jrec, probe string)) (stdout string, code int) {
	t.Helper()
	i, probe := regressing(t, h200Slice, "r4")
	recs := readJRecs(t, h200Slice)
	edit(recs[i], probe)
	f := writeJRecs(t, t.TempDir(), "x.jsonl", recs)
	stdout, _, code = runCmd("gate", "--candidate", "r4", f)
	return stdout, code
}

func TestGateProbeRemovedFromRegressingRecord(t *testing.T) {
	stdout, code := editRegressing(t, func(r jrec, probe string) {
		var keep []any
		for _, p := range probesOf(r) {
			if p.(jrec)["probe"] != probe {
				keep = append(keep, p)
			}
		}
		r["probes"] = keep
	})
	if code == exitOK || !strings.Contains(stdout, "not measured on probe") {
		t.Errorf("the regressing probe removed: exit %d\n%s", code, stdout)
	}
}

func TestGateImpossibleSamples(t *testing.T) {
	for name, f := range map[string]func(x float64) float64{
		"negated": func(x float64) float64 { return -x },
		"zero":    func(float64) float64 { return 0 },
	} {
		stdout, code := editRegressing(t, func(r jrec, probe string) {
			for _, p := range probesOf(r) {
				m := p.(jrec)
				if m["probe"] != probe {
					continue
				}
				s := m["samples_ns"].([]any)
				for k := range s {
					x, _ := s[k].(json.Number).Float64()
					s[k] = f(x)
				}
			}
		})
		if code == exitOK || code == exitRegression && strings.Contains(stdout, "faster by") && !strings.Contains(stdout, "excluded") {
			t.Errorf("%s samples: exit %d\n%s", name, code, stdout)
		}
		if !strings.Contains(stdout, "excluded 1 record") {
			t.Errorf("%s samples: the record is not excluded as evidence:\n%s", name, stdout)
		}
	}
}

// A summary is recomputed from the samples: editing it changes nothing.
func TestGateIgnoresEditedSummary(t *testing.T) {
	_, code := editRegressing(t, func(r jrec, probe string) {
		for _, p := range probesOf(r) {
			m := p.(jrec)
			m["summary"] = jrec{"n": 1, "median": 1, "min": 1, "max": 1, "q1": 1, "q3": 1, "rel_noise": 0}
		}
	})
	if code != exitRegression {
		t.Errorf("summaries edited: exit %d, want %d", code, exitRegression)
	}
}

func TestGateThresholdFinite(t *testing.T) {
	for _, thr := range []string{"NaN", "Inf", "+Inf", "-0.1", "1", "7"} {
		if _, stderr, code := runCmd("gate", "--candidate", "r4", "--threshold", thr, h200Slice); code != exitUsage {
			t.Errorf("--threshold %s: exit %d, want %d\n%s", thr, code, exitUsage, stderr)
		}
	}
}

// In the SPEC form the plan names the points: deleting the regressing
// record leaves a planned point without a record.
func TestGateSpecFormNeedsEveryPlannedPoint(t *testing.T) {
	const spec = "../../experiments/slice.yaml"
	if _, _, code := runCmd("gate", spec, "--candidate", "r4", "--results", h200Slice); code != exitRegression {
		t.Fatalf("intact: exit %d, want %d", code, exitRegression)
	}
	i, _ := regressing(t, h200Slice, "r4")
	recs := readJRecs(t, h200Slice)
	recs = append(recs[:i], recs[i+1:]...)
	f := writeJRecs(t, t.TempDir(), "x.jsonl", recs)
	stdout, _, code := runCmd("gate", spec, "--candidate", "r4", "--results", f)
	if code == exitOK || !strings.Contains(stdout, "planned point") {
		t.Errorf("the regressing record deleted: exit %d\n%s", code, stdout)
	}
}

// failedTwin returns slice.jsonl's records and an older gate_failed
// record of the hash of r4's regressing point.
func failedTwin(t *testing.T) ([]jrec, jrec) {
	t.Helper()
	i, _ := regressing(t, h200Slice, "r4")
	recs := readJRecs(t, h200Slice)
	bad := cloneJ(recs[i])
	bad["status"] = "gate_failed"
	bad["time"] = "2020-01-01T00:00:00Z"
	delete(bad, "probes")
	bad["gates"] = []any{jrec{"kind": "tolerance", "nkv": 512, "pass": false, "seed": 1, "max_abs": 1.0}}
	return recs, bad
}

// A gate failure of a hash in one file stays a failure beside an ok record
// of the same hash in a newer file.
func TestGateFailureAnywhereStays(t *testing.T) {
	recs, bad := failedTwin(t)
	dir := t.TempDir()
	old := writeJRecs(t, dir, "old.jsonl", []jrec{bad})
	stdout, _, code := runCmd("gate", "--candidate", "r4", old, h200Slice)
	if code != exitNumerics {
		t.Errorf("a failing record of the hash in another file: exit %d, want %d\n%s", code, exitNumerics, stdout)
	}
	// And in the same file, superseded by a later ok line of its hash.
	same := writeJRecs(t, dir, "same.jsonl", append([]jrec{bad}, recs...))
	if _, _, code := runCmd("gate", "--candidate", "r4", same); code != exitNumerics {
		t.Errorf("a failing line superseded in its file: exit %d, want %d", code, exitNumerics)
	}
}

// replayedSlice writes slice.jsonl as the replay backend marks it.
func replayedSlice(t *testing.T) []jrec {
	recs := readJRecs(t, h200Slice)
	for _, r := range recs {
		r["replayed"] = jrec{"match": "hash", "hash": r["hash"]}
		env := r["env"].(jrec)
		host, _ := env["host"].(string)
		env["host"] = "replayed:" + host
	}
	return recs
}

// One edited field does not launder a replay into a measurement.
func TestGateReplayMarkSurvivesOneEdit(t *testing.T) {
	for name, edit := range map[string]func(r jrec){
		"replayed null":    func(r jrec) { r["replayed"] = nil },
		"replayed deleted": func(r jrec) { delete(r, "replayed") },
		"host mark gone":   func(r jrec) { r["env"].(jrec)["host"] = "h200" },
	} {
		recs := replayedSlice(t)
		for _, r := range recs {
			edit(r)
		}
		f := writeJRecs(t, t.TempDir(), "x.jsonl", recs)
		// Refused as replayed (2), or the lines read as damage: nothing
		// left to gate (1) or undecided (5); never a verdict drawn as if
		// measured (slice.jsonl's is a regression, 4).
		if stdout, stderr, code := runCmd("gate", "--candidate", "r4", f); code != exitUsage && code != exitUndecided && code != exitError {
			t.Errorf("%s: exit %d, want 2, 5 or 1\n%s%s", name, code, stdout, stderr)
		}
	}
}

func TestExportKeepsReplayMark(t *testing.T) {
	f := writeJRecs(t, t.TempDir(), "x.jsonl", replayedSlice(t)[:2])
	stdout, stderr, code := runCmd("export", "--format", "gobench", f)
	if code != exitOK || !strings.Contains(stdout, "provenance: replayed") {
		t.Errorf("export of replayed records: exit %d, no provenance line\n%s%s", code, stdout, stderr)
	}
	stdout, _, _ = runCmd("export", "--format", "gobench", h200Slice)
	if strings.Contains(stdout, "provenance") {
		t.Errorf("export of measured records names a provenance:\n%.300s", stdout)
	}
}

// Different GPUs between the sides: a warning, and undecided with
// --same-device.
func TestGateEnvironmentIdentity(t *testing.T) {
	recs := readJRecs(t, h200Slice)
	for _, r := range recs {
		if variantOf(r) == "r4" {
			env := r["env"].(jrec)
			env["uuid"] = "GPU-other"
			env["driver"] = "12.4"
		}
	}
	f := writeJRecs(t, t.TempDir(), "x.jsonl", recs)
	stdout, _, code := runCmd("gate", "--candidate", "r4", "--threshold", "0.9", f)
	if !strings.Contains(stdout, "different machines") || !strings.Contains(stdout, "driver 12.4 vs") {
		t.Errorf("no warning about the machines (exit %d):\n%s", code, stdout)
	}
	if _, _, code := runCmd("gate", "--candidate", "r4", "--threshold", "0.9", "--same-device", f); code != exitUndecided {
		t.Errorf("--same-device over two machines: exit %d, want %d", code, exitUndecided)
	}
}

// The report's "what to ship" follows gate's rule: an ok record of a hash
// that failed in another file, or on a superseded line of its own file,
// is not shipped.
func TestReportShipFailureAnywhereStays(t *testing.T) {
	recs, bad := failedTwin(t)
	dir := t.TempDir()
	old := writeJRecs(t, dir, "old.jsonl", []jrec{bad})
	same := writeJRecs(t, dir, "same.jsonl", append([]jrec{bad}, recs...))
	for name, paths := range map[string][]string{"another file": {old, h200Slice}, "superseded line": {same}} {
		var stderr bytes.Buffer
		got, _, err := loadSourced(&stderr, paths)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		ok := 0
		for _, r := range got {
			if r.Status != "ok" {
				continue
			}
			ok++
			if r.Hash == bad["hash"] {
				t.Errorf("%s: the ok record of the failed hash %v is still there", name, bad["hash"])
			}
		}
		if !strings.Contains(stderr.String(), "failed elsewhere in the input") {
			t.Errorf("%s: no warning on stderr:\n%s", name, stderr.String())
		}
		if ok != len(recs)-1 {
			t.Errorf("%s: %d ok records, want %d (all but the failed hash)", name, ok, len(recs)-1)
		}
	}
}
