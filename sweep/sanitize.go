package sweep

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
	"github.com/ktune/ktune/plan"
)

// Sanitized gate points.
//
// `ktune sweep --sanitize` runs, before the sweep, the first point of each
// gate group (one per compiled kernel and shape) once per tool in a worker
// process started under compute-sanitizer, gates only, and reads the
// report the run leaves in its log file. The sweep then records every
// point of a group with errors as gate_failed, with the sanitizer's
// verdict as a gate and no timings; the points of a group some run left
// undecided (the worker never gated the point, the sanitizer failed) run
// their gates only, and are recorded error unless those fail; the other
// points run as usual and carry their group's verdicts. One process per
// (tool, group) attributes each report to one kernel, and a sanitizer's
// slowdown never reaches a timed launch. The runs are queued and settled
// in sanitizequeue.go. Every decided run is kept in Dir (sanitizekept.go),
// so a sanitize stopped part way (a time limit, Ctrl-C) loses only the
// runs in flight and the next one starts where it stopped.

// SanitizeOptions configure Sanitize.
type SanitizeOptions struct {
	// Tools run, each in its own worker per group.
	Tools []sanitizer.Tool
	// Binary is compute-sanitizer (sanitizer.Binary).
	Binary string
	// Dir receives the logs, <tool>-<point hash>.log.
	Dir string
	// Worker is the worker command for a device, as a Pool takes it; it
	// runs as the program compute-sanitizer starts.
	Worker func(device int) *exec.Cmd
	// Devices are the CUDA ordinals the sanitized workers run on, the
	// i-th worker on Devices[i mod len]; empty means device 0. Spread
	// over several, the instrumented workers' device memory is too (on
	// one H200 sixteen 8b batch-16 workers filled its 140 GiB).
	Devices []int
	// Slowdown multiplies each point's time limit: the instrumented
	// kernels run tens of times slower. Zero means 100.
	Slowdown float64
	// Jobs is how many sanitized workers run at once on the device (0:
	// one): most of a sanitized run is the host's instrumentation, and
	// no run is timed.
	Jobs int
	// StopWait is how long a sanitized worker has to exit after its
	// point, while the tool instruments its teardown and writes the
	// report. Zero means 5 minutes. On the H200, with twelve racecheck
	// workers and the host's load average at 115-126 on 16 cores, three
	// runs whose workers had gated their points left only the tool's
	// banner, as a worker killed at the pool's 5 s does.
	StopWait time.Duration
	// Log receives a line per run.
	Log io.Writer
}

// Verdicts are what Sanitize decided, by gate key.
type Verdicts struct {
	// Gates are the decided runs: a finding, or a clean report of a run
	// whose worker gated the point.
	Gates map[string][]results.Gate
	// Undecided says, for each run that decided nothing in its tries,
	// why: the worker never gated the point, the sanitizer failed, the
	// report was cut short. Such a run is no verdict either way, and is
	// not kept: the next sanitize runs it again.
	Undecided map[string][]string
}

// maxTries is how many times a run that decided nothing is tried before
// it is left undecided.
const maxTries = 3

// faultTries is how many times a run is tried whose kernel faulted under
// a sanitizer that saw nothing wrong: twice, the second from the back of
// the queue, when fewer runs share the device. On the H200 two good
// kernels faulted so under initcheck among twelve workers, with the
// device's memory at 120-133 GiB of 140, and passed alone; a kernel's own
// fault comes back, and then its points' own gates record it.
const faultTries = 2

// Sanitize runs the first point of every gate group among points under
// each tool and returns the verdicts by gate key. A report is read after
// its worker has exited, and is a pass only when it is clean and the
// worker's record shows that it gated the point; a run that decided
// nothing (see Verdicts.Undecided) goes to the back of the queue, up to
// maxTries times (faultTries when the kernel faulted), and one that found
// the device crowded (its memory refused the worker, or the sanitizer
// failed) takes a worker out of the pool, so that fewer run at once from
// then on.
func Sanitize(ctx context.Context, points []*plan.Point, opts SanitizeOptions) (Verdicts, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return Verdicts{}, fmt.Errorf("making the sanitizer log directory: %w", err)
	}
	slow := opts.Slowdown
	if slow == 0 {
		slow = 100
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	// Each run's pool logs from its own goroutine.
	log = &lockedWriter{w: log}
	opts.Log = log
	var firsts []*plan.Point
	seen := map[string]bool{}
	for _, p := range points {
		if key := groupKey(p); !seen[key] {
			seen[key] = true
			firsts = append(firsts, p)
		}
	}
	kept, err := openKept(opts.Dir, log)
	if err != nil {
		return Verdicts{}, err
	}
	defer kept.close()
	// Every (tool, first point) pair, in order; the verdicts go back in
	// this order whatever order the runs finish in.
	var tasks []*sanTask
	for _, tool := range opts.Tools {
		for _, p := range firsts {
			t := &sanTask{tool: tool, p: p}
			if g, ok := kept.get(tool, p.Hash); ok {
				t.g, t.done = g, true
				fmt.Fprintf(log, "sanitize %s: %s: %s (kept from an earlier run)\n", p.Config.Variant, tool, g.Detail)
			}
			tasks = append(tasks, t)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	jobs := max(1, opts.Jobs)
	devs := opts.Devices
	if len(devs) == 0 {
		devs = []int{0}
	}
	q := newSanQueue(tasks, jobs, kept, log, cancel)
	var wg sync.WaitGroup
	for i := range jobs {
		dev := devs[i%len(devs)]
		wg.Go(func() {
			for t := q.next(ctx); t != nil; t = q.next(ctx) {
				start := time.Now()
				o, err := sanitizePoint(ctx, t.p, t.tool, opts, dev, slow)
				if !q.settle(ctx, t, o, err, time.Since(start)) {
					return
				}
			}
		})
	}
	wg.Wait()
	return q.finish(ctx)
}

// A lockedWriter serializes the writes of several goroutines to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// keptKernel names p's kernel for a kept verdict: its variant, then
// shape, defines and nkv as messages name a point (describeConfig).
func keptKernel(p *plan.Point) string {
	return p.Config.Variant + " " + describeConfig(&p.Config)
}

// groupKey is the gate group of a point; a point without one is its own.
func groupKey(p *plan.Point) string {
	if p.GateKey != "" {
		return p.GateKey
	}
	return p.Hash
}

// A sanRun is what one sanitized run showed.
type sanRun struct {
	// decided: g is a verdict, a finding or a clean run of a worker that
	// gated the point.
	decided bool
	g       results.Gate
	// keep: the whole report was read, so the verdict may be kept.
	keep bool
	// why the run decided nothing, when it did not.
	why string
	// crowded: fewer workers at once may decide the run. The worker could
	// not start or gate the point for want of device memory, or the
	// sanitizer failed: on the H200 all 18 "Internal Sanitizer Error" runs
	// came with the device's memory full, none with six workers.
	crowded bool
	// split is where the instrumented gates' time went (gateSplit).
	split string
	// gated: the worker answered with p's record, gated (workerMissed).
	gated bool
	// tries is how many tries in all a run that decided nothing gets:
	// maxTries, or faultTries when the kernel faulted under a sanitizer
	// that did not fail.
	tries int
}

// sanitizePoint gates p once in a worker under tool. A report is a pass
// only when it is clean and the worker's record shows it gated p: a
// worker that never started, or failed the point before its gates,
// leaves a clean-looking report of a run in which the kernel never ran
// (on the H200 a sanitizer run whose worker the device's memory refused
// said "0 errors"). A finding fails whatever the worker did.
func sanitizePoint(ctx context.Context, p *plan.Point, tool sanitizer.Tool, opts SanitizeOptions, dev int, slow float64) (sanRun, error) {
	if names := unchecked(p); len(names) > 0 {
		// Nothing to run: its report would be clean whatever the
		// kernel did.
		return sanRun{tries: 1, why: fmt.Sprintf("%s: the sanitizer skips ktune's own kernels by name, and this one launches %s: "+
			"its report would check nothing of them", tool, strings.Join(names, ", "))}, nil
	}
	logFile := reportPath(opts.Dir, tool, p.Hash)
	if err := os.Remove(logFile); err != nil && !os.IsNotExist(err) {
		return sanRun{}, fmt.Errorf("removing an old sanitizer log: %w", err)
	}
	pool, err := NewPool(PoolOptions{
		Devices: []int{dev},
		Log:     opts.Log,
		Command: func(dev int) *exec.Cmd {
			w := opts.Worker(dev)
			cmd := exec.Command(opts.Binary, append(append(sanitizer.Args(tool, logFile), w.Path), w.Args[1:]...)...)
			cmd.Env = w.Env
			return cmd
		},
		// Opening the device and compiling the measurement kernels
		// under instrumentation.
		StartTimeout: 30 * time.Minute,
		StopWait:     cmp.Or(opts.StopWait, 5*time.Minute),
	})
	if err != nil {
		return sanRun{}, err
	}
	pt := *p
	pt.Probes = nil // gates only
	pt.Measure.TimeoutSec *= slow
	rec, runErr := pool.Run(ctx, &pt)
	// The report is written as the worker exits; a worker killed on the
	// way leaves none, or one cut short.
	killed := pool.Stop(ctx)
	if ctx.Err() != nil {
		return sanRun{}, ctx.Err()
	}
	o := sanRun{split: gateSplit(rec), tries: maxTries}
	notRan := workerMissed(p, rec, runErr)
	o.gated = notRan == ""
	if notRan != "" {
		o.crowded = rec.Status == results.StatusOOM || memoryText(notRan)
		notRan = "the worker did not gate the point: " + notRan
	}
	f, err := os.Open(logFile)
	if err != nil {
		o.why = fmt.Sprintf("%s: no report (%v)", tool, err)
		if notRan != "" {
			o.why += "; " + notRan
		}
		return withKill(o, killed), nil
	}
	defer f.Close()
	rep, err := sanitizer.Parse(tool, f)
	if err != nil {
		return sanRun{}, err
	}
	g := results.Gate{Kind: results.GateSanitizer, NKV: p.Config.NKV, Seed: p.Seed, FirstDiff: -1, Detail: rep.Detail()}
	switch {
	case rep.Found():
		if !rep.Complete {
			g.Detail += fmt.Sprintf("; the worker: %s %s", rec.Status, errText(rec, runErr))
		}
		o.decided, o.g, o.keep = true, g, rep.Complete
	case notRan != "":
		o.why = g.Detail + "; " + notRan
		if rec.Status == results.StatusFault && len(rep.Internal) == 0 {
			o.tries = faultTries
		}
	case !rep.Clean():
		o.why = g.Detail
		o.crowded = len(rep.Internal) > 0
	default:
		g.Pass = true
		o.decided, o.g, o.keep = true, g, true
	}
	return withKill(o, killed), nil
}

// withKill adds to a run not kept whole the kill of its worker on the way
// out (Pool.Stop's error), which explains a report missing or cut short.
func withKill(o sanRun, killed error) sanRun {
	switch {
	case killed == nil || o.keep:
	case o.decided:
		o.g.Detail += "; " + killed.Error()
	default:
		o.why += "; " + killed.Error()
	}
	return o
}

// unchecked lists the names of p's kernels, as its launches name them,
// that the sanitizer skips (sanitizer.Skipped).
func unchecked(p *plan.Point) []string {
	src := &p.Source
	names := append([]string{src.Partial, src.Combine}, src.Entries...)
	names = append(names, src.NameExprs...)
	for _, m := range src.Modules {
		names = append(names, m.Entries...)
	}
	var out []string
	for _, n := range names {
		if n != "" && sanitizer.Skipped(n) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// workerMissed says why the worker's answer shows no gating of p, or ""
// when it gated p: it answered with p's record, of a status gates end in,
// holding gates.
func workerMissed(p *plan.Point, rec results.Record, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case rec.Status != results.StatusOK && rec.Status != results.StatusGateFailed:
		return fmt.Sprintf("%s: %s", rec.Status, errText(rec, nil))
	case rec.Hash != p.Hash:
		return fmt.Sprintf("it answered with the record of point %q", rec.Hash)
	case len(rec.Gates) == 0:
		return "its record holds no gate"
	}
	return ""
}

// memoryText reports an error text that blames the device's memory: the
// driver's "out of memory" (CUDA_ERROR_OUT_OF_MEMORY's text), or the
// worker's bandwidth probe refusing to start (probe/util.go).
func memoryText(s string) bool {
	s = strings.ToLower(s)
	return strings.Contains(s, "out of memory") || strings.Contains(s, "of device memory is free")
}

// gateSplit says where a sanitized worker's gates spent their time, as
// its record's gate_cost has it, for the run's log line: under the
// instrumentation the split differs from an ordinary run's, and says
// whether the kernel, ktune's own device work or the host made a run
// slow. Empty for a record without one.
func gateSplit(rec results.Record) string {
	c := rec.GateCost
	if c == nil {
		return ""
	}
	return fmt.Sprintf("; gates %.0f s: inputs %.0f, oracle %.0f, upload %.0f, device %.0f, host %.0f",
		rec.GateSec, c.Inputs, c.Oracle, c.Upload, c.Device, c.Host)
}

func errText(rec results.Record, err error) string {
	if rec.Error != "" {
		return rec.Error
	}
	if err != nil {
		return err.Error()
	}
	return ""
}

// Sanitized wraps b so that a point of a gate group whose sanitizer runs
// found errors is recorded gate_failed, with those verdicts and no
// timings, without running; any other point runs on b and its record
// carries its group's verdicts.
func Sanitized(b plan.Backend, v Verdicts) plan.Backend {
	s := &sanitized{Backend: b, gates: v.Gates, undecided: v.Undecided}
	if c, ok := b.(Concurrent); ok {
		return sanitizedConcurrent{s, c}
	}
	return s
}

type sanitized struct {
	plan.Backend
	gates     map[string][]results.Gate
	undecided map[string][]string
}

func (s *sanitized) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	gs := s.gates[groupKey(p)]
	if slices.ContainsFunc(gs, func(g results.Gate) bool { return !g.Pass }) {
		n, detail := 0, ""
		for _, g := range gs {
			if !g.Pass {
				n++
				if detail == "" {
					detail = g.Detail
				}
			}
		}
		return s.unrun(ctx, p, results.StatusGateFailed, fmt.Sprintf("%d sanitizer run(s) found errors: %s", n, detail)), nil
	}
	if why := s.undecided[groupKey(p)]; len(why) > 0 {
		// No verdict is no pass. The point's own gates still run
		// (unmeasured): a kernel they fail, or that faults, is wrong
		// whatever the sanitizer would have said, and is recorded so.
		// Otherwise the record says why there is no result rather than
		// claim the kernel failed.
		pt := *p
		pt.Probes = nil
		rec, err := s.Backend.Run(ctx, &pt)
		if err != nil || rec.Status != results.StatusOK {
			rec.Gates = append(rec.Gates, gs...)
			return rec, err
		}
		return s.unrun(ctx, p, results.StatusError, fmt.Sprintf(
			"%s: %d sanitizer run(s) decided nothing, so the kernel has no sanitizer verdict and is not measured (its own gates passed): %s (the next sweep --sanitize runs it again)",
			undecidedError, len(why), why[0])), nil
	}
	rec, err := s.Backend.Run(ctx, p)
	rec.Gates = append(rec.Gates, gs...)
	return rec, err
}

// undecidedError starts the error of a record Sanitized wrote for a
// point its sanitizer runs left undecided.
const undecidedError = "sanitizer undecided"

// SanitizeUndecided reports a record Sanitized wrote for a point its
// sanitizer runs left undecided: no result, so a later sweep with
// --sanitize runs it again (RunOptions.Again).
func SanitizeUndecided(r results.Record) bool {
	return r.Status == results.StatusError && strings.HasPrefix(r.Error, undecidedError+": ")
}

// unrun is the record of a point the sanitizer's runs keep from running:
// its group's verdicts, no timings.
func (s *sanitized) unrun(ctx context.Context, p *plan.Point, status results.Status, why string) results.Record {
	rec := results.Record{Schema: results.SchemaVersion, Hash: p.Hash, Time: time.Now().UTC(), Config: p.Config,
		Landed: p.Landed, Status: status, Gates: slices.Clone(s.gates[groupKey(p)]), Error: why}
	if env, err := s.Backend.Env(ctx); err == nil {
		rec.Env = env
	}
	return rec
}

type sanitizedConcurrent struct {
	*sanitized
	c Concurrent
}

func (s sanitizedConcurrent) Slots() int { return s.c.Slots() }
