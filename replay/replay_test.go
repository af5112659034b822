package replay

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

func config(variant string, splits string, nkv int) results.Config {
	return results.Config{Spec: "t", Variant: variant, Kernel: variant,
		Defines: results.Defines{{Name: "SPLITS", Value: splits}},
		Shape:   results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 4096},
		NKV:     nkv}
}

func measured(hash string, c results.Config, median float64) results.Record {
	return results.Record{Hash: hash, Config: c, Env: results.Env{Device: "GPU", Arch: "sm_90"}, Status: results.StatusOK,
		Probes: []results.Measurement{{Probe: results.ProbeCold, SamplesNS: []float64{median}, Summary: results.Summary{N: 1, Median: median}}}}
}

// write records recs into a sweep directory and returns it.
func write(t *testing.T, recs ...results.Record) string {
	t.Helper()
	dir := t.TempDir()
	w, err := results.OpenWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		if err := w.Append(&recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoadServesByHashAndMarks(t *testing.T) {
	dir := write(t, measured("aaaa", config("d2", "32", 512), 100), measured("aaaa", config("d2", "32", 512), 90))
	b, warns, err := Load(MatchHash, dir)
	if err != nil || len(warns) > 0 {
		t.Fatalf("Load: %v %v", err, warns)
	}
	rec, err := b.Run(context.Background(), &plan.Point{Hash: "aaaa", Config: config("d2", "32", 512)})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusOK || rec.Probe(results.ProbeCold).Summary.Median != 90 {
		t.Errorf("got %s median %v, want the later record's ok 90", rec.Status, rec.Probe(results.ProbeCold).Summary.Median)
	}
	if rec.Replayed == nil || *rec.Replayed != (results.Replay{Match: results.ReplayHash, Hash: "aaaa"}) {
		t.Errorf("Replayed = %+v, want match hash of aaaa", rec.Replayed)
	}
}

// Without MatchConfig a point whose hash moved on is not recorded: the
// record says so and carries no numbers, never another point's.
func TestUnrecordedPointIsAnErrorWithoutNumbers(t *testing.T) {
	dir := write(t, measured("old1", config("d2", "32", 512), 100))
	b, _, err := Load(MatchHash, dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := b.Run(context.Background(), &plan.Point{Hash: "new1", Config: config("d2", "32", 512)})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusError || len(rec.Probes) > 0 || !strings.HasPrefix(rec.Error, "not recorded") {
		t.Errorf("got status %s, %d probes, error %q; want an error record 'not recorded' without probes", rec.Status, len(rec.Probes), rec.Error)
	}
	if rec.Replayed == nil || rec.Replayed.Match != results.ReplayNone || rec.Hash != "new1" {
		t.Errorf("hash %s, Replayed %+v; want new1 marked as replayed with no match", rec.Hash, rec.Replayed)
	}
}

func TestMatchConfigServesTheSameConfigurationOnly(t *testing.T) {
	dir := write(t, measured("old1", config("d2", "32", 512), 100), measured("old2", config("d2", "64", 512), 70))
	b, _, err := Load(MatchConfig, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := config("d2", "64", 512)
	want.Spec = "renamed" // the spec's name is not part of a configuration
	rec, err := b.Run(context.Background(), &plan.Point{Hash: "new2", Config: want})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != results.StatusOK || rec.Probe(results.ProbeCold).Summary.Median != 70 {
		t.Errorf("got %s, want SPLITS=64's record (median 70)", rec.Status)
	}
	if rec.Hash != "new2" || rec.Config.Spec != "renamed" || *rec.Replayed != (results.Replay{Match: results.ReplayConfig, Hash: "old2"}) {
		t.Errorf("hash %s spec %s Replayed %+v; want the point's hash and config, replayed by config from old2", rec.Hash, rec.Config.Spec, rec.Replayed)
	}
	for _, other := range []results.Config{config("d2", "16", 512), config("d2", "64", 513), config("r4", "64", 512)} {
		rec, _ := b.Run(context.Background(), &plan.Point{Hash: "x", Config: other})
		if rec.Status != results.StatusError {
			t.Errorf("%s SPLITS=%s nkv %d: got %s, want not recorded", other.Variant, other.Defines, other.NKV, rec.Status)
		}
	}
}

func TestStopAtRecordsNothing(t *testing.T) {
	b := New([]results.Record{measured("a", config("d2", "32", 1), 1)})
	b.StopAt = 2
	if _, err := b.Run(context.Background(), &plan.Point{Hash: "a"}); err != nil {
		t.Fatalf("call 1: %v", err)
	}
	rec, err := b.Run(context.Background(), &plan.Point{Hash: "a"})
	if err == nil || rec.Status != "" {
		t.Errorf("call 2: status %q, err %v; want no record and an error", rec.Status, err)
	}
}

func TestLoadErrors(t *testing.T) {
	if _, _, err := Load(MatchHash, filepath.Join(t.TempDir(), "missing.jsonl")); err == nil {
		t.Error("a missing file loaded")
	}
	if _, _, err := Load(MatchHash, write(t)); err == nil || !strings.Contains(err.Error(), "no records") {
		t.Errorf("an empty directory: err %v, want 'no records'", err)
	}
	if _, err := ParseMatch("fuzzy"); err == nil {
		t.Error("ParseMatch accepted fuzzy")
	}
}

// Delay holds a point as a measurement would, and gives way to a cancel
// (a preempted job) without a record.
func TestDelayGivesWayToCancel(t *testing.T) {
	b := New([]results.Record{measured("a", config("d2", "32", 1), 1)})
	b.Delay = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(10*time.Millisecond, cancel)
	start := time.Now()
	rec, err := b.Run(ctx, &plan.Point{Hash: "a"})
	if err == nil || rec.Status != "" || time.Since(start) > time.Minute {
		t.Errorf("status %q, err %v after %v; want a prompt cancel and no record", rec.Status, err, time.Since(start))
	}
	b.Delay = 20 * time.Millisecond
	start = time.Now()
	if _, err := b.Run(context.Background(), &plan.Point{Hash: "a"}); err != nil || time.Since(start) < b.Delay {
		t.Errorf("err %v after %v; want the record after %v", err, time.Since(start), b.Delay)
	}
}
