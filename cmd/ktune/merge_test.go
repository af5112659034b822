package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
	"github.com/ktune/ktune/sweep"
	"github.com/ktune/ktune/variants"
)

// writeShard writes a shard directory holding the records of hashes.
func writeShard(t *testing.T, dir string, index, count int, hashes ...string) {
	t.Helper()
	w, err := results.OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for i, h := range hashes {
		rec := results.Record{Hash: h, Time: time.Date(2026, 12, 1, 0, 0, i, 0, time.UTC),
			Config: results.Config{Spec: "slice", Variant: "d2", NKV: 512 * (i + 1)}, Status: results.StatusOK}
		if err := w.Append(&rec); err != nil {
			t.Fatal(err)
		}
	}
	m := &sweep.Manifest{Spec: "slice", Plan: "00112233aabbccdd", Points: 4, Count: count, Shards: []int{index}}
	if err := sweep.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
}

func TestMergeCommand(t *testing.T) {
	base := t.TempDir()
	s0, s1, out := filepath.Join(base, "shard-0"), filepath.Join(base, "shard-1"), filepath.Join(base, "merged")
	writeShard(t, s0, 0, 2, "aaaa000000000001", "aaaa000000000003")
	writeShard(t, s1, 1, 2, "aaaa000000000002", "aaaa000000000004")
	var stdout, stderr bytes.Buffer
	if err := run(&stdout, &stderr, []string{"merge", "-o", out, s0, s1}); err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr.String())
	}
	recs, warns, err := results.ReadFile(results.FilePath(out))
	if err != nil || len(warns) > 0 {
		t.Fatal(err, warns)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Hash)
	}
	want := "aaaa000000000001 aaaa000000000003 aaaa000000000002 aaaa000000000004"
	if strings.Join(got, " ") != want {
		t.Errorf("merged hashes %v, want %s (inputs in order, each in file order)", got, want)
	}
	if m, err := sweep.ReadManifest(out); err != nil || m == nil || fmt.Sprint(m.Shards) != "[0 1]" {
		t.Errorf("merged manifest %+v, %v", m, err)
	}
	if !strings.Contains(stdout.String(), "merged 4 records from 2 inputs; shards 2 of 2") {
		t.Errorf("stdout %q", stdout.String())
	}

	// Merging into a directory that holds results is refused.
	err = run(&stdout, &stderr, []string{"merge", "-o", out, s0, s1})
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "already holds results") {
		t.Errorf("merge into a full directory: exit %d, %v", exitCode(err), err)
	}
}

func TestMergeCommandRefusesConflicts(t *testing.T) {
	base := t.TempDir()
	s0, s1 := filepath.Join(base, "shard-0"), filepath.Join(base, "shard-1")
	writeShard(t, s0, 0, 2, "aaaa000000000001")
	writeShard(t, s1, 1, 2, "aaaa000000000002")
	// shard-1 also measured point 1, at another time.
	w, err := results.OpenWriter(s1)
	if err != nil {
		t.Fatal(err)
	}
	rec := results.Record{Hash: "aaaa000000000001", Config: results.Config{Spec: "slice", Variant: "d2"}, Status: results.StatusOK}
	w.Append(&rec)
	w.Close()
	out := filepath.Join(base, "merged")
	var stdout, stderr bytes.Buffer
	err = run(&stdout, &stderr, []string{"merge", "-o", out, s0, s1})
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "recorded differently") {
		t.Fatalf("merge of a point measured twice: exit %d, %v", exitCode(err), err)
	}
	if _, err := os.Stat(results.FilePath(out)); err == nil {
		t.Error("a refused merge wrote results")
	}
}

func TestMergeUsage(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, args := range [][]string{{"merge"}, {"merge", "-o", t.TempDir()}, {"merge", "a", "b"}} {
		if err := run(&stdout, &stderr, args); exitCode(err) != exitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, exitCode(err), err, exitUsage)
		}
	}
	dir := t.TempDir()
	if err := run(&stdout, &stderr, []string{"merge", "-o", dir, dir}); exitCode(err) != exitUsage ||
		!strings.Contains(err.Error(), "both an input and the output") {
		t.Errorf("merge into its own input: %v", err)
	}
}

// TestShardedSweepMerges sweeps experiments/slice.yaml in three shards with
// a replay backend and merges them: every point of the plan comes back
// exactly once.
func TestShardedSweepMerges(t *testing.T) {
	env := results.Env{Device: "NVIDIA H200", Arch: "sm_90", ReadBWGBps: 4560}
	deps := sweepDeps{
		open: func(backendSpec) (plan.Backend, error) {
			return replay.New([]results.Record{{Hash: "0000000000000000", Env: env}}), nil
		},
		isTTY: func(io.Writer) bool { return false },
	}
	const specPath = "../../experiments/slice.yaml"
	base := t.TempDir()
	var dirs []string
	for i := range 3 {
		dir := filepath.Join(base, fmt.Sprintf("shard-%d", i))
		var stdout, stderr bytes.Buffer
		args := []string{specPath, "-o", dir, "--shard", fmt.Sprintf("%d/3", i)}
		// The replay serves no record: every point is an error, which the
		// sweep's exit status says; the shards still merge.
		if err := runSweep(context.Background(), &stdout, &stderr, args, deps); exitCode(err) != exitUnanswered {
			t.Fatalf("shard %d: %v\n%s", i, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), fmt.Sprintf("in shard %d/3", i)) {
			t.Errorf("shard %d: the sweep does not say which shard it runs:\n%s", i, stderr.String())
		}
		dirs = append(dirs, dir)
	}
	out := filepath.Join(base, "all")
	var stdout, stderr bytes.Buffer
	if err := run(&stdout, &stderr, append([]string{"merge", "-o", out}, dirs...)); err != nil {
		t.Fatalf("merge: %v\n%s", err, stderr.String())
	}
	s, err := spec.Load(specPath, variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	plan, err := plan.Build(s, env.Arch)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, err := results.ReadFile(results.FilePath(out))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, r := range recs {
		got[r.Hash]++
	}
	for _, p := range plan.Points {
		if got[p.Hash] != 1 {
			t.Errorf("point %s (%s nkv=%d) merged %d times", p.Hash, p.Config.Variant, p.Config.NKV, got[p.Hash])
		}
	}
	if len(recs) != len(plan.Points) {
		t.Errorf("%d merged records, %d points", len(recs), len(plan.Points))
	}
	// Running shard 1 into shard 0's directory is a mistake.
	err = runSweep(context.Background(), &stdout, &stderr, []string{specPath, "-o", dirs[0], "--shard", "1/3"}, deps)
	if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "directory of its own") {
		t.Errorf("shard 1 into shard 0's directory: exit %d, %v", exitCode(err), err)
	}
}

func TestSweepDeviceFlags(t *testing.T) {
	deps := sweepDeps{
		open:  func(backendSpec) (plan.Backend, error) { t.Fatal("opened a backend"); return nil, nil },
		isTTY: func(io.Writer) bool { return false },
	}
	for _, args := range [][]string{
		{"x.yaml", "-o", "d", "--device", "1", "--devices", "0,1"},
		{"x.yaml", "-o", "d", "--devices", "0,x"},
		{"x.yaml", "-o", "d", "--devices", "all", "--in-process"},
		{"x.yaml", "-o", "d", "--shard", "3/3"},
		{"x.yaml", "-o", "d", "--sanitize", "--in-process"},
		{"x.yaml", "-o", "d", "--sanitize=racecheck", "--backend", "replay", "--replay-from", "r.jsonl"},
		{"x.yaml", "-o", "d", "--sanitize=memchek"},
		{"x.yaml", "-o", "d", "--cpuprofile", "cpu.prof"},
		{"x.yaml", "-o", "d", "--cpuprofile", "cpu.prof", "--backend", "replay", "--replay-from", "r.jsonl"},
	} {
		var stdout, stderr bytes.Buffer
		if err := runSweep(context.Background(), &stdout, &stderr, args, deps); exitCode(err) != exitUsage {
			t.Errorf("%q: exit %d (%v), want %d", args, exitCode(err), err, exitUsage)
		}
	}
}

// TestStartCPUProfile: the profile --cpuprofile writes is one pprof reads
// back (a gzipped protocol buffer), and a path it cannot create is an
// error, not a silent sweep without one.
func TestStartCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	stop, err := startCPUProfile(path)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	b, err := os.ReadFile(path)
	if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		t.Errorf("profile %q: %d bytes, err %v", path, len(b), err)
	}
	if _, err := startCPUProfile(filepath.Join(t.TempDir(), "no", "such", "dir", "cpu.prof")); err == nil {
		t.Error("a profile path in no directory was accepted")
	}
}
