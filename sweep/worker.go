package sweep

// The worker protocol: a Pool (pool.go) runs each point in a child process,
// `ktune worker`, so that a kernel that faults, traps, hangs or takes the
// process down ends that process and not the sweep. The two talk in JSON
// lines over the worker's stdin and stdout:
//
//	parent → worker  {"op":"env"}
//	worker → parent  {"ktune_worker":1,"env":{…}}
//	parent → worker  {"op":"run","point":{…the *Point, Twin included…}}
//	worker → parent  {"ktune_worker":1,"record":{…}}
//	worker → parent  {"ktune_worker":1,"record":{…,"status":"fault"},"fatal":"…"}
//
// One request, one response, in order. A response with "fatal" set means
// the backend can no longer run points (a sticky CUDA error, the device
// could not be opened): the worker exits after sending it and the parent
// starts a fresh one. The worker serves requests until its stdin closes.
//
// Every response carries the "ktune_worker" tag so that the parent can tell
// it from anything else that lands on the worker's stdout (a native library
// that prints there): untagged lines are logged, never decoded as answers.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// workerProtocol is the version carried by every response line.
const workerProtocol = 1

// A workerOp is what a request asks of the worker.
type workerOp string

const (
	opEnv workerOp = "env" // describe the device (measures its bandwidth once)
	opRun workerOp = "run" // gate and measure Point
)

type workerRequest struct {
	Op    workerOp    `json:"op"`
	Point *plan.Point `json:"point,omitempty"`
}

type workerResponse struct {
	Tag    int             `json:"ktune_worker"`
	Env    *results.Env    `json:"env,omitempty"`
	Record *results.Record `json:"record,omitempty"`
	// Fatal is the backend's error when it can no longer run points; the
	// worker exits after this response.
	Fatal string `json:"fatal,omitempty"`
}

// ServeOptions configure Serve.
type ServeOptions struct {
	// Hung, if set, is called (from another goroutine) when a point has run
	// HangAfter past its own time limit. The parent kills a hung worker
	// itself; this is the worker's own guard for when the parent is gone
	// (killed with SIGKILL), so that an orphaned worker spinning in a
	// kernel does not hold the GPU forever. It is expected to exit the
	// process.
	Hung func(p *plan.Point)
	// HangAfter is the margin past a point's limit (Measure.TimeoutSec, or
	// DefaultTimeout when unset) before Hung is called.
	HangAfter time.Duration
}

// DefaultTimeout bounds a point whose Measure.TimeoutSec is unset.
const DefaultTimeout = 120 * time.Second

// pointLimit is the time a point may take, gates included.
func pointLimit(p *plan.Point) time.Duration {
	if p.Measure.TimeoutSec > 0 {
		return time.Duration(p.Measure.TimeoutSec * float64(time.Second))
	}
	return DefaultTimeout
}

// Serve is the body of a worker process: it opens a backend with open,
// answers the requests read from in on out (see the protocol above) and
// returns when in ends (nil) or when the backend can no longer run points
// (the error, after telling the parent). The backend is closed on return.
func Serve(ctx context.Context, open func() (plan.Backend, error), in io.Reader, out io.Writer, opts ServeOptions) error {
	b, openErr := open()
	if b != nil {
		defer b.Close()
	}
	br := bufio.NewReaderSize(in, 1<<20)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				return openErr
			}
			return fmt.Errorf("reading a request: %w", err)
		}
		var req workerRequest
		if jerr := json.Unmarshal(line, &req); jerr != nil {
			// The parent is ktune itself: a request it cannot have sent
			// means the two ends disagree, and guessing would be worse.
			fatal := fmt.Errorf("reading a request: %w", jerr)
			send(out, workerResponse{Fatal: fatal.Error()})
			return fatal
		}
		if openErr != nil {
			send(out, workerResponse{Fatal: openErr.Error()})
			return openErr
		}
		resp, fatal := serveOne(ctx, b, req, opts)
		if err := send(out, resp); err != nil {
			return err
		}
		if fatal != nil {
			return fatal
		}
	}
}

// serveOne answers one request.
func serveOne(ctx context.Context, b plan.Backend, req workerRequest, opts ServeOptions) (workerResponse, error) {
	switch req.Op {
	case opEnv:
		env, err := b.Env(ctx)
		if err != nil {
			return workerResponse{Fatal: err.Error()}, err
		}
		return workerResponse{Env: &env}, nil
	case opRun:
		if req.Point == nil {
			err := errors.New("a run request without a point")
			return workerResponse{Fatal: err.Error()}, err
		}
		if opts.Hung != nil {
			p := req.Point
			t := time.AfterFunc(pointLimit(p)+opts.HangAfter, func() { opts.Hung(p) })
			defer t.Stop()
		}
		rec, err := b.Run(ctx, req.Point)
		resp := workerResponse{}
		if rec.Status != "" {
			resp.Record = &rec
		}
		if err != nil {
			resp.Fatal = err.Error()
		} else if resp.Record == nil {
			resp.Record = &results.Record{Hash: req.Point.Hash, Config: req.Point.Config,
				Status: results.StatusError, Error: "the backend returned a record without a status"}
		}
		return resp, err
	}
	err := fmt.Errorf("unknown request %q", req.Op)
	return workerResponse{Fatal: err.Error()}, err
}

// send writes resp as one tagged line. A record that JSON cannot encode (a
// NaN in a float field) is replaced by an error record saying so, as the
// sweep does when it appends one: the point's failure is data, and the
// worker lives on.
func send(out io.Writer, resp workerResponse) error {
	resp.Tag = workerProtocol
	b, err := json.Marshal(resp)
	var uv *json.UnsupportedValueError
	if errors.As(err, &uv) && resp.Record != nil {
		r := resp.Record
		resp.Record = &results.Record{Hash: r.Hash, Time: r.Time, Config: r.Config, Env: r.Env,
			Status: results.StatusError, Compile: r.Compile, Landed: r.Landed,
			Error: fmt.Sprintf("the backend's record could not be encoded: %v", err)}
		// The wall time may be the culprit; the sweep measures its own.
		b, err = json.Marshal(resp)
	}
	if err != nil {
		return fmt.Errorf("encoding a response: %w", err)
	}
	// One write per line, so that a line is never split by another writer
	// of the same pipe.
	if _, err := out.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("answering the parent: %w", err)
	}
	return nil
}
