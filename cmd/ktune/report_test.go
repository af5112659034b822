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

// The tests run on the committed H200 results. gate.jsonl holds gate
// candidates derived from the real landed records (a 10% slower one, one
// byte off its twin, one within noise); package report's fixture_test.go
// generates it and says how.
const (
	h200Slice   = "../../experiments/results/h200/slice.jsonl"
	h200Rerun   = "../../experiments/results/h200/rerun.jsonl"
	fixtureGate = "../../report/testdata/gate.jsonl"
)

func runCmd(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	err := run(&o, &e, args)
	if err != nil {
		code = exitCode(err)
	}
	return o.String(), e.String(), code
}

func TestReportCommand(t *testing.T) {
	dir := t.TempDir()
	// A results file with a malformed line in the middle: warned, skipped.
	data, err := os.ReadFile(h200Slice)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	bad := strings.Join(lines[:3], "") + "{not json\n" + strings.Join(lines[3:], "")
	in := filepath.Join(dir, "results.jsonl")
	if err := os.WriteFile(in, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report")
	// The gate candidates add a configuration that failed its bitwise gate.
	stdout, stderr, code := runCmd("report", in, fixtureGate, "-o", out, "--layers", "28", "--step-ms", "12")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "results.jsonl:4") {
		t.Errorf("no file:line warning for the bad line; stderr:\n%s", stderr)
	}
	if !strings.Contains(stdout, "d2*") || !strings.Contains(stdout, "FAIL bitwise@29") ||
		!strings.Contains(stdout, "diff_bytes=1") {
		t.Errorf("terminal table lacks the landed row or the failure:\n%s", stdout)
	}
	for _, f := range []string{"report.md", "tables.csv", "nkv_7b.png", "nkv_7b.svg", "speedup_7b.png", "probes_7b.svg"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing output: %v", err)
		}
	}
	md, _ := os.ReadFile(filepath.Join(out, "report.md"))
	if !bytes.Contains(md, []byte("Wall-clock projection")) {
		t.Error("report.md has no projection despite --layers/--step-ms")
	}
}

func TestReportUsage(t *testing.T) {
	for _, args := range [][]string{
		{"report", h200Slice},                                      // no -o
		{"report", "-o", t.TempDir()},                              // no results
		{"report", h200Slice, "-o", t.TempDir(), "--layers", "28"}, // half a projection
		{"compare", h200Slice},
		{"export", "--format", "csv", h200Slice},
	} {
		if _, _, code := runCmd(args...); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
	if _, _, code := runCmd("report", filepath.Join(t.TempDir(), "nope.jsonl"), "-o", t.TempDir()); code != exitError {
		t.Errorf("missing file: exit %d, want %d", code, exitError)
	}
}

// The landed point measured twice is no change; the same file with every
// d2 sample ×0.9 is a 10% improvement.
func TestCompareCommand(t *testing.T) {
	stdout, stderr, code := runCmd("compare", h200Slice, h200Rerun)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := 0
	for _, line := range strings.Split(stdout, "\n") {
		cells := strings.Split(line, "│")
		if len(cells) < 9 || strings.TrimSpace(cells[1]) != "7b" {
			continue
		}
		rows++
		if delta := strings.TrimSpace(cells[7]); delta != "~" {
			t.Errorf("rerun row %q: delta %q, want ~", line, delta)
		}
	}
	if rows == 0 {
		t.Errorf("compare printed no rows:\n%s", stdout)
	}

	recs, _, err := results.ReadFile(h200Slice)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		if r.Config.Variant == "d2" {
			for i := range r.Probes {
				m := &r.Probes[i]
				m.SamplesNS = append([]float64(nil), m.SamplesNS...)
				for j := range m.SamplesNS {
					m.SamplesNS[j] *= 0.9
				}
			}
		}
		if err := enc.Encode(&r); err != nil {
			t.Fatal(err)
		}
	}
	faster := filepath.Join(t.TempDir(), "faster.jsonl")
	if err := os.WriteFile(faster, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCmd("compare", h200Slice, faster)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "-10.00%") || !strings.Contains(stdout, "~") {
		t.Errorf("compare output lacks a change and a no-change:\n%s", stdout)
	}
}

func TestExportCommand(t *testing.T) {
	stdout, stderr, code := runCmd("export", "--format", "gobench", h200Slice)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.HasPrefix(stdout, "device: NVIDIA H200\n") ||
		!strings.Contains(stdout, "BenchmarkAttn/variant=d2/shape=7b/SPLITS=32/NR=4/nkv=32768/probe=cold 1 ") {
		t.Errorf("unexpected export:\n%.400s", stdout)
	}
}
