package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/report"
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
	t.Parallel()
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
	if !strings.Contains(stdout, "d2*") || !strings.Contains(stdout, "bitwise gate failed at nkv=29") ||
		!strings.Contains(stdout, "diff_bytes=1") {
		t.Errorf("terminal table lacks the landed row or the failure:\n%s", stdout)
	}
	if !strings.HasPrefix(stdout, "What to ship") {
		t.Errorf("stdout opens with %q, want what to ship", strings.SplitN(stdout, "\n", 2)[0])
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

// --plots=false changes nothing but the plots: over a directory an
// earlier report drew its plots into, it removes them, writes the same
// tables.csv and the same report.md less its plot links and their note.
func TestReportWithoutPlots(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "report")
	if _, stderr, code := runCmd("report", h200Slice, fixtureGate, "-o", out); code != 0 {
		t.Fatalf("with plots: exit %d: %s", code, stderr)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	withMD, withCSV := read("report.md"), read("tables.csv")
	drawn, _ := filepath.Glob(filepath.Join(out, "*.png"))
	if len(drawn) == 0 || !strings.Contains(withMD, ".png)") {
		t.Fatalf("the report with plots drew %d PNGs and links none: the comparison tests nothing", len(drawn))
	}
	stdout, stderr, code := runCmd("report", h200Slice, fixtureGate, "-o", out, "--plots=false")
	if code != 0 {
		t.Fatalf("--plots=false: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "wrote report.md and tables.csv into") {
		t.Errorf("stdout does not say what was written: %q", stdout[max(0, len(stdout)-200):])
	}
	left, _ := filepath.Glob(filepath.Join(out, "*.[ps][nv]g"))
	if len(left) != 0 {
		t.Errorf("--plots=false left the earlier plots: %q", left)
	}
	if got := read("tables.csv"); got != withCSV {
		t.Errorf("tables.csv differs without plots")
	}
	// A plot is linked as "\n#### Title\n\n![Title](base.png)\n\n[SVG](base.svg)\n"
	// after its shape's tables (a title may span lines, never a table's
	// '|'), and a note says how the plots are drawn.
	link := regexp.MustCompile(`\n#### [^|!]*?\n\n!\[[^|]*?\]\([^)\n]*\.png\)\n\n\[SVG\]\([^)\n]*\.svg\)\n`)
	if n := len(link.FindAllString(withMD, -1)); n != len(drawn) {
		t.Fatalf("report.md links %d plots, %d drawn", n, len(drawn))
	}
	want := link.ReplaceAllString(withMD, "")
	want = regexp.MustCompile(`\nEach plot draws [^\n]*\n`).ReplaceAllString(want, "")
	if got := read("report.md"); got != want {
		t.Errorf("report.md without plots is not report.md less its plots:\n%s", golden.Diff(want, got))
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
		!strings.Contains(stdout, "BenchmarkAttn/variant=d2/shape=7b/batch=1/capacity=32768/SPLITS=32/NR=4/nkv=32768/probe=cold 1 ") {
		t.Errorf("unexpected export:\n%.400s", stdout)
	}
}

func h200All(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../experiments/results/h200/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed results: %v", err)
	}
	return files
}

// make report: the warnings are one line per kind on stderr, none on
// stdout, and report.md keeps them in a short section at its end.
func TestReportWarningsOnStderr(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "report")
	// The plots are not what this test checks: --plots=false spares
	// drawing them (TestReportWithoutPlots shows it changes nothing else).
	stdout, stderr, code := runCmd(append(append([]string{"report"}, h200All(t)...), "-o", out, "--plots=false")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "warning") || strings.Contains(stdout, "duplicate point") {
		t.Error("stdout carries warnings")
	}
	if n := strings.Count(stderr, "duplicate point"); n != 1 || !strings.HasPrefix(stderr, "warning: ") {
		t.Errorf("stderr has %d duplicate-point lines, want one:\n%s", n, stderr)
	}
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	rec, ship, warn := bytes.Index(md, []byte("## Recommendation")), bytes.Index(md, []byte("## What to ship")), bytes.Index(md, []byte("## Warnings"))
	if rec < 0 || rec > 20 || ship < rec || warn < 0 || bytes.Count(md[warn:], []byte("\n- ")) != 1 || bytes.Contains(md[warn:], []byte("\n## ")) {
		t.Errorf("report.md: recommendation at byte %d, what to ship at %d, warnings at %d: %q", rec, ship, warn, md[max(warn, 0):])
	}
	// The duplicates the warning counts are listed, each with the record kept.
	dup := bytes.Index(md, []byte("## Duplicate points"))
	if dup < 0 || dup > warn || !bytes.Contains(md[dup:warn], []byte("point(s) were measured by more than one record; 270 record(s) left out")) {
		t.Errorf("report.md: no Duplicate points section listing the 270 points before the warnings")
	}
}

// The help's projection example: points where the landed attention alone
// exceeds the step are refused and said so on stderr; no throughput
// printed is negative. A step that fits no point is a usage error.
func TestReportProjection(t *testing.T) {
	t.Parallel()
	args := append(append([]string{"report"}, h200All(t)...), "-o", filepath.Join(t.TempDir(), "r"), "--plots=false", "--layers", "28", "--step-ms", "11.5")
	stdout, stderr, code := runCmd(args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "projection refused") || !strings.Contains(stdout, "Refused") {
		t.Errorf("no refusal: stderr %q", stderr)
	}
	rows := 0
	in := false
	for _, line := range strings.Split(stdout, "\n") {
		if strings.HasPrefix(line, "Wall-clock projection") {
			in = true
		}
		cells := strings.Split(line, "│")
		if !in || len(cells) < 9 || strings.Contains(line, "tokens/s") {
			continue
		}
		rows++
		for _, c := range cells[8:9] {
			if strings.HasPrefix(strings.TrimSpace(c), "-") {
				t.Errorf("negative throughput: %s", line)
			}
		}
	}
	if rows == 0 {
		t.Errorf("no projection rows:\n%s", stdout)
	}
	var o, e bytes.Buffer
	err := run(&o, &e, []string{"report", h200Slice, "-o", filepath.Join(t.TempDir(), "r"), "--layers", "28", "--step-ms", "0.01"})
	if code := exitCode(err); code != exitUsage || !strings.Contains(fmt.Sprint(err), "projection refused") || o.Len() != 0 {
		t.Errorf("a step shorter than any attention: exit %d, error %v, stdout %q", code, err, o.String())
	}
}

// --json alone writes the document to stdout; with -o, DIR/report.json.
func TestReportJSON(t *testing.T) {
	t.Parallel()
	stdout, stderr, code := runCmd("report", h200Slice, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d report.Document
	if err := json.Unmarshal([]byte(stdout), &d); err != nil || d.Schema != report.DocumentSchema || len(d.Ship) != 1 {
		t.Fatalf("stdout is not a report document (%v): %.200s", err, stdout)
	}
	out := filepath.Join(t.TempDir(), "r")
	if _, stderr, code := runCmd("report", h200Slice, "--json", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &d); err != nil || len(d.Plots) == 0 {
		t.Errorf("report.json: %v, %d plots", err, len(d.Plots))
	}
}

// An interrupt during rendering leaves no report directory behind and
// exits 130.
func TestReportInterrupted(t *testing.T) {
	parent := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var o, e bytes.Buffer
	err := runReport(ctx, &o, &e, []string{h200Slice, "-o", filepath.Join(parent, "r")})
	if code := exitCode(err); code != exitInterrupt {
		t.Fatalf("exit %d (%v), want %d", code, err, exitInterrupt)
	}
	if ents, _ := os.ReadDir(parent); len(ents) != 0 {
		t.Errorf("an interrupted report left %d entries", len(ents))
	}
}

// report --only takes the filter syntax of sweep --only; a key no record
// has is a mistake, not an empty report.
func TestReportOnly(t *testing.T) {
	stdout, stderr, code := runCmd("report", h200Slice, "--json", "--only", "variant=d2,SPLITS=32")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var d report.Document
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatal(err)
	}
	for _, r := range d.Rows {
		if r.Variant != "d2" || r.Splits != 32 {
			t.Errorf("row %s SPLITS=%d passed the filter variant=d2,SPLITS=32", r.Variant, r.Splits)
		}
	}
	if len(d.Rows) == 0 {
		t.Error("the filter selected nothing")
	}
	var o, e bytes.Buffer
	err := run(&o, &e, []string{"report", h200Slice, "--json", "--only", "SPLIT=32"})
	if exitCode(err) != exitUsage || err == nil || !strings.Contains(err.Error(), `no configuration has a "SPLIT"`) {
		t.Errorf("unknown key: %v (exit %d)", err, exitCode(err))
	}
}
