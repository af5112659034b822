package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/probe"
	"github.com/ktune/ktune/report"
	"github.com/ktune/ktune/sweep"
)

func init() {
	register(&command{
		name:    "sweep",
		summary: "compile, gate and measure every point of a spec into a results directory",
		run: func(stdout, stderr io.Writer, args []string) error {
			ctx, stop := interruptible(stderr)
			defer stop()
			return runSweep(ctx, stdout, stderr, args, sweepDeps{open: openProbe, isTTY: isTerminal})
		},
	})
}

const sweepUsage = `Usage: ktune sweep SPEC -o DIR [flags]

Sweep compiles, gates and measures every point of the experiment SPEC on
the GPU and appends one record per point to DIR/results.jsonl, each one
on disk before the next point starts. Points already recorded in DIR are
skipped: an interrupted sweep (Ctrl-C, a crash, a reboot) resumes where it
stopped when the same command runs again. One sweep at a time may write
to a directory.

At the end it prints a summary table; 'ktune report DIR' renders the full
report. A point that fails a gate is a result, not an error: it is listed
in the table and the sweep goes on.

Examples:

  $ ktune sweep experiments/slice.yaml -o out/slice
  $ ktune sweep experiments/slice.yaml -o out/slice --only 'variant=d2,SPLITS=32|64'
  $ ktune sweep experiments/slice.yaml -o out/slice --force --only nkv=32768

  # One point under Nsight Compute: no gates and one probe, so that the
  # profile holds only the timed launches (the records get their own hash
  # and never stand in for full points):
  $ ncu --clock-control none --metrics gpu__time_duration.sum \
      ./bin/ktune sweep experiments/slice.yaml -o out/ncu \
      --only variant=d2,SPLITS=32,nkv=32768 --no-gates --probes cold

--only selects points with KEY=VALUE terms joined by commas (all must
hold); a term may list alternatives with |. Keys: variant, shape, nkv and
any define (SPLITS, NR, …).

Flags:
`

const sweepExit = `
Exit status: 0 when the sweep completed (gate failures included), 1 on a
device or I/O error, 2 for a bad command line or spec, 130 when
interrupted (re-run the same command to resume).
`

// sweepDeps are the outside world of the sweep command, passed in so that
// a test can run the command with a replay backend.
type sweepDeps struct {
	open  func(probe.Options) (sweep.Backend, error)
	isTTY func(io.Writer) bool
}

func openProbe(o probe.Options) (sweep.Backend, error) {
	b, err := probe.New(o)
	if err != nil {
		return nil, err
	}
	return b, nil
}

type sweepFlags struct {
	out, only, probes string
	force, noGates    bool
	wait, verbose     bool
	device            int
}

func runSweep(ctx context.Context, stdout, stderr io.Writer, args []string, deps sweepDeps) error {
	var f sweepFlags
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&f.out, "o", "", "results `DIR` (created if needed); records go to DIR/results.jsonl")
	fs.BoolVar(&f.force, "force", false, "measure again points already recorded in DIR (the new record supersedes)")
	fs.StringVar(&f.only, "only", "", "run only the points matching `EXPR`, e.g. variant=d2,SPLITS=32,nkv=32768")
	fs.StringVar(&f.probes, "probes", "", "measure only these `PROBES` (cold,hot,graph) instead of the spec's")
	fs.BoolVar(&f.noGates, "no-gates", false, "skip the numerics gates (for cross-checks under an outside profiler)")
	fs.IntVar(&f.device, "device", 0, "CUDA device `N`")
	fs.BoolVar(&f.wait, "wait", false, "wait for another sweep holding DIR instead of refusing")
	fs.BoolVar(&f.verbose, "v", false, "print the backend's compile and measurement log")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), sweepUsage)
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), sweepExit)
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return withCode(exitUsage, errSilent) // flag has printed it with the usage
	}
	if len(pos) != 1 {
		return usageErrorf("sweep wants one SPEC file, got %d arguments (ktune help sweep)", len(pos))
	}
	if f.out == "" {
		return usageErrorf("sweep wants -o DIR: the directory of results.jsonl (ktune help sweep)")
	}
	var over sweep.Override
	over.NoGates = f.noGates
	if f.probes != "" {
		if over.Probes, err = sweep.ParseProbes(f.probes); err != nil {
			return usageErrorf("--probes: %v", err)
		}
	}
	var filter *sweep.Filter
	if f.only != "" {
		if filter, err = sweep.ParseFilter(f.only); err != nil {
			return usageErrorf("--only: %v", err)
		}
	}

	// The spec and the plan are checked before the GPU is touched: a
	// mistake in the file is reported in a second, on any machine.
	s, err := spec.Load(pos[0])
	if err != nil {
		return withCode(exitUsage, err)
	}
	draft, err := sweep.Build(s, "")
	if err != nil {
		return withCode(exitUsage, err)
	}
	if filter != nil {
		if err := filter.Check(draft.Points); err != nil {
			return usageErrorf("--only: %v", err)
		}
	}
	for _, w := range draft.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}

	lock, err := results.LockDir(ctx, f.out, results.LockOptions{
		Holder: results.ThisProcess(time.Now()),
		Wait:   f.wait,
		OnWait: func(h results.Holder) { fmt.Fprintf(stderr, "waiting for %s to release %s\n", h, f.out) },
	})
	if err != nil {
		return interruptedOr(ctx, err)
	}
	defer lock.Unlock()

	var blog io.Writer = io.Discard
	if f.verbose {
		blog = stderr
	}
	b, err := deps.open(probe.Options{Device: f.device, SASSDir: filepath.Join(f.out, "sass"), Log: blog})
	if err != nil {
		return fmt.Errorf("opening CUDA device %d: %w\n"+
			"ktune sweep needs an NVIDIA GPU with its driver's libcuda.so.1 and NVRTC's libnvrtc.so.13 "+
			"in the loader path (LD_LIBRARY_PATH); 'ktune doctor' checks each piece", f.device, err)
	}
	defer b.Close()
	// The plan hash covers the architecture, which only the device knows;
	// the draft above was built for validation only.
	env, err := b.Env(ctx)
	if err != nil {
		return interruptedOr(ctx, fmt.Errorf("describing device %d: %w", f.device, err))
	}
	plan, err := sweep.Build(s, env.Arch)
	if err != nil {
		return withCode(exitUsage, err)
	}
	over.Apply(plan.Points)

	fmt.Fprintf(stderr, "%s: %d points", pos[0], len(plan.Points))
	if filter != nil {
		n := 0
		for _, p := range plan.Points {
			if filter.Match(p) {
				n++
			}
		}
		fmt.Fprintf(stderr, ", %d selected by --only", n)
	}
	if n := len(plan.Skipped); n > 0 {
		fmt.Fprintf(stderr, " (%d configurations the kernels cannot run are left out)", n)
	}
	fmt.Fprintf(stderr, " on %s (%s, device %d) into %s\n", env.Device, env.Arch, f.device, results.FilePath(f.out))

	opts := sweep.RunOptions{
		Dir:      f.out,
		Force:    f.force,
		Progress: stderr,
		IsTTY:    deps.isTTY(stderr),
		Log:      stderr,
	}
	if filter != nil {
		opts.Filter = filter.Match
	}
	sum, runErr := sweep.Run(ctx, b, plan, opts)
	if len(sum.Records) > 0 {
		if err := report.SummaryTable(stdout, sum.Records); err != nil {
			fmt.Fprintf(stderr, "ktune: printing the summary table: %v\n", err)
		}
	}
	fmt.Fprintf(stdout, "%d planned, %d already recorded, %d run (%d ok, %d gate failed, %d failed) in %s; results in %s\n",
		sum.Planned, sum.Skipped, sum.Ran, sum.OK, sum.GateFailed, sum.Failed,
		sum.Elapsed.Round(time.Second), results.FilePath(f.out))
	if runErr != nil {
		return interruptedOr(ctx, runErr)
	}
	return nil
}

// interruptedOr gives err the interrupt exit code when ctx was cancelled.
func interruptedOr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return withCode(exitInterrupt, err)
	}
	return err
}

// parseInterspersed parses flags that may come before or after the
// positional arguments (`ktune sweep SPEC -o DIR`), which package flag
// alone stops at.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// interruptible returns a context cancelled by the first SIGINT or
// SIGTERM. The first signal lets the sweep stop cleanly (the point in
// flight is dropped, the file stays consistent); a second one kills the
// process the default way, for a backend stuck in a kernel.
func interruptible(stderr io.Writer) (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		select {
		case s := <-sigs:
			signal.Stop(sigs)
			fmt.Fprintf(stderr, "\n%v: stopping; the point in flight is not recorded (again to quit at once)\n", s)
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		cancel()
	}
}

// isTerminal reports whether w is a terminal, where progress can redraw
// one line. A character device is taken as one: the only other common
// one, /dev/null, shows nothing either way.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
