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
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/ktune/ktune/internal/cuda"
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
			return runSweep(ctx, stdout, stderr, args, sweepDeps{open: openBackend, isTTY: isTerminal, precompile: precompile})
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

Kernels compile ahead of the measurements: when the sweep starts, every
distinct kernel of the points to run is compiled with NVRTC on all CPU
cores into the CUBIN cache ($XDG_CACHE_HOME/ktune, else ~/.cache/ktune)
while the GPU measures, and a point whose kernel is still compiling waits
for it rather than compiling it again. The last line counts them, e.g.
"31 kernels: 24 compiled (3.1 s CPU, 1.2 s wall, 16 threads), 7 from
cache"; a second sweep of the same plan compiles nothing.

Examples:

  $ ktune sweep experiments/slice.yaml -o out/slice
  $ ktune sweep experiments/slice.yaml -o out/slice --only 'variant=d2,SPLITS=32|64'
  $ ktune sweep experiments/slice.yaml -o out/slice --force --only nkv=32768

  # One point under Nsight Compute: no gates and one probe, so that the
  # profile holds only the timed launches (the records get their own hash
  # and never stand in for full points). Read ncu's durations, not the
  # record: ncu serialises kernels, so the stream blocker cannot be
  # released and ktune's own samples come back empty ("gave up"):
  $ ncu --clock-control none --metrics gpu__time_duration.sum \
      ./bin/ktune sweep experiments/slice.yaml -o out/ncu \
      --only variant=d2,SPLITS=32,nkv=32768 --no-gates --probes cold

--only selects points with KEY=VALUE terms joined by commas (all must
hold); a term may list alternatives with |. Keys: variant, shape, nkv and
any define (SPLITS, NR, …).

# Faults, several GPUs, several machines

Each point runs in a worker process (the same binary), one per GPU. A
kernel that faults (illegal address, trap), crashes the process, hangs
past the spec's measure.timeout or runs out of memory ends its worker
only: the point is recorded as fault, timeout or oom with the worker's
last stderr lines, a fresh worker starts (compiled kernels come from the
shared on-disk cache) and the sweep goes on. --in-process runs points in
the sweep's own process instead, where the first fault ends the sweep.

--devices spreads the points over several GPUs of this machine, each
taking the next point as it frees up; every record names its device
(env.device_index, env.uuid) with that device's measured bandwidth and
clocks, and the sweep warns when the devices differ by more than 3%.

--shard i/n runs a deterministic 1/n of the plan, for a job array: whole
groups of points that share one compiled kernel and shape (they differ
only in nkv) are dealt in plan order, group g to shard g mod n, so each
kernel compiles and gates on one machine only. Each shard writes to its
own directory (DIR/shard.json says which part of which plan it holds);
'ktune merge' joins them. experiments/slurm holds a Slurm job array and
a Kubernetes indexed Job that do this.

  $ ktune sweep experiments/slice.yaml -o out/slice --devices all
  $ ktune sweep experiments/slice.yaml -o out/shard-2 --shard 2/8
  $ ktune merge -o out/slice out/shard-*

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
	open  func(backendSpec) (sweep.Backend, error)
	isTTY func(io.Writer) bool
	// precompile starts compiling the kernels of the points about to run,
	// for the architecture arch, and returns the function that stops it
	// and reports what it did; nil compiles nothing ahead.
	precompile func(arch string, todo []*sweep.Point, log io.Writer) (stop func() sweep.CompileStats, err error)
}

// backendSpec says what runs a sweep's points.
type backendSpec struct {
	devices    []int // CUDA ordinals; nil with allDevices
	allDevices bool
	inProcess  bool // no worker processes (one device only)
	sassDir    string
	verbose    bool
	log        io.Writer // the backend's log and the pool's warnings
}

// openBackend returns a pool of worker processes, one per device, or the
// CUDA backend itself with --in-process.
func openBackend(s backendSpec) (sweep.Backend, error) {
	if s.inProcess {
		var blog io.Writer = io.Discard
		if s.verbose {
			blog = s.log
		}
		return openProbe(probe.Options{Device: s.devices[0], SASSDir: s.sassDir, Log: blog})
	}
	devs := s.devices
	if s.allDevices {
		// The parent only counts: it never makes a context, so that each
		// GPU's memory goes to its worker.
		drv, err := cuda.Open()
		if err != nil {
			return nil, fmt.Errorf("counting CUDA devices: %w", err)
		}
		n, err := drv.DeviceCount()
		if err != nil {
			return nil, fmt.Errorf("counting CUDA devices: %w", err)
		}
		devs = nil
		for i := range n {
			devs = append(devs, i)
		}
	}
	command, err := workerCommand(s.sassDir, s.verbose)
	if err != nil {
		return nil, err
	}
	return sweep.NewPool(sweep.PoolOptions{Command: command, Devices: devs, Log: s.log, Verbose: s.verbose})
}

// precompile compiles the kernels of todo into the shared CUBIN cache on
// every CPU core while the workers measure; it needs NVRTC but no GPU.
func precompile(arch string, todo []*sweep.Point, log io.Writer) (func() sweep.CompileStats, error) {
	pc, err := probe.StartPrecompile(todo, probe.PrecompileOptions{Arch: arch, Log: log})
	if err != nil {
		return nil, err
	}
	return pc.Stop, nil
}

func openProbe(o probe.Options) (sweep.Backend, error) {
	b, err := probe.New(o)
	if err != nil {
		return nil, err
	}
	return b, nil
}

type sweepFlags struct {
	backendFlags
	only, probes   string
	force, noGates bool
	shard          string
}

// backendFlags are the flags of every command that measures points (sweep,
// tune): where the records go and what runs the points.
type backendFlags struct {
	out           string
	wait, verbose bool
	device        int
	devices       string
	inProcess     bool
}

func (f *backendFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.out, "o", "", "results `DIR` (created if needed); records go to DIR/results.jsonl")
	fs.IntVar(&f.device, "device", 0, "CUDA device `N`")
	fs.StringVar(&f.devices, "devices", "", "spread the points over these CUDA devices: `LIST` such as 0,1, or all")
	fs.BoolVar(&f.inProcess, "in-process", false, "run points in this process: no worker, so a fault ends the sweep")
	fs.BoolVar(&f.wait, "wait", false, "wait for another sweep holding DIR instead of refusing")
	fs.BoolVar(&f.verbose, "v", false, "print the backend's compile and measurement log")
}

// backend checks the device flags and says what runs the points.
func (f *backendFlags) backend(fs *flag.FlagSet, log io.Writer) (backendSpec, error) {
	bs := backendSpec{devices: []int{f.device}, inProcess: f.inProcess,
		sassDir: filepath.Join(f.out, "sass"), verbose: f.verbose, log: log}
	if f.devices == "" {
		return bs, nil
	}
	if flagSet(fs, "device") {
		return bs, usageErrorf("--device and --devices: give one of them")
	}
	var err error
	if bs.devices, bs.allDevices, err = parseDevices(f.devices); err != nil {
		return bs, usageErrorf("--devices: %v", err)
	}
	if f.inProcess && (bs.allDevices || len(bs.devices) > 1) {
		return bs, usageErrorf("--in-process runs one device; drop it to use several")
	}
	return bs, nil
}

func runSweep(ctx context.Context, stdout, stderr io.Writer, args []string, deps sweepDeps) error {
	var f sweepFlags
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	fs.BoolVar(&f.force, "force", false, "measure again points already recorded in DIR (the new record supersedes)")
	fs.StringVar(&f.only, "only", "", "run only the points matching `EXPR`, e.g. variant=d2,SPLITS=32,nkv=32768")
	fs.StringVar(&f.probes, "probes", "", "measure only these `PROBES` (cold,hot,graph) instead of the spec's")
	fs.BoolVar(&f.noGates, "no-gates", false, "skip the numerics gates (for cross-checks under an outside profiler)")
	fs.StringVar(&f.shard, "shard", "", "run only shard `i/n` of the plan (0 ≤ i < n), for a job array; see ktune merge")
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
	bs, err := f.backend(fs, stderr)
	if err != nil {
		return err
	}
	var shard *sweep.Shard
	if f.shard != "" {
		sh, err := sweep.ParseShard(f.shard)
		if err != nil {
			return usageErrorf("--shard: %v", err)
		}
		shard = &sh
	}

	bn, err := openBench(ctx, stderr, pos[0], f.backendFlags, bs, deps, func(draft *sweep.Plan) error {
		if filter != nil {
			if err := filter.Check(draft.Points); err != nil {
				return usageErrorf("--only: %v", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer bn.close()
	s, plan, env, where := bn.spec, bn.plan, bn.env, bn.where
	over.Apply(plan.Points)

	// A shard is cut from the whole plan, before --only, so that every
	// machine of a job array deals the same groups whatever it selects.
	selected := func(*sweep.Point) bool { return true }
	if shard != nil {
		m := &sweep.Manifest{Spec: s.Name, Plan: sweep.PlanHash(plan.Points), Points: len(plan.Points),
			Count: shard.Count, Shards: []int{shard.Index}}
		if err := sweep.CheckManifest(f.out, m); err != nil {
			return usageErrorf("--shard %s: %v", shard, err)
		}
		if err := sweep.WriteManifest(f.out, m); err != nil {
			return err
		}
		selected = shard.Filter(plan.Points)
	}
	fmt.Fprintf(stderr, "%s: %d points", pos[0], len(plan.Points))
	if shard != nil {
		n := 0
		for _, p := range plan.Points {
			if selected(p) {
				n++
			}
		}
		fmt.Fprintf(stderr, ", %d in shard %s", n, shard)
	}
	if filter != nil {
		n := 0
		for _, p := range plan.Points {
			if selected(p) && filter.Match(p) {
				n++
			}
		}
		fmt.Fprintf(stderr, ", %d selected by --only", n)
	}
	if n := len(plan.Skipped); n > 0 {
		fmt.Fprintf(stderr, " (%d configurations the kernels cannot run are left out)", n)
	}
	fmt.Fprintf(stderr, " on %s (%s, %s) into %s\n", env.Device, env.Arch, where, results.FilePath(f.out))

	opts := bn.opts
	opts.Force = f.force
	switch {
	case filter != nil:
		opts.Filter = func(p *sweep.Point) bool { return selected(p) && filter.Match(p) }
	case shard != nil:
		opts.Filter = selected
	}
	sum, runErr := sweep.Run(ctx, bn.backend, plan, opts)
	printRunSummary(stdout, stderr, sum, f.out, true)
	if runErr != nil {
		return interruptedOr(ctx, runErr)
	}
	return nil
}

// printRunSummary prints the table of a run's records (when table is set)
// and the line that counts them.
func printRunSummary(stdout, stderr io.Writer, sum sweep.Summary, dir string, table bool) {
	if table && len(sum.Records) > 0 {
		if err := report.SummaryTable(stdout, sum.Records); err != nil {
			fmt.Fprintf(stderr, "ktune: printing the summary table: %v\n", err)
		}
	}
	fmt.Fprintf(stdout, "%d planned, %d already recorded, %d run (%d ok, %d gate failed, %d failed) in %s; results in %s\n",
		sum.Planned, sum.Skipped, sum.Ran, sum.OK, sum.GateFailed, sum.Failed,
		sum.Elapsed.Round(time.Second), results.FilePath(dir))
	if sum.Compile.Kernels > 0 {
		fmt.Fprintln(stdout, sum.Compile)
	}
}

// A bench is the measuring stack a command runs points on: the results
// directory locked, the backend open and described, the spec's plan built
// for the device's architecture, and the run options every measuring
// command shares (progress, log, precompiler).
type bench struct {
	spec    *spec.Spec
	plan    *sweep.Plan
	env     results.Env
	where   string // the devices, for messages
	backend sweep.Backend
	opts    sweep.RunOptions
	closers []func()
}

// close closes the backend and releases the directory.
func (bn *bench) close() {
	for i := len(bn.closers) - 1; i >= 0; i-- {
		bn.closers[i]()
	}
}

// openBench loads the spec at path and opens the bench for the results
// directory f.out. The spec and a draft plan (checked further by check,
// when set) are validated before the GPU is touched: a mistake in the file
// is reported in a second, on any machine.
func openBench(ctx context.Context, stderr io.Writer, path string, f backendFlags, bs backendSpec, deps sweepDeps,
	check func(draft *sweep.Plan) error) (*bench, error) {
	s, err := spec.Load(path)
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	draft, err := sweep.Build(s, "")
	if err != nil {
		return nil, withCode(exitUsage, err)
	}
	if check != nil {
		if err := check(draft); err != nil {
			return nil, err
		}
	}
	for _, w := range draft.Warnings {
		fmt.Fprintf(stderr, "warning: %s\n", w)
	}

	bn := &bench{spec: s}
	lock, err := results.LockDir(ctx, f.out, results.LockOptions{
		Holder: results.ThisProcess(time.Now()),
		Wait:   f.wait,
		OnWait: func(h results.Holder) { fmt.Fprintf(stderr, "waiting for %s to release %s\n", h, f.out) },
	})
	if err != nil {
		return nil, interruptedOr(ctx, err)
	}
	bn.closers = append(bn.closers, func() { lock.Unlock() })

	bn.where = describeDevices(bs)
	const needs = "\nktune needs an NVIDIA GPU with its driver's libcuda.so.1 and NVRTC's libnvrtc.so.13 " +
		"in the loader path (LD_LIBRARY_PATH); 'ktune doctor' checks each piece"
	b, err := deps.open(bs)
	if err != nil {
		bn.close()
		return nil, fmt.Errorf("opening %s: %w"+needs, bn.where, err)
	}
	bn.backend = b
	bn.closers = append(bn.closers, func() { b.Close() })
	// The plan hash covers the architecture, which only the device knows;
	// the draft above was built for validation only.
	if bn.env, err = b.Env(ctx); err != nil {
		bn.close()
		return nil, interruptedOr(ctx, fmt.Errorf("describing %s: %w"+needs, bn.where, err))
	}
	if bn.plan, err = sweep.Build(s, bn.env.Arch); err != nil {
		bn.close()
		return nil, withCode(exitUsage, err)
	}

	bn.opts = sweep.RunOptions{
		Dir:      f.out,
		Progress: stderr,
		IsTTY:    deps.isTTY(stderr),
		Log:      stderr,
	}
	if deps.precompile != nil {
		arch := bn.env.Arch
		bn.opts.Precompile = func(todo []*sweep.Point) func() sweep.CompileStats {
			stop, err := deps.precompile(arch, todo, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "warning: %v; each point compiles its kernels when it runs\n", err)
				return func() sweep.CompileStats { return sweep.CompileStats{} }
			}
			return stop
		}
	}
	return bn, nil
}

// parseDevices parses --devices: "all" or a comma-separated list of
// ordinals.
func parseDevices(s string) (devs []int, all bool, err error) {
	if strings.TrimSpace(s) == "all" {
		return nil, true, nil
	}
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 0 {
			return nil, false, fmt.Errorf("%q: want device ordinals such as 0,1, or all", s)
		}
		if slices.Contains(devs, n) {
			return nil, false, fmt.Errorf("%q: device %d is listed twice", s, n)
		}
		devs = append(devs, n)
	}
	return devs, false, nil
}

// describeDevices names the devices of a sweep for messages.
func describeDevices(s backendSpec) string {
	switch {
	case s.allDevices:
		return "every CUDA device"
	case len(s.devices) == 1:
		return fmt.Sprintf("CUDA device %d", s.devices[0])
	}
	parts := make([]string, len(s.devices))
	for i, d := range s.devices {
		parts[i] = strconv.Itoa(d)
	}
	return "CUDA devices " + strings.Join(parts, ",")
}

// flagSet reports whether the named flag was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
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
