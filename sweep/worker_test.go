package sweep

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/replay"
)

// requests encodes a worker's input.
func requests(t *testing.T, reqs ...workerRequest) *strings.Reader {
	t.Helper()
	var b strings.Builder
	for _, r := range reqs {
		line, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return strings.NewReader(b.String())
}

// responses decodes a worker's output, checking every line's tag.
func responses(t *testing.T, out string) []workerResponse {
	t.Helper()
	var rs []workerResponse
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r workerResponse
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("response %q: %v", sc.Text(), err)
		}
		if r.Tag != workerProtocol {
			t.Errorf("response %q: tag %d", sc.Text(), r.Tag)
		}
		rs = append(rs, r)
	}
	return rs
}

func TestServeAnswersInOrder(t *testing.T) {
	pl := testPlan(3)
	pl.Points[1].Twin = pl.Points[0] // travels with its twin
	rp := replay.New(recordsFor(pl))
	in := requests(t, workerRequest{Op: opEnv}, workerRequest{Op: opRun, Point: pl.Points[1]}, workerRequest{Op: opRun, Point: pl.Points[2]})
	var out strings.Builder
	err := Serve(context.Background(), func() (plan.Backend, error) { return rp, nil }, in, &out, ServeOptions{})
	if err != nil {
		t.Fatalf("Serve at the end of its input: %v", err)
	}
	rs := responses(t, out.String())
	if len(rs) != 3 {
		t.Fatalf("%d responses, want 3:\n%s", len(rs), out.String())
	}
	if rs[0].Env == nil || *rs[0].Env != testEnv {
		t.Errorf("env response %+v", rs[0])
	}
	for i, r := range rs[1:] {
		if r.Fatal != "" || r.Record == nil || r.Record.Hash != pl.Points[i+1].Hash || r.Record.Status != results.StatusOK {
			t.Errorf("run response %d: %+v", i, r)
		}
	}
	same(t, "points run", rp.Calls(), planHashes(pl, 1, 2))
}

func TestServeFatalEndsTheWorker(t *testing.T) {
	pl := testPlan(3)
	rp := replay.New(recordsFor(pl))
	rp.FailAt = 1
	in := requests(t, workerRequest{Op: opRun, Point: pl.Points[0]}, workerRequest{Op: opRun, Point: pl.Points[1]})
	var out strings.Builder
	err := Serve(context.Background(), func() (plan.Backend, error) { return rp, nil }, in, &out, ServeOptions{})
	if err == nil || !strings.Contains(err.Error(), "backend died") {
		t.Fatalf("Serve after a fatal point: %v", err)
	}
	rs := responses(t, out.String())
	if len(rs) != 1 || rs[0].Fatal == "" || rs[0].Record == nil || rs[0].Record.Status != results.StatusFault {
		t.Fatalf("responses %+v: want one, fatal, with the fault record", rs)
	}
	same(t, "points run", rp.Calls(), planHashes(pl, 0))
}

func TestServeOpenFailure(t *testing.T) {
	in := requests(t, workerRequest{Op: opEnv})
	var out strings.Builder
	openErr := errors.New("opening the CUDA driver: libcuda.so.1: cannot open shared object file")
	err := Serve(context.Background(), func() (plan.Backend, error) { return nil, openErr }, in, &out, ServeOptions{})
	if !errors.Is(err, openErr) {
		t.Fatalf("Serve = %v, want the open error", err)
	}
	rs := responses(t, out.String())
	if len(rs) != 1 || rs[0].Fatal != openErr.Error() {
		t.Fatalf("responses %+v: want the open error as fatal", rs)
	}
}

func TestServeBadRequest(t *testing.T) {
	var out strings.Builder
	err := Serve(context.Background(), func() (plan.Backend, error) { return replay.New(nil), nil },
		strings.NewReader("{\"op\":\"run\"}\n"), &out, ServeOptions{})
	if err == nil || !strings.Contains(err.Error(), "without a point") {
		t.Fatalf("Serve of a run without a point: %v", err)
	}
	out.Reset()
	err = Serve(context.Background(), func() (plan.Backend, error) { return replay.New(nil), nil },
		strings.NewReader("not json\n"), &out, ServeOptions{})
	if err == nil || len(responses(t, out.String())) != 1 {
		t.Fatalf("Serve of a garbled line: %v, output %q", err, out.String())
	}
}

// nanBackend returns records JSON cannot carry; slowBackend takes its time.
type nanBackend struct{ *replay.Backend }

func (nanBackend) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	return results.Record{Hash: p.Hash, Config: p.Config, Status: results.StatusOK, WallSec: math.Inf(1)}, nil
}

func TestServeUnencodableRecord(t *testing.T) {
	pl := testPlan(1)
	var out strings.Builder
	err := Serve(context.Background(), func() (plan.Backend, error) { return nanBackend{replay.New(nil)}, nil },
		requests(t, workerRequest{Op: opRun, Point: pl.Points[0]}), &out, ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs := responses(t, out.String())
	if len(rs) != 1 || rs[0].Record == nil || rs[0].Record.Status != results.StatusError ||
		!strings.Contains(rs[0].Record.Error, "could not be encoded") || rs[0].Record.Hash != pl.Points[0].Hash {
		t.Fatalf("responses %+v: want an error record in place of the unencodable one", rs)
	}
}

type slowBackend struct {
	replay.Backend
	d time.Duration
}

func (s *slowBackend) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	time.Sleep(s.d)
	return results.Record{Hash: p.Hash, Status: results.StatusOK}, nil
}

func TestServeHungGuard(t *testing.T) {
	pl := testPlan(2)
	pl.Points[0].Measure.TimeoutSec = 0.05
	pl.Points[1].Measure.TimeoutSec = 10
	var hung atomic.Value
	opts := ServeOptions{HangAfter: 50 * time.Millisecond, Hung: func(p *plan.Point) { hung.Store(p.Hash) }}
	var out strings.Builder
	// Point 0 overruns its 50 ms limit plus the margin; point 1 is well
	// within its own.
	err := Serve(context.Background(), func() (plan.Backend, error) { return &slowBackend{d: 300 * time.Millisecond}, nil },
		requests(t, workerRequest{Op: opRun, Point: pl.Points[0]}, workerRequest{Op: opRun, Point: pl.Points[1]}), &out, opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := hung.Load().(string); got != pl.Points[0].Hash {
		t.Errorf("Hung called for %q, want only point 0 (%s)", got, pl.Points[0].Hash)
	}
}
