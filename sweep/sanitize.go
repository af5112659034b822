package sweep

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
// verdict as a gate and no timings; the other points run as usual and
// carry their group's verdicts. One process per (tool, group) attributes
// each report to one kernel, and a sanitizer's slowdown never reaches a
// timed launch. Every finished run is kept in Dir (sanitizekept.go), so a
// sanitize stopped part way (a time limit, Ctrl-C) loses only the runs
// in flight and the next one starts where it stopped.

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
	// Device is the CUDA ordinal the sanitized workers run on.
	Device int
	// Slowdown multiplies each point's time limit: the instrumented
	// kernels run tens of times slower. Zero means 100.
	Slowdown float64
	// Jobs is how many sanitized workers run at once on the device (0:
	// one): most of a sanitized run is the host's instrumentation, and
	// no run is timed.
	Jobs int
	// Log receives a line per run.
	Log io.Writer
}

// Sanitize runs the first point of every gate group among points under
// each tool and returns the verdicts by gate key. A report is read after
// its worker has exited, when compute-sanitizer has written its summary;
// a run that leaves none fails its gate.
func Sanitize(ctx context.Context, points []*plan.Point, opts SanitizeOptions) (map[string][]results.Gate, error) {
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("making the sanitizer log directory: %w", err)
	}
	slow := opts.Slowdown
	if slow == 0 {
		slow = 100
	}
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
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
		return nil, err
	}
	defer kept.close()
	// Every (tool, first point) pair, in order; the verdicts go back in
	// this order whatever order the runs finish in.
	type run struct {
		tool sanitizer.Tool
		p    *plan.Point
		g    results.Gate
		done bool
	}
	var runs []*run
	done := 0 // runs with a verdict, kept ones included
	for _, tool := range opts.Tools {
		for _, p := range firsts {
			r := &run{tool: tool, p: p}
			if g, ok := kept.get(tool, p.Hash); ok {
				r.g, r.done = g, true
				done++
				fmt.Fprintf(log, "sanitize %s: %s: %s (kept from an earlier run)\n", p.Config.Variant, tool, g.Detail)
			}
			runs = append(runs, r)
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu      sync.Mutex
		first   error
		wg      sync.WaitGroup
		stopped int           // runs cut short by the context
		lost    time.Duration // the time they had had
	)
	todo := make(chan *run)
	for range max(1, opts.Jobs) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range todo {
				start := time.Now()
				g, complete, split, err := sanitizePoint(ctx, r.p, r.tool, opts, slow)
				mu.Lock()
				switch {
				case err != nil && ctx.Err() != nil:
					// Stopped (a time limit, Ctrl-C, another run's
					// error): the time it had is lost, and says how long
					// a call must be for the run to finish.
					had := time.Since(start)
					stopped++
					lost += had
					fmt.Fprintf(log, "sanitize %s: %s: stopped after %.0f s, not kept (it runs again next time)\n",
						r.p.Config.Variant, r.tool, had.Seconds())
					if first == nil {
						first = err
					}
				case err != nil:
					if first == nil {
						first = err
					}
					cancel()
				default:
					r.g, r.done = g, true
					done++
					fmt.Fprintf(log, "sanitize %s: %s: %s (%.0f s; %d of %d runs done%s)\n",
						r.p.Config.Variant, r.tool, g.Detail, time.Since(start).Seconds(), done, len(runs), split)
					// A run without a whole report (the worker died, a
					// time limit) is not kept: the next sanitize runs it
					// again rather than inherit a verdict nobody read.
					if !complete {
						break
					}
					if werr := kept.put(r.tool, r.p.Hash, keptKernel(r.p), g); werr != nil && first == nil {
						first = werr
						cancel()
					}
				}
				mu.Unlock()
			}
		}()
	}
feed:
	for _, r := range runs {
		if r.done {
			continue
		}
		select {
		case todo <- r:
		case <-ctx.Done():
			break feed
		}
	}
	close(todo)
	wg.Wait()
	if stopped > 0 {
		fmt.Fprintf(log, "sanitize stopped: %d of %d runs done, %d in flight lost (%.0f s of worker time)\n",
			done, len(runs), stopped, lost.Seconds())
	}
	out := map[string][]results.Gate{}
	for _, r := range runs {
		if r.done {
			out[groupKey(r.p)] = append(out[groupKey(r.p)], r.g)
		}
	}
	if first != nil {
		return out, first
	}
	return out, ctx.Err()
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

// sanitizePoint gates p once in a worker under tool; complete says the
// sanitizer wrote its whole report, and split where the instrumented
// gates' time went (gateSplit).
func sanitizePoint(ctx context.Context, p *plan.Point, tool sanitizer.Tool, opts SanitizeOptions, slow float64) (g results.Gate, complete bool, split string, err error) {
	logFile := filepath.Join(opts.Dir, fmt.Sprintf("%s-%s.log", tool, p.Hash))
	if err := os.Remove(logFile); err != nil && !os.IsNotExist(err) {
		return results.Gate{}, false, "", fmt.Errorf("removing an old sanitizer log: %w", err)
	}
	pool, err := NewPool(PoolOptions{
		Devices: []int{opts.Device},
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
	})
	if err != nil {
		return results.Gate{}, false, "", err
	}
	pt := *p
	pt.Probes = nil // gates only
	pt.Measure.TimeoutSec *= slow
	rec, runErr := pool.Run(ctx, &pt)
	pool.Close() // the summary is written when the worker exits
	if ctx.Err() != nil {
		return results.Gate{}, false, "", ctx.Err()
	}
	g = results.Gate{Kind: results.GateSanitizer, NKV: p.Config.NKV, Seed: p.Seed, FirstDiff: -1}
	f, err := os.Open(logFile)
	if err != nil {
		g.Detail = fmt.Sprintf("%s: no report (%v); the worker: %s %s", tool, err, rec.Status, errText(rec, runErr))
		return g, false, gateSplit(rec), nil
	}
	defer f.Close()
	rep, err := sanitizer.Parse(tool, f)
	if err != nil {
		return results.Gate{}, false, "", err
	}
	g.Pass = !rep.Failed()
	g.Detail = rep.Detail()
	if !g.Pass && !rep.Complete {
		g.Detail += fmt.Sprintf("; the worker: %s %s", rec.Status, errText(rec, runErr))
	}
	return g, rep.Complete, gateSplit(rec), nil
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
func Sanitized(b plan.Backend, gates map[string][]results.Gate) plan.Backend {
	s := &sanitized{Backend: b, gates: gates}
	if c, ok := b.(Concurrent); ok {
		return sanitizedConcurrent{s, c}
	}
	return s
}

type sanitized struct {
	plan.Backend
	gates map[string][]results.Gate
}

func (s *sanitized) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	gs := s.gates[groupKey(p)]
	if slices.ContainsFunc(gs, func(g results.Gate) bool { return !g.Pass }) {
		rec := results.Record{Schema: results.SchemaVersion, Hash: p.Hash, Time: time.Now().UTC(), Config: p.Config,
			Landed: p.Landed, Status: results.StatusGateFailed, Gates: slices.Clone(gs)}
		if env, err := s.Backend.Env(ctx); err == nil {
			rec.Env = env
		}
		n := 0
		for _, g := range gs {
			if !g.Pass {
				n++
				if rec.Error == "" {
					rec.Error = g.Detail
				}
			}
		}
		rec.Error = fmt.Sprintf("%d sanitizer run(s) found errors: %s", n, rec.Error)
		return rec, nil
	}
	rec, err := s.Backend.Run(ctx, p)
	rec.Gates = append(rec.Gates, gs...)
	return rec, err
}

type sanitizedConcurrent struct {
	*sanitized
	c Concurrent
}

func (s sanitizedConcurrent) Slots() int { return s.c.Slots() }
