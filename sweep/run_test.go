package sweep

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// testPlan builds n points by hand: variant d2 over SPLITS {32, 64} and
// nkv {2048, 8192, …}, with distinct hashes; the first is the landed one.
func testPlan(n int) *plan.Plan {
	pl := &plan.Plan{}
	for i := 0; i < n; i++ {
		splits := []string{"32", "64"}[i%2]
		nkv := 2048 << (2 * (i / 2))
		p := &plan.Point{
			Index: i,
			Hash:  fmt.Sprintf("%016x", 0xa000+i),
			Config: results.Config{
				Spec: "t", Variant: "d2", Kernel: "d2",
				Defines: []results.Define{{Name: "HEAD_DIM", Value: "128"}, {Name: "SPLITS", Value: splits}},
				Shape:   results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 131072},
				NKV:     nkv,
			},
			GateNKV: []int{1, 29},
			Probes:  []results.Probe{results.ProbeCold},
			Landed:  i == 0,
		}
		pl.Points = append(pl.Points, p)
	}
	return pl
}

var testEnv = results.Env{Device: "NVIDIA H200", Arch: "sm_90", SMs: 132, ReadBWGBps: 4560}

// recordsFor returns what a device "measured" for the plan: point 3 fails
// its tolerance gate, every other one passes with a cold median of
// (i+1)·10 µs.
func recordsFor(pl *plan.Plan) []results.Record {
	var recs []results.Record
	for i, p := range pl.Points {
		r := results.Record{Hash: p.Hash, Config: p.Config, Env: testEnv, Status: results.StatusOK,
			Gates: []results.Gate{{Kind: results.GateTolerance, NKV: 29, Pass: true}}, WallSec: 1}
		if i == 3 {
			r.Status = results.StatusGateFailed
			r.Gates[0].Pass = false
		} else {
			med := float64(i+1) * 1e4
			r.Probes = []results.Measurement{{Probe: results.ProbeCold, SamplesNS: []float64{med}, Summary: results.Summary{N: 1, Median: med}}}
		}
		recs = append(recs, r)
	}
	return recs
}

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

func (e *runEnv) opts() RunOptions {
	return RunOptions{Dir: e.dir, Progress: &e.out, Log: &e.log, Clock: fakeClock()}
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

func planHashes(pl *plan.Plan, idx ...int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, pl.Points[i].Hash)
	}
	return out
}

func same(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	}
}

func TestRunFull(t *testing.T) {
	pl := testPlan(6)
	e := newRunEnv(t)
	rp := replay.New(recordsFor(pl))
	sum, err := Run(context.Background(), rp, pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	all := planHashes(pl, 0, 1, 2, 3, 4, 5)
	same(t, "backend calls", rp.Calls(), all)
	same(t, "file", fileHashes(t, e.dir), all)
	same(t, "summary records", recHashes(sum.Records), all)
	want := Summary{Planned: 6, Ran: 6, OK: 5, GateFailed: 1}
	got := sum
	got.Records, got.Elapsed = nil, 0
	if !reflect.DeepEqual(got, want) {
		t.Errorf("summary %+v, want %+v", got, want)
	}
	if sum.Elapsed <= 0 {
		t.Errorf("elapsed %v", sum.Elapsed)
	}
	for i, r := range sum.Records {
		if r.Landed != (i == 0) {
			t.Errorf("record %d: Landed = %v", i, r.Landed)
		}
		if r.Schema != results.SchemaVersion || r.Env != testEnv {
			t.Errorf("record %d: schema %d env %+v", i, r.Schema, r.Env)
		}
	}
}

func TestRunResumeSkipsRecorded(t *testing.T) {
	pl := testPlan(4)
	e := newRunEnv(t)
	first, err := Run(context.Background(), replay.New(recordsFor(pl)), pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	rp := replay.New(recordsFor(pl))
	e.log.Reset()
	sum, err := Run(context.Background(), rp, pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	if len(rp.Calls()) != 0 || sum.Ran != 0 || sum.Skipped != 4 {
		t.Errorf("second run: calls %v, ran %d, skipped %d; want nothing run, 4 skipped", rp.Calls(), sum.Ran, sum.Skipped)
	}
	// Compared as JSON: the first run's times carry a monotonic reading
	// and a local zone that the file does not keep.
	j1, _ := json.Marshal(first.Records)
	j2, _ := json.Marshal(sum.Records)
	if !bytes.Equal(j1, j2) {
		t.Errorf("second run's records differ from the first run's:\n%s\n%s", j1, j2)
	}
	if !strings.Contains(e.log.String(), "4 of 4 points already recorded") {
		t.Errorf("log does not report the skips: %q", e.log.String())
	}
	same(t, "file", fileHashes(t, e.dir), planHashes(pl, 0, 1, 2, 3))
}

// TestRunAgain: a recorded point that RunOptions.Again picks (a record
// that is no result) runs again and its new record supersedes; the other
// recorded points are skipped, and without Again none runs.
func TestRunAgain(t *testing.T) {
	pl := testPlan(3)
	e := newRunEnv(t)
	recs := recordsFor(pl)
	undecided := recs[1]
	undecided.Status, undecided.Probes = results.StatusError, nil
	undecided.Error = undecidedError + ": 1 sanitizer run(s) decided nothing (test)"
	if _, err := Run(context.Background(), replay.New([]results.Record{recs[0], undecided, recs[2]}), pl, e.opts()); err != nil {
		t.Fatal(err)
	}
	rp := replay.New(recs)
	if sum, err := Run(context.Background(), rp, pl, e.opts()); err != nil || sum.Ran != 0 {
		t.Fatalf("without Again: ran %d (%v), want none", sum.Ran, err)
	}
	opts := e.opts()
	opts.Again = SanitizeUndecided
	e.log.Reset()
	sum, err := Run(context.Background(), rp, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 1 || sum.Skipped != 2 || sum.Records[1].Status != results.StatusOK {
		t.Errorf("ran %d, skipped %d, point 1 now %s; want 1, 2, ok", sum.Ran, sum.Skipped, sum.Records[1].Status)
	}
	if !strings.Contains(e.log.String(), "1 recorded point(s) hold no result") {
		t.Errorf("the log: %q", e.log.String())
	}
	same(t, "file", fileHashes(t, e.dir), planHashes(pl, 0, 1, 2, 1))
}

func TestRunForceRuns(t *testing.T) {
	pl := testPlan(3)
	e := newRunEnv(t)
	first, err := Run(context.Background(), replay.New(recordsFor(pl)), pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	rp := replay.New(recordsFor(pl))
	later := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	rp.Clock = func() time.Time { return later }
	opts := e.opts()
	opts.Force = true
	sum, err := Run(context.Background(), rp, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Ran != 3 || sum.Skipped != 0 || len(rp.Calls()) != 3 {
		t.Errorf("forced run: ran %d, skipped %d, calls %d; want 3, 0, 3", sum.Ran, sum.Skipped, len(rp.Calls()))
	}
	same(t, "file", fileHashes(t, e.dir), planHashes(pl, 0, 1, 2, 0, 1, 2))
	for i, r := range sum.Records {
		if !r.Time.Equal(later) || r.Time.Equal(first.Records[i].Time) {
			t.Errorf("record %d: time %v, want the forced run's %v", i, r.Time, later)
		}
	}
}

func TestRunCancelMidRun(t *testing.T) {
	pl := testPlan(6)
	e := newRunEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rp := replay.New(recordsFor(pl))
	// Interrupt while the third point is in flight.
	rp.Hook = func(call int, p *plan.Point) {
		if call == 3 {
			cancel()
		}
	}
	sum, err := Run(ctx, rp, pl, e.opts())
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want one wrapping context.Canceled", err)
	}
	for _, want := range []string{"after 2 of 6 points", "the point in flight was not recorded", "re-run the same command: recorded points are skipped"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	same(t, "file", fileHashes(t, e.dir), planHashes(pl, 0, 1))
	same(t, "summary records", recHashes(sum.Records), planHashes(pl, 0, 1))
	if sum.Ran != 2 {
		t.Errorf("ran %d, want 2", sum.Ran)
	}

	// Resuming runs exactly what is missing.
	rp2 := replay.New(recordsFor(pl))
	sum, err = Run(context.Background(), rp2, pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	same(t, "resume calls", rp2.Calls(), planHashes(pl, 2, 3, 4, 5))
	same(t, "file after resume", fileHashes(t, e.dir), planHashes(pl, 0, 1, 2, 3, 4, 5))
	if sum.Skipped != 2 || sum.Ran != 4 {
		t.Errorf("resume: skipped %d ran %d, want 2 and 4", sum.Skipped, sum.Ran)
	}
}

func TestRunCrashLosesOnlyTornPoint(t *testing.T) {
	pl := testPlan(5)
	e := newRunEnv(t)
	if _, err := Run(context.Background(), replay.New(recordsFor(pl)), pl, e.opts()); err != nil {
		t.Fatal(err)
	}
	// A kill -9 during the last write: the last line is cut in half.
	path := results.FilePath(e.dir)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lastStart := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	cut := lastStart + (len(data)-lastStart)/2
	if err := os.WriteFile(path, data[:cut], 0o644); err != nil {
		t.Fatal(err)
	}

	rp := replay.New(recordsFor(pl))
	sum, err := Run(context.Background(), rp, pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	same(t, "resume calls", rp.Calls(), planHashes(pl, 4))
	same(t, "file", fileHashes(t, e.dir), planHashes(pl, 0, 1, 2, 3, 4))
	if sum.Skipped != 4 || sum.Ran != 1 {
		t.Errorf("skipped %d ran %d, want 4 and 1", sum.Skipped, sum.Ran)
	}
	log := e.log.String()
	if !strings.Contains(log, path+":5: truncated last line (a crash mid-write?)") {
		t.Errorf("log does not report the torn line: %q", log)
	}
	if !strings.Contains(log, "removed the truncated last line") {
		t.Errorf("log does not report the repair: %q", log)
	}
}

func TestRunBackendErrorStops(t *testing.T) {
	pl := testPlan(5)
	e := newRunEnv(t)
	rp := replay.New(recordsFor(pl))
	rp.FailAt = 3
	sum, err := Run(context.Background(), rp, pl, e.opts())
	if err == nil || !strings.Contains(err.Error(), "backend died at call 3") {
		t.Fatalf("error %v, want the backend's", err)
	}
	if !strings.Contains(err.Error(), "point 3 of 5") || !strings.Contains(err.Error(), resumeHint) {
		t.Errorf("error %q does not say where it stopped and how to resume", err)
	}
	same(t, "calls", rp.Calls(), planHashes(pl, 0, 1, 2))
	recs, _, _ := results.ReadFile(results.FilePath(e.dir))
	same(t, "file", recHashes(recs), planHashes(pl, 0, 1, 2))
	if len(recs) == 3 && recs[2].Status != results.StatusFault {
		t.Errorf("the failing point was recorded with status %q, want fault", recs[2].Status)
	}
	if sum.Ran != 3 || sum.Failed != 1 || sum.OK != 2 {
		t.Errorf("summary %+v", sum)
	}
}

// deadBackend dies without a record on its first Run.
type deadBackend struct{ replay.Backend }

func (d *deadBackend) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	return results.Record{}, errors.New("context lost")
}

func TestRunBackendErrorWithoutRecord(t *testing.T) {
	pl := testPlan(2)
	e := newRunEnv(t)
	b := &deadBackend{*replay.New(recordsFor(pl))}
	_, err := Run(context.Background(), b, pl, e.opts())
	if err == nil || !strings.Contains(err.Error(), "context lost") {
		t.Fatalf("error %v", err)
	}
	// Nothing to record: the point runs again on resume.
	if _, err := os.Stat(results.FilePath(e.dir)); err == nil {
		if h := fileHashes(t, e.dir); len(h) != 0 {
			t.Errorf("recorded %v", h)
		}
	}
}

func TestRunNotRecordedReplay(t *testing.T) {
	pl := testPlan(3)
	e := newRunEnv(t)
	recs := recordsFor(pl)
	sum, err := Run(context.Background(), replay.New(recs[:2]), pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	last := sum.Records[2]
	if last.Status != results.StatusError || last.Error != "not recorded" || last.Hash != pl.Points[2].Hash {
		t.Errorf("unrecorded point came back as %+v", last)
	}
	if sum.Failed != 1 {
		t.Errorf("failed %d, want 1", sum.Failed)
	}
}

func TestRunFilter(t *testing.T) {
	pl := testPlan(6)
	f, err := results.ParseFilter("variant=d2, SPLITS=64")
	if err != nil {
		t.Fatal(err)
	}
	e := newRunEnv(t)
	opts := e.opts()
	opts.Filter = func(p *plan.Point) bool { return f.Match(&p.Config) }
	rp := replay.New(recordsFor(pl))
	sum, err := Run(context.Background(), rp, pl, opts)
	if err != nil {
		t.Fatal(err)
	}
	same(t, "calls", rp.Calls(), planHashes(pl, 1, 3, 5))
	if sum.Planned != 3 {
		t.Errorf("planned %d, want 3", sum.Planned)
	}
}

func TestFilterParseAndCheck(t *testing.T) {
	pl := testPlan(6)
	cases := []struct {
		expr    string
		match   []int
		wantErr string
	}{
		{expr: "nkv=8192", match: []int{2, 3}},
		{expr: "SPLITS=32|64,nkv=2048", match: []int{0, 1}},
		{expr: "shape=7b,variant=d2,SPLITS=32", match: []int{0, 2, 4}},
		{expr: "SPLIT=32", wantErr: `no configuration has a "SPLIT"; keys are variant, shape, nkv and the defines (HEAD_DIM, SPLITS)`},
		{expr: "variant=r4", wantErr: `selects none of the 6 configurations`},
	}
	for _, c := range cases {
		f, err := results.ParseFilter(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		err = f.Check(pl.Configs())
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s: Check = %v, want %q", c.expr, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
		}
		var got []int
		for i, p := range pl.Points {
			if f.Match(&p.Config) {
				got = append(got, i)
			}
		}
		if !reflect.DeepEqual(got, c.match) {
			t.Errorf("%s matches %v, want %v", c.expr, got, c.match)
		}
	}
	for _, bad := range []string{"", "variant", "=d2", "SPLITS="} {
		if _, err := results.ParseFilter(bad); err == nil {
			t.Errorf("results.ParseFilter(%q) accepted", bad)
		}
	}
}

func TestParseProbes(t *testing.T) {
	got, err := measure.ParseProbes("hot, cold,hot")
	if err != nil || !reflect.DeepEqual(got, []results.Probe{results.ProbeHot, results.ProbeCold}) {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := measure.ParseProbes("cold,warm"); err == nil || !strings.Contains(err.Error(), `"warm"`) {
		t.Errorf("unknown probe: %v", err)
	}
}

// TestProgressGolden pins both progress displays on a run with a passing,
// a gate-failing and an unrecorded point.
func TestProgressGolden(t *testing.T) {
	for _, tty := range []bool{false, true} {
		pl := testPlan(6)
		e := newRunEnv(t)
		opts := e.opts()
		opts.IsTTY = tty
		recs := recordsFor(pl)
		if _, err := Run(context.Background(), replay.New(recs[:5]), pl, opts); err != nil {
			t.Fatal(err)
		}
		name := "progress_lines.golden"
		if tty {
			name = "progress_tty.golden"
		}
		// Make the terminal control sequences visible in the golden file,
		// one redraw per line.
		got := strings.NewReplacer("\r", "\n\\r", "\x1b[K", `\e[K`).Replace(e.out.String())
		golden.Check(t, filepath.Join("testdata", name), []byte(got))
	}
}

func TestRunUnencodableRecordBecomesError(t *testing.T) {
	pl := testPlan(3)
	e := newRunEnv(t)
	recs := recordsFor(pl)
	recs[1].Probes[0].Summary.RelNoise = math.Inf(1)
	sum, err := Run(context.Background(), replay.New(recs), pl, e.opts())
	if err != nil {
		t.Fatal(err)
	}
	same(t, "file", fileHashes(t, e.dir), planHashes(pl, 0, 1, 2))
	r := sum.Records[1]
	if r.Status != results.StatusError || !strings.Contains(r.Error, "unsupported value: +Inf") {
		t.Errorf("record 1: %s %q, want an error record naming the Inf", r.Status, r.Error)
	}
}

func TestReplayReturnsIndependentCopies(t *testing.T) {
	pl := testPlan(1)
	rp := replay.New(recordsFor(pl))
	a, _ := rp.Run(context.Background(), pl.Points[0])
	a.Probes[0].SamplesNS[0] = -1
	a.Gates[0].Pass = false
	b, _ := rp.Run(context.Background(), pl.Points[0])
	if b.Probes[0].SamplesNS[0] == -1 || !b.Gates[0].Pass {
		t.Error("a change to one returned record showed in the next")
	}
}
