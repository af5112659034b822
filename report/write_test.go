package report

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

func listDir(t *testing.T, dir string) map[string]bool {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, e := range ents {
		out[e.Name()] = true
	}
	return out
}

// A second report into the same directory removes the files the first
// wrote and it does not (the plots of shapes no longer in the input),
// and nothing else.
func TestWriteRemovesStaleOutputs(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "report")
	first, err := Build(loadH200(t, "sdpa.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := first.Write(dir); err != nil {
		t.Fatal(err)
	}
	stale := "nkv_7b-b16.png"
	if !listDir(t, dir)[stale] {
		t.Fatalf("the first report did not write %s", stale)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	second, err := Build(loadH200(t, "slice.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	plots, err := second.Write(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := listDir(t, dir)
	if got[stale] {
		t.Errorf("stale %s left in place", stale)
	}
	if !got["notes.txt"] {
		t.Error("a file the report did not write was removed")
	}
	want := map[string]bool{"report.md": true, "tables.csv": true, "notes.txt": true, manifestName: true}
	for _, p := range plots {
		for _, f := range p.Files {
			if filepath.Dir(f) != dir {
				t.Errorf("plot path %s is not in %s", f, dir)
			}
			want[filepath.Base(f)] = true
		}
	}
	if !equalSets(got, want) {
		t.Errorf("directory holds %v, want %v", keys(got), keys(want))
	}
	// Nothing is left beside the directory.
	if n := len(listDir(t, filepath.Dir(dir))); n != 1 {
		t.Errorf("%d entries beside the report directory, want only it", n)
	}
}

// A directory written before reports kept a manifest: the files named as
// reports name theirs count as earlier outputs.
func TestWriteRemovesLegacyOutputs(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"splits_7b_nkv4096.png", "results.jsonl"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Build(loadH200(t, "slice.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	got := listDir(t, dir)
	if got["splits_7b_nkv4096.png"] || !got["results.jsonl"] {
		t.Errorf("after the report: %v", keys(got))
	}
}

// An interrupted report (a cancelled context, as SIGINT gives) leaves the
// directory as it was and nothing beside it.
func TestWriteCancelledLeavesDirAlone(t *testing.T) {
	t.Parallel()
	parent := t.TempDir()
	dir := filepath.Join(parent, "report")
	rep, err := Build(loadH200(t, "slice.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := rep.WriteDir(ctx, dir, WriteOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if got := listDir(t, parent); len(got) != 0 {
		t.Errorf("an interrupted report left %v", keys(got))
	}
	if _, err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	before := listDir(t, dir)
	if _, err := rep.WriteDir(ctx, dir, WriteOptions{JSON: true}); err == nil {
		t.Fatal("a cancelled report succeeded")
	}
	if after := listDir(t, dir); !equalSets(before, after) {
		t.Errorf("an interrupted report changed the directory: %v → %v", keys(before), keys(after))
	}
	if got := listDir(t, parent); len(got) != 1 {
		t.Errorf("an interrupted report left %v beside it", keys(got))
	}
}

func equalSets(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestWriteDirMode: a new report directory gets a plain mkdir's mode
// (0777 less the umask), not os.MkdirTemp's 0700 whatever the umask.
func TestWriteDirMode(t *testing.T) {
	rep, err := Build(loadH200(t, "slice.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "report")
	if _, err := rep.Write(dir); err != nil {
		t.Fatal(err)
	}
	probe := filepath.Join(t.TempDir(), "probe")
	if err := os.Mkdir(probe, 0o777); err != nil {
		t.Fatal(err)
	}
	want, _ := os.Stat(probe)
	got, err := os.Stat(dir)
	if err != nil || got.Mode().Perm() != want.Mode().Perm() {
		t.Errorf("report directory mode %v, a plain mkdir's %v (%v)", got.Mode().Perm(), want.Mode().Perm(), err)
	}
}
