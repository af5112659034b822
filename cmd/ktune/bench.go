package main

// The backend set-up shared by sweep and tune: flags, worker pool or
// in-process backend, lock, plan for the device, precompile, signals.

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
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
	"github.com/ktune/ktune/probe/gate"
	"github.com/ktune/ktune/replay"
	"github.com/ktune/ktune/search"
	"github.com/ktune/ktune/sweep"
)

// sweepDeps are the outside world of the sweep command, passed in so that
// a test can run the command with a replay backend.
type sweepDeps struct {
	open  func(backendSpec) (plan.Backend, error)
	isTTY func(io.Writer) bool
	// precompile starts compiling the kernels of the points about to run,
	// for the architecture arch, and returns the function that stops it
	// and reports what it did; nil compiles nothing ahead.
	precompile func(arch string, todo []*plan.Point, log io.Writer) (stop func() plan.CompileStats, err error)
	// facts compiles points before any is timed and says what each
	// image holds (tune's pruning and model); nil: not available.
	facts func(arch string, points []*plan.Point, log io.Writer) (map[string]search.Facts, error)
}

// backendSpec says what runs a sweep's points.
type backendSpec struct {
	devices    []int // CUDA ordinals; nil with allDevices
	allDevices bool
	inProcess  bool // no worker processes (one device only)
	sassDir    string
	verbose    bool
	energy     bool      // record energy per step (probe.Options.Energy)
	log        io.Writer // the backend's log and the pool's warnings
	// replay, when set, serves recorded results instead of a GPU.
	replay *replaySpec
}

// A replaySpec says what the replay backend serves.
type replaySpec struct {
	from  []string // results files or sweep directories
	match replay.Match
	// stopAt > 0 loses the backend at its stopAt-th point without a
	// record ($KTUNE_REPLAY_STOP_AT), so that a pipeline's resume path
	// (a resubmitted job array task) can be tested without a GPU.
	stopAt int
	// delay is how long each point takes ($KTUNE_REPLAY_DELAY), so that
	// watching, cancelling and preempting a pipeline can be tested.
	delay time.Duration
}

// The backends a measuring command can run its points on.
const (
	backendCUDA   = "cuda"
	backendReplay = "replay"
)

// replayStopEnv and replayDelayEnv name the variables that make the
// replay backend stop mid-sweep and take its time; they are read once,
// here, and passed down.
const (
	replayStopEnv  = "KTUNE_REPLAY_STOP_AT"
	replayDelayEnv = "KTUNE_REPLAY_DELAY"
)

// openBackend returns a pool of worker processes, one per device, or the
// CUDA backend itself with --in-process.
func openBackend(s backendSpec) (plan.Backend, error) {
	if s.replay != nil {
		b, warns, err := replay.Load(s.replay.match, s.replay.from...)
		for _, w := range warns {
			fmt.Fprintf(s.log, "warning: %v\n", w)
		}
		if err != nil {
			return nil, err
		}
		b.StopAt, b.Delay = s.replay.stopAt, s.replay.delay
		return b, nil
	}
	if s.inProcess {
		var blog io.Writer = io.Discard
		if s.verbose {
			blog = s.log
		}
		return openProbe(probe.Options{Device: s.devices[0], SASSDir: s.sassDir, Log: blog, Energy: s.energy})
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
	command, err := workerCommand(s.sassDir, s.verbose, s.energy)
	if err != nil {
		return nil, err
	}
	return sweep.NewPool(sweep.PoolOptions{Command: command, Devices: devs, Log: s.log, Verbose: s.verbose})
}

// precompile compiles the kernels of todo into the shared CUBIN cache on
// every CPU core while the workers measure; it needs NVRTC but no GPU.
func precompile(arch string, todo []*plan.Point, log io.Writer) (func() plan.CompileStats, error) {
	pc, err := probe.StartPrecompile(todo, probe.PrecompileOptions{Arch: arch, Log: log})
	if err != nil {
		return nil, err
	}
	return pc.Stop, nil
}

func openProbe(o probe.Options) (plan.Backend, error) {
	b, err := probe.New(o)
	if err != nil {
		return nil, err
	}
	return b, nil
}

// backendFlags are the flags of every command that measures points (sweep,
// tune): where the records go and what runs the points.
type backendFlags struct {
	out                   string
	wait, verbose, energy bool
	device                int
	devices               string
	inProcess             bool
	backendKind           string
	replayFrom            stringList
	replayMatch           string
	axes                  axisFlags
}

// A stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

func (f *backendFlags) register(fs *flag.FlagSet) {
	f.axes.register(fs)
	fs.StringVar(&f.out, "o", "", "results `DIR` (created if needed); records go to DIR/results.jsonl")
	fs.IntVar(&f.device, "device", 0, "CUDA device `N`")
	fs.StringVar(&f.devices, "devices", "", "spread the points over these CUDA devices: `LIST` such as 0,1, or all")
	fs.BoolVar(&f.inProcess, "in-process", false, "run points in this process: no worker, so a fault ends the sweep")
	fs.BoolVar(&f.wait, "wait", false, "wait for another sweep holding DIR instead of refusing")
	fs.BoolVar(&f.verbose, "v", false, "print the backend's compile and measurement log")
	fs.BoolVar(&f.energy, "energy", false, "record the board's energy per decode step (NVML) beside the hot and graph probes: about 2 s more per probe and point")
	fs.StringVar(&f.backendKind, "backend", backendCUDA, "what runs the points: backend `NAME`, cuda (the GPU) or replay (recorded results, no GPU)")
	fs.Var(&f.replayFrom, "replay-from", "with --backend replay: the recorded `RESULTS` file or sweep directory to serve (repeatable)")
	fs.StringVar(&f.replayMatch, "replay-match", string(replay.MatchHash),
		"with --backend replay: how records match points, a `RULE`: hash serves a point only its own record; config also a record of its configuration under another hash")
}

// backend checks the device flags and says what runs the points.
func (f *backendFlags) backend(fs *flag.FlagSet, log io.Writer) (backendSpec, error) {
	bs := backendSpec{devices: []int{f.device}, inProcess: f.inProcess,
		sassDir: filepath.Join(f.out, "sass"), verbose: f.verbose, energy: f.energy, log: log}
	switch f.backendKind {
	case backendCUDA:
		for _, name := range []string{"replay-from", "replay-match"} {
			if flagSet(fs, name) {
				return bs, usageErrorf("--%s belongs to --backend replay", name)
			}
		}
	case backendReplay:
		return f.replayBackend(fs, bs)
	default:
		return bs, usageErrorf("--backend %q: want %s or %s", f.backendKind, backendCUDA, backendReplay)
	}
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

// replayBackend checks the flags of --backend replay.
func (f *backendFlags) replayBackend(fs *flag.FlagSet, bs backendSpec) (backendSpec, error) {
	for _, name := range []string{"device", "devices", "in-process"} {
		if flagSet(fs, name) {
			return bs, usageErrorf("--%s: --backend replay uses no device", name)
		}
	}
	if len(f.replayFrom) == 0 {
		return bs, usageErrorf("--backend replay wants --replay-from RESULTS: the recorded results to serve")
	}
	match, err := replay.ParseMatch(f.replayMatch)
	if err != nil {
		return bs, usageErrorf("--replay-match: %v", err)
	}
	bs.replay = &replaySpec{from: f.replayFrom, match: match}
	if v := os.Getenv(replayStopEnv); v != "" {
		if bs.replay.stopAt, err = strconv.Atoi(v); err != nil || bs.replay.stopAt < 1 {
			return bs, usageErrorf("$%s=%q: want a point number ≥ 1", replayStopEnv, v)
		}
	}
	if v := os.Getenv(replayDelayEnv); v != "" {
		if bs.replay.delay, err = time.ParseDuration(v); err != nil || bs.replay.delay < 0 {
			return bs, usageErrorf("$%s=%q: want a duration such as 200ms", replayDelayEnv, v)
		}
	}
	return bs, nil
}

// A bench is the measuring stack a command runs points on: the results
// directory locked, the backend open and described, the spec's plan built
// for the device's architecture, and the run options every measuring
// command shares (progress, log, precompiler).
type bench struct {
	spec    *spec.Spec
	plan    *plan.Plan
	env     results.Env
	where   string // the devices, for messages
	backend plan.Backend
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
	over plan.Override, check func(draft *plan.Plan) error) (*bench, error) {
	s, err := loadSpec(path, f.axes...)
	if err != nil {
		return nil, err
	}
	// The draft only validates: a grid that reads sms is evaluated at
	// sm_90's default, the device not being open yet. It runs no build:
	// a variant's build command is for the device's architecture, which
	// the plan below has (the draft's would be an empty -arch).
	draftOver := over
	draftOver.RunBuilds, draftOver.BuildLog = false, nil
	if draftOver.SMs == 0 {
		draftOver.SMs, _ = plan.DefaultSMs("sm_90")
	}
	draft, err := plan.BuildWith(s, "", draftOver)
	if err != nil {
		return nil, planError(path, err)
	}
	if err := checkLaunches(s, draft.Points); err != nil {
		return nil, err
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
	needs := "\nktune needs an NVIDIA GPU with its driver's libcuda.so.1 and NVRTC's libnvrtc.so.13 " +
		"in the loader path (LD_LIBRARY_PATH); 'ktune doctor' checks each piece"
	if bs.replay != nil {
		needs = ""
	}
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
	// A grid that reads sms is sized for this device.
	over.SMs = bn.env.SMs
	if bn.plan, err = plan.BuildWith(s, bn.env.Arch, over); err != nil {
		bn.close()
		return nil, withCode(exitUsage, err)
	}

	bn.opts = sweep.RunOptions{
		Dir:       f.out,
		Progress:  stderr,
		IsTTY:     deps.isTTY(stderr),
		Log:       stderr,
		GateSuite: gate.Suite,
	}
	// A replay compiles nothing: NVRTC need not even be installed.
	if deps.precompile != nil && bs.replay == nil {
		arch := bn.env.Arch
		bn.opts.Precompile = func(todo []*plan.Point) func() plan.CompileStats {
			stop, err := deps.precompile(arch, todo, stderr)
			if err != nil {
				fmt.Fprintf(stderr, "warning: %v; each point compiles its kernels when it runs\n", err)
				return func() plan.CompileStats { return plan.CompileStats{} }
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
	case s.replay != nil:
		return fmt.Sprintf("a replay of %s (match by %s)", strings.Join(s.replay.from, ", "), s.replay.match)
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
// parseArgs parses a command's flags and positional arguments in any
// order (ktune tune SPEC -o DIR, which the flag package alone refuses),
// with usage (the command's manual), the flag defaults and after as its
// -h text. help reports -h (printed, nothing to do); a flag mistake is
// returned as exit status 2, already printed by the flag package.
func parseArgs(fs *flag.FlagSet, args []string, usage string, after ...string) (pos []string, help bool, err error) {
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
		for _, a := range after {
			fmt.Fprint(fs.Output(), a)
		}
	}
	pos, err = parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil, true, nil
	}
	if err != nil {
		return nil, false, withCode(exitUsage, errSilent)
	}
	return pos, false, nil
}

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
