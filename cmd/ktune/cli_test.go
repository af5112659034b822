package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// Help that was asked for is output: standard output, exit 0, for every
// command and both spellings (`ktune help sweep | grep -- --only`).
func TestHelpOnStdout(t *testing.T) {
	for name, c := range commands {
		if c.hidden {
			continue
		}
		for _, args := range [][]string{{"help", name}, {name, "-h"}, {name, "--help"}} {
			stdout, stderr, code := runCmd(args...)
			if code != exitOK || stderr != "" || !strings.Contains(stdout, "Usage") {
				t.Errorf("%q: exit %d, stderr %q, stdout %.60q", args, code, stderr, stdout)
			}
		}
	}
	if stdout, _, _ := runCmd("help", "sweep"); !strings.Contains(stdout, "--only") {
		t.Errorf("ktune help sweep does not show --only:\n%s", stdout)
	}
}

// An unknown command, asked for help or run, is a usage error that lists
// the commands.
func TestHelpUnknownCommand(t *testing.T) {
	for _, args := range [][]string{{"help", "bogus"}, {"bogus"}, {}} {
		_, stderr, code := runCmd(args...)
		if code != exitUsage || !strings.Contains(stderr, "gate") || !strings.Contains(stderr, "version") {
			t.Errorf("%q: exit %d, want %d with the list of commands on stderr:\n%s", args, code, exitUsage, stderr)
		}
	}
}

func TestVersion(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		stdout, _, code := runCmd(args...)
		if code != exitOK || !strings.Contains(stdout, runtime.Version()) || !strings.Contains(stdout, "revision ") {
			t.Errorf("%q: exit %d\n%s", args, code, stdout)
		}
	}
	if _, _, code := runCmd("version", "extra"); code != exitUsage {
		t.Errorf("version extra: exit %d, want %d", code, exitUsage)
	}
}

// Every mistake in what the user gave as a SPEC exits 2, whichever stage
// finds it.
func TestSpecMistakesExit2(t *testing.T) {
	dir := t.TempDir()
	divZero := filepath.Join(dir, "divzero.yaml")
	if err := os.WriteFile(divZero, []byte(`name: dz
landed: {variant: d2, defines: {SPLITS: 32}}
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1}
axes:
  nkv: [1, 512]
  SPLITS: [32]
variants:
  - {name: d2, kernel: d2, grid: [SPLITS/0, heads, 1]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"division by zero in the grid", divZero, "divzero.yaml:9:"},
		{"a directory", dir, "is a directory"},
		{"a results file", h200Slice, "results file"},
		{"no such file", filepath.Join(dir, "none.yaml"), "no such file"},
	} {
		out := filepath.Join(dir, "out")
		forms := [][]string{{"plan", tc.path}, {"check", tc.path}, {"sweep", tc.path, "-o", out}, {"tune", tc.path, "-o", out}}
		if tc.path != divZero { // gate reads the spec's landed entry only
			forms = append(forms, []string{"gate", tc.path, "--candidate", "r4", "--results", h200Slice})
		}
		for _, args := range forms {
			err := run(new(strings.Builder), new(strings.Builder), args)
			if code := exitCode(err); err == nil || code != exitUsage || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: %q: exit %d, err %v; want %d and %q", tc.name, args, code, err, exitUsage, tc.want)
			}
		}
	}
}

// TestSanitizeJobsUsage: --sanitize-jobs below one, or without --sanitize,
// is a usage error before anything is planned or started.
func TestSanitizeJobsUsage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "out")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sweep", "../../experiments/slice.yaml", "-o", out, "--sanitize", "--sanitize-jobs", "0"}, "at least one worker"},
		{[]string{"sweep", "../../experiments/slice.yaml", "-o", out, "--sanitize-jobs", "3"}, "without --sanitize"},
	} {
		err := run(new(strings.Builder), new(strings.Builder), tc.args)
		if code := exitCode(err); err == nil || code != exitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: exit %d, err %v; want %d and %q", tc.args, code, err, exitUsage, tc.want)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused sweep made %s", out)
	}
}
