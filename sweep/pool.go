package sweep

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ktune/ktune/internal/results"
)

// A Concurrent backend can run several points at once; Run then calls its
// Run from up to Slots goroutines, and records points in the order they
// finish. A Pool over several devices is one.
type Concurrent interface {
	Backend
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
func (p *Pool) Run(ctx context.Context, pt *Point) (results.Record, error) {
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
// device in order, and one that has not exited after a few seconds is
// killed.
func (p *Pool) Close() error {
	var wg sync.WaitGroup
	for _, s := range p.slots {
		wg.Go(func() {
			if s.w != nil {
				s.w.stop(5 * time.Second)
				s.w = nil
			}
		})
	}
	wg.Wait()
	return nil
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
func (s *slot) run(ctx context.Context, pt *Point) (results.Record, error) {
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
	w.stop(5 * time.Second)
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
func (s *slot) failed(pt *Point, status results.Status, msg string) results.Record {
	return results.Record{Schema: results.SchemaVersion, Hash: pt.Hash, Time: time.Now().UTC(),
		Config: pt.Config, Env: s.env, Status: status, Error: msg, Landed: pt.Landed}
}

// Errors of call besides the worker's death while answering.
var (
	errNoAnswer = errors.New("no answer in time")
	errGone     = errors.New("the worker had exited before the request")
)

// A worker is one running worker process.
type worker struct {
	cmd    *exec.Cmd
	device int
	in     io.WriteCloser
	resp   chan workerResponse // closed when stdout ends
	stderr *tailBuffer
	errEOF chan struct{} // closed when stderr ends
	exited chan struct{} // closed once Wait has returned
	killed bool          // the pool sent the kill
}

// startWorker starts cmd with pipes of its own (not exec's StdoutPipe: Wait
// would close those under the reader) in a new process group.
func startWorker(cmd *exec.Cmd, device int, p *Pool) (*worker, error) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	// The child has its copies; the parent keeps only its own ends, so
	// that the child's exit is seen as EOF.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, err
	}
	w := &worker{cmd: cmd, device: device, in: inW, resp: make(chan workerResponse, 1),
		stderr: newTailBuffer(8 << 10), errEOF: make(chan struct{}), exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(w.exited)
	}()
	go w.readStdout(outR, p)
	go w.readStderr(errR, p)
	return w, nil
}

// readStdout decodes tagged response lines and logs anything else.
func (w *worker) readStdout(r *os.File, p *Pool) {
	defer close(w.resp)
	defer r.Close()
	br := bufio.NewReaderSize(r, 1<<20)
	for {
		// Records carry samples and NVRTC logs: no useful line limit.
		line, err := br.ReadBytes('\n')
		if t := bytes.TrimSpace(line); len(t) > 0 {
			var resp workerResponse
			if json.Unmarshal(t, &resp) == nil && resp.Tag == workerProtocol {
				w.resp <- resp
			} else {
				p.logf("device %d worker stdout: %s", w.device, t)
			}
		}
		if err != nil {
			return
		}
	}
}

func (w *worker) readStderr(r *os.File, p *Pool) {
	defer close(w.errEOF)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		w.stderr.Write(append(sc.Bytes(), '\n'))
		if p.opts.Verbose {
			p.logf("device %d: %s", w.device, sc.Text())
		}
	}
	// A line longer than the scanner's buffer: keep the raw rest.
	io.Copy(w.stderr, r)
}

// call sends req and waits up to limit for the response. It returns
// errGone when the worker had exited before the request could be sent,
// errNoAnswer when the time ran out, another error when the worker ended
// without answering, ctx.Err() when ctx was cancelled.
func (w *worker) call(ctx context.Context, req workerRequest, limit time.Duration) (workerResponse, error) {
	b, err := json.Marshal(req)
	if err != nil {
		return workerResponse{}, fmt.Errorf("encoding a request: %w", err)
	}
	select {
	case <-w.exited:
		return workerResponse{}, errGone
	default:
	}
	if _, err := w.in.Write(append(b, '\n')); err != nil {
		return workerResponse{}, fmt.Errorf("%w: %v", errGone, err)
	}
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case resp, ok := <-w.resp:
		if !ok {
			return workerResponse{}, errors.New("the worker exited")
		}
		return resp, nil
	case <-t.C:
		return workerResponse{}, errNoAnswer
	case <-ctx.Done():
		return workerResponse{}, ctx.Err()
	}
}

// kill ends the worker's whole process group at once and waits for it.
func (w *worker) kill() {
	w.killed = true
	if err := syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		w.cmd.Process.Kill()
	}
	<-w.exited
	w.in.Close()
	w.drain()
}

// stop closes the worker's stdin, which makes it release its device and
// exit, and kills it if it has not done so within wait.
func (w *worker) stop(wait time.Duration) {
	w.in.Close()
	select {
	case <-w.exited:
		w.drain()
	case <-time.After(wait):
		w.kill()
	}
}

// drain waits briefly for the rest of stderr, which may still be in the
// pipe when the process is gone (or held open by a grandchild).
func (w *worker) drain() {
	select {
	case <-w.errEOF:
	case <-time.After(time.Second):
	}
}

// death waits for a worker that stopped answering to exit (killing it
// after a moment) and classifies how it ended.
func (w *worker) death(mark int64) (results.Status, string) {
	select {
	case <-w.exited:
		w.in.Close()
		w.drain()
	case <-time.After(5 * time.Second):
		// Its stdout closed but the process lingers: a crash in
		// progress (a core dump) or a closed stdout. Either way it is
		// of no use any more.
		w.kill()
	}
	return classifyExit(w.cmd.ProcessState, w.killed, w.stderr.since(mark))
}

// classifyExit names the status of a point whose worker died while
// running it. A SIGKILL the pool did not send comes, in practice, from
// the kernel's OOM killer; a Go runtime or driver message about memory
// says the same. Anything else (a segfault in the driver, an abort, a
// panic) is a fault of the point.
func classifyExit(st *os.ProcessState, killedByUs bool, stderr string) (results.Status, string) {
	why := "no exit status"
	status := results.StatusFault
	if st != nil {
		why = st.String()
		if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL && !killedByUs {
			status = results.StatusOOM
			why += ", not sent by ktune: most likely the kernel's OOM killer"
		}
	}
	if strings.Contains(strings.ToLower(stderr), "out of memory") {
		status = results.StatusOOM
	}
	return status, why
}

// stderrNote is the worker's stderr written since mark, for an error text.
func (w *worker) stderrNote(mark int64) string {
	s := strings.TrimSpace(w.stderr.since(mark))
	if s == "" {
		return ""
	}
	return "; its stderr ends: " + s
}

// A tailBuffer keeps the last bytes written to it.
type tailBuffer struct {
	mu    sync.Mutex
	buf   []byte
	max   int
	total int64 // bytes ever written
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total += int64(len(b))
	t.buf = append(t.buf, b...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(b), nil
}

// written returns a mark for since.
func (t *tailBuffer) written() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.total
}

// since returns what was written after mark, as far as it is still kept.
func (t *tailBuffer) since(mark int64) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := int(min(t.total-mark, int64(len(t.buf))))
	if n <= 0 {
		return ""
	}
	return string(t.buf[len(t.buf)-n:])
}

func (t *tailBuffer) String() string { return t.since(0) }

var _ Concurrent = (*Pool)(nil)
