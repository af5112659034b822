package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/sweep"
)

const h200Faults = "../../experiments/results/h200/faults.jsonl"

// tune --from writes no table over an unreadable line or over records that
// are not evidence: the table is what an engine ships.
func TestTuneRefusesDamagedEvidence(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runCmd("tune", "--from", h200Slice, "-o", filepath.Join(dir, "intact")); code != exitOK {
		t.Fatalf("intact: exit %d\n%s", code, stderr)
	}
	corrupt := damage(t, h200Slice, 10)
	if _, _, code := runCmd("tune", "--from", corrupt, "-o", filepath.Join(dir, "corrupt")); code == exitOK {
		t.Errorf("a corrupt line: exit 0")
	}
	// Negated samples made the slowest configuration look the fastest.
	recs := readJRecs(t, h200Slice)
	for _, r := range recs {
		for _, p := range probesOf(r) {
			s := p.(jrec)["samples_ns"].([]any)
			for k := range s {
				x, _ := s[k].(json.Number).Float64()
				s[k] = -x
			}
		}
		break
	}
	f := writeJRecs(t, dir, "neg.jsonl", recs)
	out := filepath.Join(dir, "neg")
	_, stderr, code := runCmd("tune", "--from", f, "-o", out)
	if code == exitOK || !strings.Contains(stderr, "not evidence") {
		t.Errorf("negated samples: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, "dispatch.yaml")); err == nil {
		t.Errorf("a table was written over records that are not evidence")
	}
}

// The fault spec's good kernels are fixtures by their own record, not by
// the faulting kernels beside them in the input.
func TestTuneAndShipNeverNameAFixture(t *testing.T) {
	var keep []jrec
	for _, r := range readJRecs(t, h200Faults) {
		if k, _ := cfgOf(r)["kernel"].(string); !results.FixtureKernel(k) {
			keep = append(keep, r)
		}
	}
	if len(keep) == 0 {
		t.Fatal("faults.jsonl holds no good kernel")
	}
	dir := t.TempDir()
	f := writeJRecs(t, dir, "good.jsonl", keep)
	out := filepath.Join(dir, "tab")
	_, stderr, code := runCmd("tune", "--from", f, "-o", out)
	if b, err := os.ReadFile(filepath.Join(out, "dispatch.yaml")); err == nil && strings.Contains(string(b), "variant:") {
		t.Errorf("a dispatch table names a fixture (exit %d):\n%s\n%s", code, b, stderr)
	}
	for _, only := range []string{"", "variant=d2-after-oob"} {
		args := []string{"report", "--json", f}
		if only != "" {
			args = append(args, "--only", only)
		}
		stdout, stderr, code := runCmd(args...)
		if code != exitOK {
			t.Fatalf("report %v: exit %d\n%s", args, code, stderr)
		}
		var doc struct {
			Ship []json.RawMessage `json:"ship"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
			t.Fatal(err)
		}
		if len(doc.Ship) > 0 {
			t.Errorf("report %v: what to ship names a fixture: %s", args, doc.Ship[0])
		}
	}
}

func TestMergeIncompleteIsNotSuccess(t *testing.T) {
	base := t.TempDir()
	s0 := filepath.Join(base, "shard-0")
	writeShard(t, s0, 0, 2, "aaaa000000000001", "aaaa000000000003")
	// Shard 1 of 2 is missing.
	if _, _, code := runCmd("merge", "-o", filepath.Join(base, "m1"), s0); code == exitOK {
		t.Errorf("a missing shard: exit 0")
	}
	// Both shards, the second stopped before its last point: it set out
	// to record 3 and holds 2.
	s1 := filepath.Join(base, "shard-1")
	writeShard(t, s1, 1, 2, "aaaa000000000002", "aaaa000000000004")
	m, err := sweep.ReadManifest(s1)
	if err != nil || m == nil {
		t.Fatal(m, err)
	}
	m.Selected = 3
	if err := sweep.WriteManifest(s1, m); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runCmd("merge", "-o", filepath.Join(base, "m3"), s0, s1); code == exitOK || !strings.Contains(stderr, "stopped early") {
		t.Errorf("a shard that stopped early: exit %d\n%s", code, stderr)
	}
	// An empty input: nothing to merge, nothing written.
	empty := filepath.Join(base, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(base, "m2")
	if _, _, code := runCmd("merge", "-o", out, empty); code == exitOK {
		t.Errorf("an empty input: exit 0")
	}
	if _, err := os.Stat(results.FilePath(out)); err == nil {
		t.Errorf("an empty input wrote %s", results.FilePath(out))
	}
}
