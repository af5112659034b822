package main

import (
	"os"
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
