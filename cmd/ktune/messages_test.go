package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestWarningsCappedPerFile: one junk file gave 12,000 warning lines; the
// first few are named, then their count.
func TestWarningsCappedPerFile(t *testing.T) {
	junk := filepath.Join(t.TempDir(), "junk.jsonl")
	if err := os.WriteFile(junk, []byte(strings.Repeat("not a record\n", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, _ := runCmd("report", "--json", h200Slice, junk)
	if n := strings.Count(stderr, junk+":"); n != maxLinesShown+1 {
		t.Errorf("%d lines name the junk file, want %d and a count:\n%s", n, maxLinesShown+1, stderr)
	}
	if !strings.Contains(stderr, junk+": 90 more unreadable line(s) not shown") {
		t.Errorf("no count of the lines not shown:\n%s", stderr)
	}
}

// TestCompareNothingInCommon: two files that share no point exited 0 with
// a table of nothing.
func TestCompareNothingInCommon(t *testing.T) {
	_, stderr, code := runMsg("compare", h200Slice, "../../experiments/results/h200/faults.jsonl")
	if code != exitError || !strings.Contains(stderr, "share no point") {
		t.Errorf("exit %d, want %d saying so:\n%s", code, exitError, stderr)
	}
	if _, stderr, code := runMsg("compare", h200Slice, h200Slice); code != exitOK {
		t.Errorf("a file against itself: exit %d\n%s", code, stderr)
	}
}

// TestGateWarnsOfInput: a point recorded in a second file, and candidate
// and baseline records of different gate suites, passed in silence.
func TestGateWarnsOfInput(t *testing.T) {
	dir := t.TempDir()
	recs := readJRecs(t, h200Slice)
	copyPath := writeJRecs(t, dir, "copy.jsonl", recs)
	_, stderr, _ := runMsg("gate", "--candidate", "r4", h200Slice, copyPath)
	if !strings.Contains(stderr, "and again in "+copyPath) || !strings.Contains(stderr, "points in all are recorded in two files") {
		t.Errorf("a point in two files is not said:\n%s", stderr)
	}
	for _, r := range recs {
		r["gate_suite"] = map[bool]string{true: "s1", false: "s2"}[variantOf(r) == "r4"]
	}
	_, stderr, _ = runMsg("gate", "--candidate", "r4", writeJRecs(t, dir, "suites.jsonl", recs))
	if !strings.Contains(stderr, "gate suite(s) s1 and the baseline's s2") {
		t.Errorf("different gate suites are not said:\n%s", stderr)
	}
	if _, stderr, _ := runMsg("gate", "--candidate", "r4", h200Slice); strings.Contains(stderr, "two files") || strings.Contains(stderr, "gate suite") {
		t.Errorf("the intact slice warns:\n%s", stderr)
	}
}

// TestClipWords: a 10 MB variant name was echoed whole into an error.
func TestClipWords(t *testing.T) {
	long := strings.Repeat("V", 10_000_000)
	got := clipWords("unknown variant "+long+" (variants: d2)\nnext é"+strings.Repeat("é", 300), 200)
	want := "unknown variant " + strings.Repeat("V", 200) + "…(9999800 more bytes) (variants: d2)\nnext " + strings.Repeat("é", 100) + "…(402 more bytes)"
	if got != want {
		t.Errorf("clipWords = %.300q…", got)
	}
	if s := "a short message, kept as it is"; clipWords(s, 200) != s {
		t.Errorf("a short message changed")
	}
}

// TestLongLineUnderAddressLimit: report on a 70 MB line without a newline,
// under a 2 GB address-space limit, died with Go's out-of-memory trace
// (exit 2); report and gate now skip the line unheld and exit 1 saying
// why. The commands run in a child of this test binary under ulimit -v.
func TestLongLineUnderAddressLimit(t *testing.T) {
	if path := os.Getenv("KTUNE_TEST_LONG_LINE"); path != "" {
		for _, args := range [][]string{{"report", "--json", path}, {"gate", "--candidate", "r4", path}} {
			var stderr strings.Builder
			err := run(io.Discard, &stderr, args)
			fmt.Printf("%s: exit %d: %v\n%s", args[0], exitCode(err), err, stderr.String())
		}
		return
	}
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash to set ulimit -v with")
	}
	path := filepath.Join(t.TempDir(), "long.jsonl")
	if err := os.WriteFile(path, bytes.Repeat([]byte("a"), 70_000_000), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bash, "-c", `ulimit -v 2000000 && exec "$0" -test.run='^TestLongLineUnderAddressLimit$' -test.count=1`, os.Args[0])
	cmd.Env = append(os.Environ(), "KTUNE_TEST_LONG_LINE="+path)
	out, _ := cmd.CombinedOutput()
	for _, want := range []string{"report: exit 1", "gate: exit 1", path + ":1: a line of 70000000 bytes, longer than the 16 MiB a line may hold"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q in:\n%.2000s", want, out)
		}
	}
}
