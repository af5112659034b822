package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A pointError is a failure of the point, not of the backend: it becomes
// the record's status.
type pointError struct {
	status results.Status
	err    error
}

func (e *pointError) Error() string { return e.err.Error() }
func (e *pointError) Unwrap() error { return e.err }

func failPoint(status results.Status, format string, args ...any) error {
	return &pointError{status, fmt.Errorf(format, args...)}
}

// Run compiles, gates and measures one point (plan.Backend).
//
// The point's own failures come back in the record with a nil error:
// compile_failed (the NVRTC log in Compile.Log), oom (Error says how much
// it needed and how much was free; nothing was allocated), gate_failed
// (the evidence in Gates, no probes run), timeout (p.Measure.TimeoutSec
// passed between two steps) and error.
//
// Two cases also return a non-nil error, because they end the backend's
// usefulness rather than the point's:
//   - a sticky CUDA error (an illegal address, a trap, a launch failure:
//     cuda.IsSticky) poisons the context for the rest of the process. The
//     record has Status fault and the cause in Error, the returned error
//     wraps the cause, and every later Run or Env fails at once; the
//     driver must continue in a new process.
//   - ctx was cancelled: the record has Status error and whatever was
//     measured, the error wraps ctx.Err().
//
// A kernel that never finishes cannot be stopped from the host; the
// timeout is checked between steps, and a hung launch is left to the
// process that runs the backend to kill.
func (b *Backend) Run(ctx context.Context, p *plan.Point) (rec results.Record, err error) {
	start := time.Now()
	rec = results.Record{
		Schema: results.SchemaVersion,
		Hash:   p.Hash,
		Time:   start.UTC(),
		Config: p.Config,
		Env:    b.env,
		Landed: p.Landed,
		// Whatever the gates conclude, they conclude it under these
		// (package gate's waivers.go).
		Waivers: p.WaiverTexts(),
	}
	defer func() { rec.WallSec = time.Since(start).Seconds() }()
	if b.dead != nil {
		rec.Status, rec.Error = results.StatusFault, b.dead.Error()
		return rec, fmt.Errorf("probe: device unusable after an earlier fault: %w", b.dead)
	}
	if rec.Env, err = b.Env(ctx); err != nil {
		rec.Status, rec.Error = results.StatusError, err.Error()
		if cuda.IsSticky(err) {
			rec.Status = results.StatusFault
		}
		return rec, err
	}
	pctx := ctx
	if p.Measure.TimeoutSec > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(p.Measure.TimeoutSec*float64(time.Second)))
		defer cancel()
	}
	r := &pointRun{session: session{b: b, p: p}, rec: &rec}
	err = r.run(ctx) // before finish reads rec: run fills it in
	return b.finish(pctx, p, rec, err)
}

// finish classifies the outcome of a point.
func (b *Backend) finish(parent context.Context, p *plan.Point, rec results.Record, err error) (results.Record, error) {
	if err == nil {
		if rec.Status == "" {
			rec.Status = results.StatusOK
		}
		return rec, nil
	}
	rec.Error = err.Error()
	var pe *pointError
	switch {
	case cuda.IsSticky(err):
		rec.Status = results.StatusFault
		b.dead = err
		return rec, fmt.Errorf("probe: %s: the CUDA context is lost: %w", p.Config.Variant, err)
	case parent.Err() != nil:
		rec.Status = results.StatusError
		return rec, fmt.Errorf("probe: %s: %w", p.Config.Variant, err)
	case errors.Is(err, context.DeadlineExceeded):
		rec.Status = results.StatusTimeout
		rec.Error = fmt.Sprintf("the point exceeded its %gs limit (%v)", p.Measure.TimeoutSec, err)
	case errors.As(err, &pe):
		rec.Status = pe.status
	case cuda.IsOutOfMemory(err):
		rec.Status = results.StatusOOM
	default:
		rec.Status = results.StatusError
	}
	return rec, nil
}

// A pointRun is the state of one Run: the session its gates and timing
// probes share, the record it fills in, and the timing probes' own state.
type pointRun struct {
	session
	rec *results.Record

	// used marks the sets the current probe's launches ran on, timed the
	// outputs read back after each probe.
	used  [2]bool
	timed []timedOutputs
	// sampled are the timed launches read between samples for the
	// launch-count check (launchcount.go).
	sampled []sampledOutputs
	// graphPairs is the graph probe's pairs per replay.
	graphPairs int
	// timedN counts the probes' pairs (timedPair).
	timedN int
}

func (r *pointRun) run(ctx context.Context) error {
	b, p, c := r.b, r.p, &r.p.Config
	var err error
	if r.l, err = pointLayout(p); err != nil {
		return failPoint(results.StatusError, "sizing the buffers of %s: %w", c.Variant, err)
	}
	for i, n := range c.TimedLengths() {
		if n < 1 || n > c.Shape.Capacity {
			return failPoint(results.StatusError, "sequence %d: nkv %d outside 1..capacity %d", i, n, c.Shape.Capacity)
		}
	}

	k, bld, err := b.gpu.load(p.Source, c, p.Flags)
	if bld != nil {
		r.rec.Compile = bld.record
	}
	if err != nil {
		return err
	}
	if k == nil {
		// A feature of a newer NVRTC than this machine's is named as that.
		why, head := "", ""
		if bld != nil {
			if w := needsNewer(bld.record.Log, b.nvrtcVersion); w != "" {
				why = ": " + w
			}
			head = logHead(bld.record.Log, 3)
		}
		return failPoint(results.StatusCompileFailed, "NVRTC rejected %s (%s)%s%s; the whole log is the record's compile.log field", p.Source.Name, c.Variant, why, head)
	}
	b.logf("%s %s: compiled in %.2fs (cached %v)", c.Variant, c.Defines.String(), bld.record.Seconds, bld.record.Cached)
	if err := checkParams(k, p.Launches); err != nil {
		return failPoint(results.StatusError, "%s: the declared arguments do not match the kernel: %w", c.Variant, err)
	}
	r.k, r.g = k, pointGeometry(p)
	if err := sharedFromSymbols(b.gpu, k, &r.g); err != nil {
		return failPoint(results.StatusError, "%s: %w", c.Variant, err)
	}
	if slices.ContainsFunc(p.Launches, func(l plan.Launch) bool { return l.SharedSymbol != "" }) {
		r.rec.Config.SharedBytes = r.g.shared // the record says what ran
	}
	if r.rec.Resources, err = b.gpu.resources(k, r.g); err != nil {
		return err
	}
	if err := checkDeviceSymbols(p, r.rec.Resources, b.env.SMs); err != nil {
		return err
	}
	if breaks := overBudget(p.Budget, r.rec.Resources); breaks != "" {
		return failPoint(results.StatusOverBudget, "%s breaks its budget: %s", c.Variant, breaks)
	}
	if p.Twin != nil {
		tc := &p.Twin.Config
		tk, tb, err := b.gpu.load(p.Twin.Source, tc, p.Twin.Flags)
		if err != nil {
			return fmt.Errorf("compiling the bitwise twin %s: %w", tc.Variant, err)
		}
		if tk == nil {
			return failPoint(results.StatusError, "the bitwise twin %s does not compile:\n%s", tc.Variant, tb.record.Log)
		}
		r.twin, r.twinG = tk, pointGeometry(p.Twin)
		if err := sharedFromSymbols(b.gpu, tk, &r.twinG); err != nil {
			return failPoint(results.StatusError, "%s: %w", tc.Variant, err)
		}
		// For the side effect: the twin's dynamic shared memory opt-in.
		if _, err := b.gpu.resources(tk, r.twinG); err != nil {
			return fmt.Errorf("preparing the bitwise twin %s: %w", tc.Variant, err)
		}
	}

	cold := slices.Contains(p.Probes, results.ProbeCold)
	if r.ws, err = b.workspaceFor(r.l, cold); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	var pass bool
	r.rec.GateSec, r.rec.GateCost, err = r.timeGates(func() (err error) {
		pass, err = r.gate(ctx)
		return err
	})
	if err != nil {
		return err
	}
	if !pass {
		r.rec.Status = results.StatusGateFailed
		r.rec.Error = failedGates(r.rec.Gates)
		return nil
	}
	return r.measure(ctx)
}

// workspaceFor returns device buffers of layout l (and the flush buffer
// when cold is set), reusing the previous point's when the layout is the
// same. It refuses, before allocating anything, a point that does not fit.
func (b *Backend) workspaceFor(l layout, cold bool) (*workspace, error) {
	reuse := b.ws != nil && b.ws.l == l
	var flush int64
	if cold && !b.haveFlush {
		flush = flushBytes(b.env.L2Bytes)
	}
	if reuse && flush == 0 {
		return b.ws, nil
	}
	if !reuse && b.ws != nil {
		if err := b.gpu.freeWorkspace(b.ws); err != nil {
			return nil, fmt.Errorf("freeing the previous point's buffers: %w", err)
		}
		b.ws = nil
	}
	free, err := b.gpu.memFree()
	if err != nil {
		return nil, fmt.Errorf("reading free device memory: %w", err)
	}
	need := l
	if reuse {
		need = layout{}
	}
	if err := fitError(need, flush, free); err != nil {
		return nil, &pointError{results.StatusOOM, err}
	}
	if flush > 0 {
		if b.flush, err = b.gpu.alloc(flush); err != nil {
			if cuda.IsOutOfMemory(err) {
				return nil, &pointError{results.StatusOOM, fmt.Errorf("allocating the %s L2 flush buffer: %w", gib(flush), err)}
			}
			return nil, fmt.Errorf("allocating the L2 flush buffer: %w", err)
		}
		b.haveFlush = true
		// Zeros, once: the read flush's conditional store then never fires.
		if err := b.gpu.fill32(b.flush, 0, flush); err != nil {
			return nil, fmt.Errorf("clearing the L2 flush buffer: %w", err)
		}
	}
	if !reuse {
		if b.ws, err = b.gpu.allocWorkspace(l); err != nil {
			if cuda.IsOutOfMemory(err) {
				return nil, &pointError{results.StatusOOM, fmt.Errorf("allocating %s of buffers: %w", gib(l.Total()), err)}
			}
			return nil, fmt.Errorf("allocating buffers: %w", err)
		}
	}
	return b.ws, nil
}

// failedGates summarizes the failed gates for Record.Error.
func failedGates(gs []results.Gate) string {
	var s string
	n := 0
	for _, g := range gs {
		if g.Pass {
			continue
		}
		if n < 3 {
			if s != "" {
				s += "; "
			}
			s += fmt.Sprintf("%s at nkv %d", g.Kind, g.NKV)
			if g.Detail != "" {
				s += ": " + g.Detail
			}
		}
		n++
	}
	if n > 3 {
		s += fmt.Sprintf("; %d more", n-3)
	}
	return fmt.Sprintf("%d gate(s) failed: %s", n, s)
}

// logHead is the first n non-empty lines of a compile log, each clipped,
// as ": line; line", or "" for an empty log: the error names its cause
// where it is printed, without sending the reader to the record.
func logHead(log string, n int) string {
	var out []string
	for _, l := range strings.Split(log, "\n") {
		if l = strings.TrimSpace(l); l == "" {
			continue
		}
		if len(l) > 200 {
			l = l[:200] + "…"
		}
		if out = append(out, l); len(out) == n {
			break
		}
	}
	if len(out) == 0 {
		return ""
	}
	return ": " + strings.Join(out, "; ")
}
