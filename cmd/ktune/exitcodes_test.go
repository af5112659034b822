package main

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/dispatch"
)

// TestCheckRefusesNegativeJobs: check -j -1 was accepted.
func TestCheckRefusesNegativeJobs(t *testing.T) {
	_, stderr, code := runMsg("check", "-j", "-1", "../../experiments/slice.yaml")
	if code != exitUsage || !strings.Contains(stderr, "-j") {
		t.Errorf("check -j -1: exit %d, want %d\n%s", code, exitUsage, stderr)
	}
}

// TestGateOnlyUnknownKey: gate --only FOO=1 exited 1 where sweep and
// report give 2 for a filter no configuration can match.
func TestGateOnlyUnknownKey(t *testing.T) {
	for _, only := range []string{"FOO=1", "SPLITS=7"} {
		_, stderr, code := runMsg("gate", "--candidate", "r4", "--only", only, h200Slice)
		if code != exitUsage || !strings.Contains(stderr, "--only") {
			t.Errorf("gate --only %s: exit %d, want %d\n%s", only, code, exitUsage, stderr)
		}
	}
	if _, stderr, code := runMsg("gate", "--candidate", "r4", "--only", "SPLITS=64", h200Slice); code != exitRegression {
		t.Errorf("gate --only SPLITS=64: exit %d, want %d\n%s", code, exitRegression, stderr)
	}
}

// TestGateJSONOnError: gate --json printed no JSON when it reached no
// verdict; a script reading stdout found nothing.
func TestGateJSONOnError(t *testing.T) {
	for _, args := range [][]string{
		{"--candidate", "nosuch", h200Slice},
		{"--candidate", "r4", "--only", "FOO=1", h200Slice},
		{"--candidate", "r4", filepath.Join(t.TempDir(), "absent.jsonl")},
	} {
		stdout, _, code := runMsg(append([]string{"gate", "--json"}, args...)...)
		var doc struct {
			Error    string `json:"error"`
			ExitCode int    `json:"exit_code"`
		}
		if err := json.Unmarshal([]byte(stdout), &doc); err != nil || doc.Error == "" || doc.ExitCode != code || code == exitOK {
			t.Errorf("gate --json %v: exit %d, stdout %q (%v)", args, code, stdout, err)
		}
	}
}

// fullWriter fails every write, as /dev/full does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, errors.New("no space left on device") }

// TestHelpWriteError: ktune help > /dev/full exited 0.
func TestHelpWriteError(t *testing.T) {
	for _, args := range [][]string{{"help"}, {"help", "sweep"}, {"gate", "-h"}} {
		err := run(fullWriter{}, fullWriter{}, args)
		if err == nil || exitCode(err) == exitOK || !strings.Contains(err.Error(), "no space left") {
			t.Errorf("%v to a full device: %v", args, err)
		}
	}
}

// TestSweepUnansweredExit: a sweep whose every point recorded an error
// (the replay of the help's example, which served 0 of 64) exited 0; it
// exits 6 now, and the help's example, run as it is written, serves every
// point and exits 0.
func TestSweepUnansweredExit(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := replaySweep(t, filepath.Join(dir, "hash"), "--replay-from", "../../experiments/results/h200/make-sweep.jsonl")
	if code != exitUnanswered || !strings.Contains(stderr, "64 of 64 points recorded no answer") {
		t.Errorf("every point unanswered: exit %d, want %d\n%s", code, exitUnanswered, stderr)
	}
	var help strings.Builder
	if err := run(&help, &help, []string{"help", "sweep", "--long"}); err != nil {
		t.Fatal(err)
	}
	text := help.String()
	i := strings.Index(text, "$ ktune sweep experiments/slice.yaml -o out/dry --backend replay")
	if i < 0 {
		t.Fatalf("the help has no replay example:\n%s", text)
	}
	example := strings.ReplaceAll(text[i+2:], "\\\n", " ")
	example = example[:strings.Index(example, "\n")]
	args := strings.Fields(example)[1:] // without "ktune"
	for k, a := range args {
		switch {
		case strings.HasPrefix(a, "experiments/"):
			args[k] = "../../" + a
		case a == "out/dry":
			args[k] = filepath.Join(dir, "dry")
		}
	}
	stdout, stderr, code := runMsg(args...)
	if code != exitOK || !strings.Contains(stdout, "0 not recorded") {
		t.Errorf("the help's example %q: exit %d\n%s%s", example, code, stdout, stderr)
	}
}

// fullTemp is a temporary file whose writes fail once n bytes have been
// written to temporary files, as on a disk that fills up.
type fullTemp struct {
	*os.File
	left *int
}

func (f fullTemp) Write(p []byte) (int, error) {
	if len(p) > *f.left {
		n, _ := f.File.Write(p[:*f.left])
		*f.left = 0
		return n, errors.New("no space left on device")
	}
	*f.left -= len(p)
	return f.File.Write(p)
}

// TestTuneFullDisk: tune on a full disk left a 0-byte dispatch.yaml, which
// an engine's build would read as a table with no entries. The exports are
// written whole or not at all, and an earlier table stays as it was.
func TestTuneFullDisk(t *testing.T) {
	tab, err := tuneTable(io.Discard, []string{h200Slice}, dispatch.Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	old := []byte("# an earlier table\n")
	if err := os.WriteFile(filepath.Join(dir, "dispatch.yaml"), old, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, room := range []int{0, 100, 1 << 30} {
		left := room
		full := func(dir, pattern string) (tempFile, error) {
			f, err := os.CreateTemp(dir, pattern)
			return fullTemp{f, &left}, err
		}
		err := tuneWrite(dir, tab, full)
		ents, _ := os.ReadDir(dir)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		got, _ := os.ReadFile(filepath.Join(dir, "dispatch.yaml"))
		if room < 1<<30 {
			if err == nil || !strings.Contains(err.Error(), "no space left") {
				t.Errorf("%d bytes of room: %v", room, err)
			}
			if string(got) != string(old) || len(names) != 1 {
				t.Errorf("%d bytes of room: the directory holds %v, dispatch.yaml %q", room, names, got)
			}
			continue
		}
		if err != nil || len(names) != 2 || string(got) == string(old) {
			t.Errorf("room enough: %v, %v", err, names)
		}
		if st, err := os.Stat(filepath.Join(dir, "dispatch.h")); err != nil || st.Mode().Perm() != 0o644 {
			t.Errorf("dispatch.h: %v %v", st, err)
		}
	}
}
