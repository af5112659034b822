package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe/gate"
)

const specSlice = "../../experiments/slice.yaml"

// readDir returns the records of a sweep directory by hash.
func readDir(t *testing.T, dir string) map[string]results.Record {
	t.Helper()
	set, err := results.Load(dir)
	if err != nil || len(set.Warnings) > 0 {
		t.Fatalf("reading %s: %v %v", dir, err, set.Warnings)
	}
	m := map[string]results.Record{}
	for _, r := range set.Records {
		m[r.Hash] = r
	}
	return m
}

// runMsg runs ktune and returns stdout, and stderr followed by the error
// that main would print.
func runMsg(args ...string) (stdout, stderr string, code int) {
	var o, e bytes.Buffer
	err := run(&o, &e, args)
	if err != nil {
		code = exitCode(err)
		fmt.Fprintf(&e, "ktune: %v\n", err)
	}
	return o.String(), e.String(), code
}

// replaySweep runs 'ktune sweep' of slice.yaml on the replay backend.
func replaySweep(t *testing.T, dir string, extra ...string) (string, string, int) {
	t.Helper()
	return runMsg(append([]string{"sweep", specSlice, "-o", dir, "--backend", "replay"}, extra...)...)
}

// The committed slice.jsonl was measured before a change of the kernel
// sources' hashes: by hash it serves nothing, by configuration every
// point, with the numbers of that configuration's record. A second replay
// of that sweep's output then matches every point by its own hash.
func TestReplaySweepMatchesByHashOrConfig(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	byConfig := filepath.Join(base, "config")
	stdout, stderr, code := replaySweep(t, byConfig, "--replay-from", h200Slice, "--replay-match", "config")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "64 run (64 ok") || !strings.Contains(stdout, "0 by hash, 64 by configuration, 0 not recorded") {
		t.Errorf("want 64 points served by configuration:\n%s", stdout)
	}
	orig := map[string]results.Record{}
	set, err := results.Load(h200Slice)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Records {
		orig[r.Hash] = r
	}
	got := readDir(t, byConfig)
	for h, r := range got {
		src, ok := orig[r.Replayed.Hash]
		switch {
		case r.Replayed.Match != results.ReplayConfig || !ok:
			t.Errorf("%s: replayed %+v, want a match by config of a record of %s", h, r.Replayed, h200Slice)
		case src.Config.Variant != r.Config.Variant || src.Config.NKV != r.Config.NKV ||
			src.Config.Defines.String() != r.Config.Defines.String():
			t.Errorf("%s: served %s %s nkv %d for %s %s nkv %d", h, src.Config.Variant, src.Config.Defines, src.Config.NKV,
				r.Config.Variant, r.Config.Defines, r.Config.NKV)
		case !reflect.DeepEqual(src.Probes, r.Probes):
			t.Errorf("%s: the probes are not the recorded ones", h)
		case r.GateSuite != gate.Suite(&plan.Point{}):
			// The sweep names the gates' suite in every record, so that a
			// resumed sweep can tell a record of older gates.
			t.Errorf("%s: gate suite %q, want the gates' %q", h, r.GateSuite, gate.Suite(&plan.Point{}))
		}
	}

	byHash := filepath.Join(base, "hash")
	stdout, stderr, code = replaySweep(t, byHash, "--replay-from", byConfig)
	if code != 0 || !strings.Contains(stdout, "64 by hash, 0 by configuration, 0 not recorded") {
		t.Fatalf("exit %d, want every point by hash:\n%s\n%s", code, stdout, stderr)
	}
	stdout, _, _ = replaySweep(t, filepath.Join(base, "none"), "--replay-from", h200Slice)
	if !strings.Contains(stdout, "0 by hash, 0 by configuration, 64 not recorded") || !strings.Contains(stdout, "--replay-match config") {
		t.Errorf("by hash from the stale file: want 64 not recorded and the hint:\n%s", stdout)
	}
	for h, r := range readDir(t, filepath.Join(base, "none")) {
		if r.Status != results.StatusError || len(r.Probes) > 0 {
			t.Errorf("%s: a point without a record got status %s and %d probes", h, r.Status, len(r.Probes))
		}
	}
}

func TestReplayedRecordsAreRefused(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "dry")
	if _, stderr, code := replaySweep(t, dir, "--replay-from", h200Slice, "--replay-match", "config"); code != 0 {
		t.Fatalf("sweep: exit %d\n%s", code, stderr)
	}
	out := t.TempDir()
	for _, args := range [][]string{
		{"report", dir, "-o", out},
		{"gate", "--candidate", "r4", dir},
		{"compare", h200Slice, dir},
		{"tune", "--from", dir, "-o", out},
	} {
		_, stderr, code := runMsg(args...)
		if code != exitUsage || !strings.Contains(stderr, "64 of ") || !strings.Contains(stderr, "records were served by the replay backend") {
			t.Errorf("%s: exit %d, want %d refusing the replayed records; stderr:\n%s", args[0], code, exitUsage, stderr)
		}
	}
	// A search on the replay backend records replays: its table is refused too.
	tuneArgs := []string{"tune", specSlice, "-o", filepath.Join(t.TempDir(), "tune"), "--backend", "replay",
		"--replay-from", h200Slice, "--replay-match", "config"}
	if _, stderr, code := runMsg(tuneArgs...); code != exitUsage || !strings.Contains(stderr, "served by the replay backend") {
		t.Errorf("tune --backend replay: exit %d, want %d refusing its table; stderr:\n%s", code, exitUsage, stderr)
	}
	if _, stderr, code := runMsg(append(tuneArgs, "--allow-replayed")...); code != 0 {
		t.Errorf("tune --backend replay --allow-replayed: exit %d\n%s", code, stderr)
	}
	_, stderr, code := runCmd("report", dir, "-o", out, "--allow-replayed")
	if code != 0 || !strings.Contains(stderr, "warning: 64 of 64 records were served by the replay backend") {
		t.Errorf("report --allow-replayed: exit %d, want 0 with a warning; stderr:\n%s", code, stderr)
	}
	// Measured records alone pass as before.
	if _, stderr, code := runCmd("report", h200Slice, "-o", out); code != 0 || strings.Contains(stderr, "replay") {
		t.Errorf("report of measured records: exit %d\n%s", code, stderr)
	}
}

// A backend lost mid-sweep records nothing for its point; the same command
// again resumes, and the result is the one an uninterrupted sweep gives.
func TestReplayStopAtResumes(t *testing.T) {
	base := t.TempDir()
	whole, parts := filepath.Join(base, "whole"), filepath.Join(base, "parts")
	from := []string{"--replay-from", h200Slice, "--replay-match", "config"}
	if _, stderr, code := replaySweep(t, whole, from...); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	t.Setenv(replayStopEnv, "5")
	stdout, stderr, code := replaySweep(t, parts, from...)
	if code != exitError || !strings.Contains(stdout, "4 run") || !strings.Contains(stderr, "backend lost at call 5") {
		t.Fatalf("stopped sweep: exit %d, want %d after 4 points\n%s\n%s", code, exitError, stdout, stderr)
	}
	t.Setenv(replayStopEnv, "")
	if stdout, stderr, code := replaySweep(t, parts, from...); code != 0 || !strings.Contains(stdout, "4 already recorded, 60 run") {
		t.Fatalf("resumed sweep: exit %d\n%s\n%s", code, stdout, stderr)
	}
	a, b := readDir(t, whole), readDir(t, parts)
	if len(a) != 64 || len(b) != 64 {
		t.Fatalf("%d and %d records, want 64", len(a), len(b))
	}
	for h, r := range a {
		s := b[h]
		r.Time, s.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(r, s) {
			t.Errorf("%s differs between the whole and the resumed sweep", h)
		}
	}
}

func TestReplayFlagErrors(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--replay-from", h200Slice}, "--replay-from belongs to --backend replay"},
		{[]string{"--backend", "replay"}, "wants --replay-from"},
		{[]string{"--backend", "replay", "--replay-from", h200Slice, "--devices", "all"}, "--backend replay uses no device"},
		{[]string{"--backend", "replay", "--replay-from", h200Slice, "--replay-match", "near"}, "--replay-match"},
		{[]string{"--backend", "tpu"}, `--backend "tpu"`},
	} {
		args := append([]string{"sweep", specSlice, "-o", dir}, c.args...)
		_, stderr, code := runMsg(args...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: exit %d, want %d with %q; stderr:\n%s", strings.Join(c.args, " "), code, exitUsage, c.want, stderr)
		}
	}
	t.Setenv(replayStopEnv, "soon")
	_, stderr, code := replaySweep(t, dir, "--replay-from", h200Slice)
	if code != exitUsage || !strings.Contains(stderr, fmt.Sprintf("$%s", replayStopEnv)) {
		t.Errorf("a bad $%s: exit %d\n%s", replayStopEnv, code, stderr)
	}
}
