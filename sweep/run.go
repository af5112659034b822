package sweep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// RunOptions configures Run.
type RunOptions struct {
	// Dir is the results directory; records go to Dir/results.jsonl.
	Dir string
	// Force re-runs points already recorded in Dir (the new record
	// supersedes the old one).
	Force bool
	// Again, if set, picks recorded points that run again although
	// recorded (the new record supersedes): records that are no result,
	// such as those of points the sanitizer left undecided
	// (SanitizeUndecided).
	Again func(results.Record) bool
	// Filter, if set, selects the points to consider; the others are
	// neither run nor counted.
	Filter func(*plan.Point) bool
	// Progress receives the progress display; nil discards it.
	Progress io.Writer
	// IsTTY makes the progress a single updating line instead of one line
	// per point.
	IsTTY bool
	// Clock returns the current time; nil means time.Now. Tests inject a
	// fake one to pin record times, ETAs and durations.
	Clock func() time.Time
	// Log receives warnings (unreadable result lines) and notes (points
	// skipped); nil discards them.
	Log io.Writer
	// Precompile, if set, is called once with the points about to run, in
	// the order they will run, before the first starts: it sets their
	// kernels compiling on the CPU while the backend measures. The
	// function it returns is called when Run ends; it stops what is left
	// and reports Summary.Compile.
	Precompile func(todo []*plan.Point) (stop func() plan.CompileStats)
	// GateSuite names the gate suite a point is gated under (the gates'
	// own, gate.Suite): written into every record, and a point recorded
	// under another suite runs again. Nil: records name none and none
	// runs again for its suite (a backend that runs no gates).
	GateSuite func(*plan.Point) string
}

// A Summary is the outcome of Run.
type Summary struct {
	Planned    int // points selected by the filter
	Skipped    int // already recorded, not run again
	Ran        int // run and recorded by this call
	OK         int // of Ran: gates passed, measured
	GateFailed int // of Ran: a gate failed
	Failed     int // of Ran: compile failure, fault, timeout, OOM, error
	// Records holds the current record of every planned point that has
	// one, old and new, in plan order.
	Records []results.Record
	Elapsed time.Duration
	// Compile reports the kernel builds, when RunOptions.Precompile was
	// set; zero otherwise.
	Compile plan.CompileStats
}

// resumeHint is what every early stop tells the user: nothing recorded is
// lost and nothing is measured twice.
const resumeHint = "re-run the same command: recorded points are skipped"

// Run runs the plan's points on b in plan order and appends one record per
// point to opts.Dir/results.jsonl, each fsynced before the next point
// starts. Points whose hash is already recorded there are skipped unless
// opts.Force, so an interrupted sweep resumes where it stopped.
//
// When ctx is cancelled, the point in flight is abandoned (not recorded)
// and Run returns an error wrapping ctx.Err(). When b.Run returns an error
// the backend is unusable: the record it returned, if any, is kept and Run
// stops with that error. In both cases the Summary covers what was done.
func Run(ctx context.Context, b plan.Backend, pl *plan.Plan, opts RunOptions) (sum Summary, err error) {
	clock := opts.Clock
	if clock == nil {
		clock = time.Now
	}
	logw := opts.Log
	if logw == nil {
		logw = io.Discard
	}
	start := clock()
	if opts.Dir == "" {
		return sum, errors.New("sweep: no results directory")
	}

	var points []*plan.Point
	for _, p := range pl.Points {
		if opts.Filter == nil || opts.Filter(p) {
			points = append(points, p)
		}
	}
	sum.Planned = len(points)

	path := results.FilePath(opts.Dir)
	recorded, err := loadRecorded(path, logw)
	if err != nil {
		return sum, err
	}
	defer func() {
		for _, p := range points {
			if r, ok := recorded[p.Hash]; ok {
				sum.Records = append(sum.Records, r)
			}
		}
		sum.Elapsed = clock().Sub(start)
	}()

	var todo []*plan.Point
	queued := map[string]bool{}
	regate, again := 0, 0
	for _, p := range points {
		r, done := recorded[p.Hash]
		switch {
		case done && opts.GateSuite != nil && results.GateSuiteKey(r.GateSuite) != results.GateSuiteKey(opts.GateSuite(p)):
			// Gated by an older suite: the gates added since never saw it.
			done = false
			regate++
		case done && opts.Again != nil && opts.Again(r):
			done = false
			again++
		}
		if (done && !opts.Force) || queued[p.Hash] {
			sum.Skipped++
			continue
		}
		queued[p.Hash] = true
		todo = append(todo, p)
	}
	if regate > 0 {
		fmt.Fprintf(logw, "%d recorded point(s) were gated by another gate suite than this build's: they run again\n", regate)
	}
	if again > 0 {
		fmt.Fprintf(logw, "%d recorded point(s) hold no result (their sanitizer runs were undecided): they run again\n", again)
	}
	if sum.Skipped > 0 {
		fmt.Fprintf(logw, "%d of %d points already recorded in %s: skipped", sum.Skipped, sum.Planned, path)
		if !opts.Force {
			fmt.Fprint(logw, " (--force measures them again)")
		}
		fmt.Fprintln(logw)
	}
	if len(todo) == 0 {
		return sum, nil
	}

	interrupted := func(inFlight bool) error {
		what := ""
		if inFlight {
			what = " (the point in flight was not recorded)"
		}
		return fmt.Errorf("sweep interrupted after %d of %d points%s; results so far are in %s; %s: %w",
			sum.Ran, len(todo), what, path, resumeHint, ctx.Err())
	}

	env, err := b.Env(ctx)
	if ctx.Err() != nil {
		return sum, interrupted(false)
	}
	if err != nil {
		return sum, fmt.Errorf("describing the device: %w", err)
	}
	w, err := results.OpenWriter(opts.Dir)
	if err != nil {
		return sum, err
	}
	defer w.Close()
	if n := w.DroppedTail(); n > 0 {
		fmt.Fprintf(logw, "%s: removed the truncated last line (%d bytes) left by an interrupted write; its point runs again\n", path, n)
	}

	if opts.Precompile != nil {
		stop := opts.Precompile(slices.Clone(todo))
		defer func() { sum.Compile = stop() }()
	}
	prog := newProgress(opts.Progress, opts.IsTTY, len(todo), clock, newLabeler(points))
	defer prog.finish()
	// keep records the outcome of point i of todo.
	keep := func(i int, p *plan.Point, rec results.Record, t0 time.Time) error {
		fill(&rec, p, env, opts.GateSuite, clock, t0)
		if err := appendRecord(w, &rec); err != nil {
			return fmt.Errorf("recording point %s: %w", prog.label(p), err)
		}
		recorded[p.Hash] = rec
		sum.Ran++
		switch rec.Status {
		case results.StatusOK:
			sum.OK++
		case results.StatusGateFailed:
			sum.GateFailed++
		default:
			sum.Failed++
		}
		prog.end(i, p, &rec, clock().Sub(t0))
		return nil
	}
	if cb, ok := b.(Concurrent); ok && cb.Slots() > 1 {
		return sum, runConcurrent(ctx, cb, todo, prog, clock, keep, func(i int, p *plan.Point, err error) error {
			return backendStopped(i, len(todo), sum.Ran, prog.label(p), path, err)
		}, interrupted)
	}
	for i, p := range todo {
		if ctx.Err() != nil {
			return sum, interrupted(false)
		}
		prog.begin(i, p)
		t0 := clock()
		rec, rerr := b.Run(ctx, p)
		if ctx.Err() != nil {
			// A result that raced the interrupt may be incomplete (the
			// backend was told to stop); the next run measures it again.
			return sum, interrupted(true)
		}
		if rerr != nil && rec.Status == "" {
			return sum, backendStopped(i, len(todo), i, prog.label(p), path, rerr)
		}
		if err := keep(i, p, rec, t0); err != nil {
			return sum, err
		}
		if rerr != nil {
			return sum, backendStopped(i, len(todo), i, prog.label(p), path, rerr)
		}
	}
	return sum, nil
}

// runConcurrent is Run's loop for a backend with several slots: a shared
// queue in plan order, one goroutine per slot pulling from it, and this
// goroutine recording each point as it finishes (the file is in finishing
// order; Summary.Records stays in plan order). When one point stops the
// backend, no new point starts and the ones in flight are still recorded.
func runConcurrent(ctx context.Context, b Concurrent, todo []*plan.Point, prog *progress, clock func() time.Time,
	keep func(int, *plan.Point, results.Record, time.Time) error,
	stopped func(int, *plan.Point, error) error, interrupted func(bool) error) error {
	type job struct {
		i  int
		p  *plan.Point
		t0 time.Time
	}
	type done struct {
		job
		rec results.Record
		err error
	}
	jobs := make(chan job)
	dones := make(chan done)
	var wg sync.WaitGroup
	for range b.Slots() {
		wg.Go(func() {
			for j := range jobs {
				rec, err := b.Run(ctx, j.p)
				dones <- done{j, rec, err}
			}
		})
	}
	defer wg.Wait()
	defer close(jobs)
	next, inFlight := 0, 0
	var first error // the error that ends the sweep, once one has
	for {
		for first == nil && inFlight < b.Slots() && next < len(todo) {
			if ctx.Err() != nil {
				first = interrupted(inFlight > 0)
				break
			}
			prog.begin(next, todo[next])
			jobs <- job{next, todo[next], clock()}
			next++
			inFlight++
		}
		if inFlight == 0 {
			return first
		}
		d := <-dones
		inFlight--
		switch {
		case ctx.Err() != nil:
			if first == nil {
				first = interrupted(true)
			}
		case d.err != nil && d.rec.Status == "":
			if first == nil {
				first = stopped(d.i, d.p, d.err)
			}
		default:
			if err := keep(d.i, d.p, d.rec, d.t0); err != nil && first == nil {
				first = err
			}
			if d.err != nil && first == nil {
				first = stopped(d.i, d.p, d.err)
			}
		}
	}
}

func backendStopped(i, n, recorded int, label, path string, err error) error {
	return fmt.Errorf("point %d of %d (%s): the backend stopped: %w; %d points recorded in %s; %s",
		i+1, n, label, err, recorded, path, resumeHint)
}

// fill completes a backend's record with what the driver owns: the point's
// identity, the landed mark and, where the backend left them unset, the
// device, the time and the wall time.
func fill(rec *results.Record, p *plan.Point, env results.Env, suite func(*plan.Point) string, clock func() time.Time, t0 time.Time) {
	rec.Hash = p.Hash
	if suite != nil {
		rec.GateSuite = suite(p)
	}
	rec.Landed = p.Landed
	if rec.Config.Variant == "" {
		rec.Config = p.Config
	}
	if rec.Env == (results.Env{}) {
		rec.Env = env
	}
	now := clock()
	if rec.Time.IsZero() {
		rec.Time = now
	}
	if rec.WallSec == 0 {
		rec.WallSec = now.Sub(t0).Seconds()
	}
}

// appendRecord appends rec. A record JSON cannot encode (a NaN or an Inf
// in a float field, a backend bug) is replaced by an error record that
// says so, rather than stopping the sweep: the point's failure is then
// data like any other.
func appendRecord(w *results.Writer, rec *results.Record) error {
	err := w.Append(rec)
	var uv *json.UnsupportedValueError
	if !errors.As(err, &uv) {
		return err
	}
	*rec = results.Record{
		Hash: rec.Hash, Time: rec.Time, Config: rec.Config, Env: rec.Env,
		Status: results.StatusError, Compile: rec.Compile, WallSec: rec.WallSec, Landed: rec.Landed,
		Error: fmt.Sprintf("the backend's record could not be written: %v", err),
	}
	return w.Append(rec)
}

// loadRecorded returns the latest record of each hash in path, reporting
// unreadable lines to logw; a missing file is an empty history.
func loadRecorded(path string, logw io.Writer) (map[string]results.Record, error) {
	recs, warns, err := results.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]results.Record{}, nil
	}
	for _, w := range warns {
		fmt.Fprintf(logw, "warning: %v\n", w)
	}
	if err != nil {
		return nil, err
	}
	m := make(map[string]results.Record, len(recs))
	for _, r := range recs {
		m[r.Hash] = r
	}
	return m, nil
}
