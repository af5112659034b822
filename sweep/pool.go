package sweep

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"sync"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A Concurrent backend can run several points at once; Run then calls its
// Run from up to Slots goroutines, and records points in the order they
// finish. A Pool over several devices is one.
type Concurrent interface {
	plan.Backend
	// Slots is how many points may be in flight at once.
	Slots() int
}

// PoolOptions configure a Pool.
type PoolOptions struct {
	// Command builds the worker process for one device: the same binary
	// run as `ktune worker --device N` in production, the test binary in
	// tests. The pool sets its stdin, stdout and stderr and puts it in a
	// process group of its own (so that a kill reaches whatever it
	// started, and a Ctrl-C at the terminal reaches only the parent, which
	// then stops the workers itself).
	Command func(device int) *exec.Cmd
	// Devices lists the CUDA ordinals to run on, one worker each; points
	// go to whichever is free. Empty means device 0.
	Devices []int
	// Log receives warnings (devices that differ, workers restarted) and,
	// when Verbose, every line the workers write to stderr.
	Log     io.Writer
	Verbose bool
	// Grace is added to a point's time limit before the parent kills its
	// worker: the worker's backend checks the limit between steps and then
	// returns a timeout record that says what was measured, keeping the
	// process; only a worker stuck inside a launch needs the kill. Zero
	// means 5 s; negative means none.
	Grace time.Duration
	// StartTimeout bounds a new worker's start: opening the device,
	// compiling the measurement kernels and measuring the bandwidth. Zero
	// means 5 minutes.
	StartTimeout time.Duration
	// StopWait is how long a worker told to stop (its stdin closed) has
	// to exit before it is killed. Zero means 5 s. A worker under
	// compute-sanitizer needs longer: the tool writes its report as the
	// worker exits.
	StopWait time.Duration
}

// A Pool is a Backend that runs each point in a worker process (see the
// protocol in worker.go), one worker per device. A worker that faults,
// crashes, hangs past the point's limit or is killed for memory ends with
// its point recorded as fault, timeout or oom, the error text being the
// tail of its stderr; the next point starts a fresh worker. The compiled
// kernels live in the on-disk cache that every worker shares, so a restart
// recompiles nothing.
type Pool struct {
	opts  PoolOptions
	log   io.Writer
	slots []*slot
	idle  chan *slot

	mu       sync.Mutex // guards the fields below and writes to log
	haveEnv  bool
	env      results.Env
	warnings []string
	starts   int
}

// NewPool returns a pool; no worker starts before the first Env or Run.
func NewPool(opts PoolOptions) (*Pool, error) {
	if opts.Command == nil {
		return nil, errors.New("sweep: a pool needs a worker command")
	}
	devs := opts.Devices
	if len(devs) == 0 {
		devs = []int{0}
	}
	for i, d := range devs {
		if d < 0 {
			return nil, fmt.Errorf("sweep: invalid device %d", d)
		}
		if slices.Contains(devs[:i], d) {
			return nil, fmt.Errorf("sweep: device %d listed twice", d)
		}
	}
	if opts.Grace == 0 {
		opts.Grace = 5 * time.Second
	}
	if opts.Grace < 0 {
		opts.Grace = 0
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 5 * time.Minute
	}
	if opts.StopWait <= 0 {
		opts.StopWait = 5 * time.Second
	}
	p := &Pool{opts: opts, log: opts.Log, idle: make(chan *slot, len(devs))}
	if p.log == nil {
		p.log = io.Discard
	}
	for _, d := range devs {
		s := &slot{pool: p, device: d}
		p.slots = append(p.slots, s)
		p.idle <- s
	}
	return p, nil
}

// Slots returns the number of devices: one point in flight on each.
func (p *Pool) Slots() int { return len(p.slots) }

// Warnings returns what Env found worth saying about the devices.
func (p *Pool) Warnings() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.warnings)
}

// Starts returns how many worker processes the pool has started.
func (p *Pool) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

func (p *Pool) logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.log, format+"\n", args...)
}

// Env starts a worker on every device and returns the first device's Env.
// Devices of different architectures are refused (a plan's hashes are per
// architecture); devices whose measured read bandwidth or clocks differ by
// more than 3% are mixed with a warning, since each record names its own
// device with those figures.
func (p *Pool) Env(ctx context.Context) (results.Env, error) {
	p.mu.Lock()
	if p.haveEnv {
		defer p.mu.Unlock()
		return p.env, nil
	}
	p.mu.Unlock()
	errs := make([]error, len(p.slots))
	var wg sync.WaitGroup
	for i, s := range p.slots {
		wg.Go(func() { errs[i] = s.ensure(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return results.Env{}, err
	}
	envs := make([]results.Env, len(p.slots))
	for i, s := range p.slots {
		envs[i] = s.env
	}
	warns, err := compareDevices(envs)
	if err != nil {
		return results.Env{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, w := range warns {
		fmt.Fprintf(p.log, "warning: %s\n", w)
	}
	p.warnings = append(p.warnings, warns...)
	p.env, p.haveEnv = envs[0], true
	return p.env, nil
}

// spreadLimit is the largest relative difference between devices that
// mixes their points without a warning: the run-to-run noise of a
// bandwidth-bound kernel on one device is about 1–2%.
const spreadLimit = 0.03

// compareDevices checks that devices can share one plan and warns where
// their figures differ.
func compareDevices(envs []results.Env) (warnings []string, err error) {
	if len(envs) < 2 {
		return nil, nil
	}
	for _, e := range envs[1:] {
		if e.Arch != envs[0].Arch {
			return nil, fmt.Errorf("device %d is %s (%s) and device %d is %s (%s): a plan is built for one architecture; sweep them separately",
				envs[0].DeviceIndex, envs[0].Device, envs[0].Arch, e.DeviceIndex, e.Device, e.Arch)
		}
		if e.Device != envs[0].Device {
			warnings = append(warnings, fmt.Sprintf("device %d is a %s and device %d a %s: their records are told apart by env.device",
				envs[0].DeviceIndex, envs[0].Device, e.DeviceIndex, e.Device))
		}
	}
	for _, m := range []struct {
		what, unit string
		get        func(results.Env) float64
	}{
		{"measured read bandwidth", "GB/s", func(e results.Env) float64 { return e.ReadBWGBps }},
		{"SM clock", "MHz", func(e results.Env) float64 { return e.ClockMHz }},
		{"memory clock", "MHz", func(e results.Env) float64 { return e.MemClockMHz }},
	} {
		lo, hi := 0, 0
		for i, e := range envs {
			if m.get(e) < m.get(envs[lo]) {
				lo = i
			}
			if m.get(e) > m.get(envs[hi]) {
				hi = i
			}
		}
		a, b := m.get(envs[lo]), m.get(envs[hi])
		if a <= 0 || (b-a)/a <= spreadLimit {
			continue
		}
		warnings = append(warnings, fmt.Sprintf(
			"devices %d and %d differ by %.1f%% in %s (%.0f vs %.0f %s): points measured on one are not directly comparable with the other's; each record names its device (env.device_index, env.uuid) with these figures",
			envs[lo].DeviceIndex, envs[hi].DeviceIndex, 100*(b-a)/a, m.what, a, b, m.unit))
	}
	return warnings, nil
}

// Run runs p on the first free device. A point that ends its worker comes
// back as a record (fault, timeout, oom) with a nil error; the error is
// set only when no worker can be started or ctx is cancelled.
func (p *Pool) Run(ctx context.Context, pt *plan.Point) (results.Record, error) {
	var s *slot
	select {
	case s = <-p.idle:
	case <-ctx.Done():
		return results.Record{}, ctx.Err()
	}
	defer func() { p.idle <- s }()
	return s.run(ctx, pt)
}

// Close ends every worker: stdin is closed so that each releases its
// device in order, and one that has not exited within StopWait is killed.
// The error names each worker killed so: whatever it was to write as it
// exited (a sanitizer's report) is lost.
func (p *Pool) Close() error { return p.Stop(context.Background()) }

// Stop is Close that kills at once the workers still exiting when ctx
// ends: a stop wait of minutes (a sanitized worker's) does not hold up an
// interrupted run.
func (p *Pool) Stop(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(p.slots))
	for i, s := range p.slots {
		wg.Go(func() {
			if s.w != nil {
				if s.w.stop(ctx, p.opts.StopWait) {
					errs[i] = fmt.Errorf("the worker for device %d (pid %d) had not exited %s after it was told to stop and was killed",
						s.device, s.w.cmd.Process.Pid, p.opts.StopWait)
				}
				s.w = nil
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// A slot is one device of the pool and its current worker. One goroutine
// at a time uses a slot (it is taken from Pool.idle), so it needs no lock.
type slot struct {
	pool   *Pool
	device int
	w      *worker     // nil: none running; the next use starts one
	env    results.Env // the current worker's device description
}

// ensure starts a worker if the slot has none. A start that fails is tried
// once more after a pause: the driver may still be tearing down the
// context of the worker that just faulted.
func (s *slot) ensure(ctx context.Context) error {
	if s.w != nil {
		return nil
	}
	var err error
	for attempt := range 2 {
		if attempt > 0 {
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if err = s.start(ctx); err == nil || ctx.Err() != nil {
			return err
		}
	}
	return err
}

func (s *slot) start(ctx context.Context) error {
	p := s.pool
	w, err := startWorker(p.opts.Command(s.device), s.device, p)
	if err != nil {
		return fmt.Errorf("starting the worker for device %d: %w", s.device, err)
	}
	p.mu.Lock()
	p.starts++
	n := p.starts
	p.mu.Unlock()
	if n > len(p.slots) {
		p.logf("device %d: started a fresh worker (pid %d)", s.device, w.cmd.Process.Pid)
	}
	resp, err := w.call(ctx, workerRequest{Op: opEnv}, p.opts.StartTimeout)
	switch {
	case err != nil:
		// It died or stalled without a word: its stderr is the evidence.
		w.kill()
		return fmt.Errorf("starting the worker for device %d: %w%s", s.device, err, w.stderrNote(0))
	case resp.Fatal != "":
		w.kill()
		return fmt.Errorf("starting the worker for device %d: %s", s.device, resp.Fatal)
	case resp.Env == nil:
		w.kill()
		return fmt.Errorf("starting the worker for device %d: it answered without describing its device", s.device)
	}
	s.w, s.env = w, *resp.Env
	return nil
}

// run runs one point on the slot's worker, starting one if needed.
func (s *slot) run(ctx context.Context, pt *plan.Point) (results.Record, error) {
	if err := s.ensure(ctx); err != nil {
		return results.Record{}, err
	}
	limit := pointLimit(pt)
	w := s.w
	mark := w.stderr.written()
	resp, err := w.call(ctx, workerRequest{Op: opRun, Point: pt}, limit+s.pool.opts.Grace)
	if errors.Is(err, errGone) {
		// The worker died while idle, before this point reached it: the
		// point is not to blame. Start a fresh one and send it again.
		w.kill()
		s.w = nil
		if err := s.ensure(ctx); err != nil {
			return results.Record{}, err
		}
		w = s.w
		mark = w.stderr.written()
		resp, err = w.call(ctx, workerRequest{Op: opRun, Point: pt}, limit+s.pool.opts.Grace)
	}
	switch {
	case ctx.Err() != nil:
		// The sweep abandons the point in flight; so does the worker.
		w.kill()
		s.w = nil
		return results.Record{}, ctx.Err()
	case errors.Is(err, errNoAnswer):
		w.kill()
		s.w = nil
		return s.failed(pt, results.StatusTimeout, fmt.Sprintf(
			"no answer within the point's %s limit (+%s grace): the worker (pid %d) was killed%s",
			limit, s.pool.opts.Grace, w.cmd.Process.Pid, w.stderrNote(mark))), nil
	case err != nil:
		s.w = nil
		status, why := w.death(mark)
		return s.failed(pt, status, fmt.Sprintf("the worker for device %d died without answering (%s)%s",
			s.device, why, w.stderrNote(mark))), nil
	}
	if resp.Fatal == "" && resp.Record != nil {
		return *resp.Record, nil
	}
	// The backend cannot go on (a sticky CUDA error): this worker is done
	// and the next point gets a fresh one.
	w.stop(ctx, s.pool.opts.StopWait)
	s.w = nil
	if resp.Record == nil {
		return s.failed(pt, results.StatusFault, fmt.Sprintf("the worker for device %d gave up: %s%s",
			s.device, resp.Fatal, w.stderrNote(mark))), nil
	}
	rec := *resp.Record
	if rec.Error == "" {
		rec.Error = resp.Fatal
	}
	return rec, nil
}

// failed makes the record of a point whose worker ended without one.
func (s *slot) failed(pt *plan.Point, status results.Status, msg string) results.Record {
	return results.Record{Schema: results.SchemaVersion, Hash: pt.Hash, Time: time.Now().UTC(),
		Config: pt.Config, Env: s.env, Status: status, Error: msg, Landed: pt.Landed}
}

// Errors of call besides the worker's death while answering.
var (
	errNoAnswer = errors.New("no answer in time")
	errGone     = errors.New("the worker had exited before the request")
)
