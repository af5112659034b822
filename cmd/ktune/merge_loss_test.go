package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// Merge is the step after which shards are deleted: a line it cannot
// carry over (a record of a newer schema, a damaged line) stops it with
// nothing written, never a warning and a smaller file.
func TestMergeRefusesUnreadableLines(t *testing.T) {
	data, err := os.ReadFile(h200Slice)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(data), "\n")
	for name, edit := range map[string]func(string) string{
		"newer schema": func(l string) string { return strings.Replace(l, `"schema":1`, `"schema":2`, 1) },
		"damaged":      func(l string) string { return "{" + l },
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			edited := append([]string(nil), lines...)
			edited[4] = edit(edited[4])
			in := filepath.Join(dir, "in.jsonl")
			if err := os.WriteFile(in, []byte(strings.Join(edited, "")), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "merged")
			stdout, stderr, code := runCmd("merge", "-o", out, in)
			if code == exitOK {
				t.Fatalf("merge succeeded: %s%s", stdout, stderr)
			}
			if _, err := os.Stat(results.FilePath(out)); err == nil {
				t.Errorf("%s written although merge refused", results.FilePath(out))
			}
		})
	}
}

// The same file given twice gives its records once, and says how many
// duplicates it dropped.
func TestMergeSelfDeduplicates(t *testing.T) {
	want, _, err := results.ReadFile(h200Slice)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "merged")
	stdout, stderr, code := runCmd("merge", "-o", out, h200Slice, h200Slice)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	got, warns, err := results.ReadFile(results.FilePath(out))
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	if len(got) != len(want) {
		t.Errorf("%d records merged, want %d", len(got), len(want))
	}
	for i := range got {
		if i < len(want) && got[i].Hash != want[i].Hash {
			t.Fatalf("record %d: hash %s, want %s", i, got[i].Hash, want[i].Hash)
		}
	}
	if !strings.Contains(stdout, fmt.Sprintf("%d duplicates", len(want))) {
		t.Errorf("no count of duplicates: %s", stdout)
	}
	// Written beside and renamed: no temporary left behind.
	ents, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".merge-") {
			t.Errorf("temporary %s left in %s", e.Name(), out)
		}
	}
}
