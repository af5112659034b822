package search

import (
	"bytes"
	"reflect"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/sweep"
)

// Helpers shared by the search tests: a results directory with captured
// output and a deterministic clock, as the sweep tests use.

// fakeClock advances one second at every reading, so durations, ETAs and
// record times are deterministic.
func fakeClock() func() time.Time {
	t := time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Second)
		return t
	}
}

type runEnv struct {
	dir string
	log bytes.Buffer
	out bytes.Buffer
}

func (e *runEnv) opts() sweep.RunOptions {
	return sweep.RunOptions{Dir: e.dir, Progress: &e.out, Log: &e.log, Clock: fakeClock()}
}

func newRunEnv(t *testing.T) *runEnv { return &runEnv{dir: t.TempDir()} }

// fileHashes reads the results file and returns its hashes in file order.
func fileHashes(t *testing.T, dir string) []string {
	t.Helper()
	recs, warns, err := results.ReadFile(results.FilePath(dir))
	if err != nil || len(warns) > 0 {
		t.Fatalf("reading results: %v, warnings %v", err, warns)
	}
	return recHashes(recs)
}

func recHashes(recs []results.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Hash)
	}
	return out
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}
