package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
	"github.com/ktune/ktune/replay"
	"github.com/ktune/ktune/report"
	"github.com/ktune/ktune/sweep"
)

func init() {
	register(&command{
		name:    "sweep",
		summary: "compile, gate and measure every point of a spec into a results directory",
		manual:  sweepManual,
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

Examples:

  $ ktune sweep experiments/slice.yaml -o out/slice
  $ ktune sweep experiments/slice.yaml -o out/slice --only 'variant=d2,SPLITS=32|64'
  $ ktune sweep experiments/slice.yaml -o out/slice --force --only nkv=32768

--only selects points with KEY=VALUE terms joined by commas (all must
hold); a term may list alternatives with |. Keys: variant, shape, nkv and
any define (SPLITS, NR, …).

Flags:
`

// sweepManual is the rest of sweep's manual, printed by 'ktune help sweep
// --long' after the usage: the compile cache, profiling, faults, several
// GPUs and machines, compute-sanitizer and the replay backend.
const sweepManual = `
# Compiling

Kernels compile ahead of the measurements: when the sweep starts, every
distinct kernel of the points to run is compiled with NVRTC on all CPU
cores into the CUBIN cache ($XDG_CACHE_HOME/ktune, else ~/.cache/ktune)
while the GPU measures, and a point whose kernel is still compiling waits
for it rather than compiling it again. The last line counts them, e.g.
"31 kernels: 24 compiled (3.1 s CPU, 1.2 s wall, 16 threads), 7 from
cache"; a second sweep of the same plan compiles nothing.

# Under Nsight Compute

  # One point under Nsight Compute. ncu profiles the process it starts,
  # so the kernels must run in it: --in-process (a worker process would
  # run them out of ncu's sight, and ncu would report no kernel). No gates
  # and one probe, so that the profile holds only the timed launches (the
  # records get their own hash and never stand in for full points). Read
  # ncu's durations, not the record: ncu serialises kernels, so the stream
  # blocker cannot be released and ktune's own samples come back empty.
  # 'ktune profile' does all of this and puts the numbers side by side.
  $ ncu --clock-control none --cache-control all \
      --metrics gpu__time_duration.sum --csv \
      ./bin/ktune sweep experiments/slice.yaml -o out/ncu --in-process \
      --only variant=d2,SPLITS=32,nkv=32768 --no-gates --probes cold
  $ ktune profile experiments/slice.yaml --only variant=d2,SPLITS=32,nkv=32768 -o out/profile

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

# Under compute-sanitizer

--sanitize first gates the first point of each compiled kernel (gates
only, no timing) once per tool in a worker started under NVIDIA
compute-sanitizer, one worker per kernel and tool so that each report
names one kernel; --sanitize=racecheck,memcheck picks the tools and
their order, each over every kernel before the next (bare: memcheck,
racecheck, synccheck and initcheck). Each run is a gate of kind
sanitizer in every record of its kernel; a kernel any run found errors
in (racecheck's warning-level hazards among them: a warp assumed to run
in step races since Volta) has every point recorded gate_failed with no
timings. A run passes only on a clean report of a worker whose record
shows it gated the point: a worker that never started (the device's
memory refused it), a point that failed before its gates,
compute-sanitizer's own failure ("Internal Sanitizer Error"), a warning
of the tool's own or a report cut short decide nothing (a worker gets 5
minutes to exit after its point while the tool writes the report; one
killed then leaves none, and the run says so). Such a run goes to the
back of the queue, up to three tries (two when the kernel faulted under
a sanitizer that saw nothing: a crowded device made good kernels fault,
and a kernel's own fault comes back); a worker refused for want of
memory, or a run the sanitizer itself failed, takes a worker out of the
pool, so fewer run at once. A kernel with a run still undecided is not
measured: its points' own gates run, and one they fail or that faults is
recorded so; the others are recorded error ("sanitizer undecided"),
neither passed nor failed, and the next sweep with --sanitize runs them
again. A kernel named exactly as one of ktune's own (ktune_read_bw,
ktune_fill and the others of kernels/util.cu) gets no run and no verdict:
the tool is told to skip those names. A report ending in another tool's
kind of summary, or a kept verdict line that contradicts itself, passes
nothing either.
compute-sanitizer comes from $KTUNE_COMPUTE_SANITIZER, PATH,
$CUDA_HOME/bin or /usr/local/cuda/bin; its logs go to DIR/sanitize.

Every finished run is kept in DIR/sanitize/verdicts.jsonl as it ends, so
a sanitize stopped part way (a time limit, Ctrl-C) resumes where it
stopped when the same command runs again; a run that left no whole
report or decided nothing is not kept and runs again (the log says what
each stopped run had had). A kept pass whose report, still in
DIR/sanitize, this ktune no longer reads as clean runs again.
--sanitize-jobs N runs N sanitized workers at a time, taking the
--devices in turn (device 0 without): under the sanitizer most of a run
is the host's instrumentation (a one-split batch-16 kernel can take
minutes per tool), and none is timed, so they share the GPU; each needs
its point's device memory and the sanitizer's own (sixteen 8b batch-16
workers filled an H200's 140 GiB).

  $ ktune sweep experiments/defects.yaml -o out/defects --sanitize=memcheck,racecheck
  $ ktune sweep experiments/h200-frontier2.yaml -o out/f2 --sanitize --sanitize-jobs 4

# Without a GPU: the replay backend

--backend replay serves recorded results instead of measuring: each point
gets the record of its own hash from the --replay-from files (results
files or sweep directories), marked "replayed" with how it was matched. A
point without one is recorded as an error, "not recorded", with no
numbers. --replay-match config also gives a point without a record of its
hash the record of the same variant, kernel, defines, shape and nkv under
another hash (measured before the kernel sources or the settings
changed). Nothing is compiled and no GPU, driver or NVRTC is needed, so it
is the way to dry-run a spec (which points have results?) and to test a
pipeline end to end on any machine: a job array, its resubmission, the
merge, a CI step. report, gate, compare and tune refuse replayed records
unless given --allow-replayed. To test what a pipeline does when things
go wrong, KTUNE_REPLAY_STOP_AT=N makes the replay backend stop at its
N-th point without recording it, as a lost node would, and
KTUNE_REPLAY_DELAY=200ms makes every point take that long, so that a job
can be watched, cancelled or preempted mid-sweep.

  $ ktune sweep experiments/slice.yaml -o out/dry --backend replay \
      --replay-match config --replay-from experiments/results/h200/make-sweep.jsonl
  $ ktune report out/dry -o out/dry-report --allow-replayed
`

const sweepExit = `
Exit status: 0 when the sweep completed (gate failures included), 1 on a
device or I/O error, 2 for a bad command line or spec, 6 when it
completed but points of the plan have no answer about their kernel
(recorded error, timeout or oom: a replay that found no record, a point
the device could not run; --force runs them again), 130 when interrupted
(re-run the same command to resume).
`

type sweepFlags struct {
	backendFlags
	only, probes   string
	force, noGates bool
	shard          string
	sanitize       sanitizeFlag
	sanitizeJobs   int
	cpuProfile     string
}

func runSweep(ctx context.Context, stdout, stderr io.Writer, args []string, deps sweepDeps) error {
	var f sweepFlags
	fs := flag.NewFlagSet("sweep", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	fs.BoolVar(&f.force, "force", false, "measure again points already recorded in DIR (the new record supersedes)")
	fs.StringVar(&f.only, "only", "", "run only the points matching `EXPR`, e.g. variant=d2,SPLITS=32,nkv=32768")
	fs.StringVar(&f.probes, "probes", "", "measure only these `PROBES` (cold,hot,graph) instead of the spec's")
	fs.BoolVar(&f.noGates, "no-gates", false, "gate at one length only, the longest gate length (for timing screens and cross-checks under an outside profiler)")
	fs.StringVar(&f.shard, "shard", "", "run only shard `I/N` of the plan (0 ≤ I < N), for a job array; see ktune merge")
	var devOver plan.Override
	deviceFlags(fs, &devOver)
	fs.Var(&f.sanitize, "sanitize", "before the sweep, gate the first point of each compiled kernel under compute-sanitizer: bare for every tool, or =`TOOLS` (memcheck,racecheck,synccheck,initcheck)")
	fs.IntVar(&f.sanitizeJobs, "sanitize-jobs", 1, "with --sanitize, run `N` sanitized workers at a time, over the --devices in turn")
	fs.StringVar(&f.cpuProfile, "cpuprofile", "", "with --in-process, write a Go CPU profile of the sweep to `FILE` (go tool pprof): where the host's share of the gates goes")
	pos, help, err := parseArgs(fs, args, sweepUsage, sweepExit)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErrorf("sweep wants one SPEC file, got %d arguments (ktune help sweep)", len(pos))
	}
	if f.out == "" {
		return usageErrorf("sweep wants -o DIR: the directory of results.jsonl (ktune help sweep)")
	}
	over := plan.Override{BlocksPerSM: devOver.BlocksPerSM} // sms: the device's (openBench)
	// A variant's own build (build:) runs on the machine that sweeps.
	over.RunBuilds, over.BuildLog = true, stderr
	if over.BuildDir, err = probe.BuildDir(""); err != nil {
		return err
	}
	over.NoGates = f.noGates
	if f.probes != "" {
		if over.Probes, err = measure.ParseProbes(f.probes); err != nil {
			return usageErrorf("--probes: %v", err)
		}
	}
	var filter *results.Filter
	if f.only != "" {
		if filter, err = results.ParseFilter(f.only); err != nil {
			return usageErrorf("--only: %v", err)
		}
	}
	bs, err := f.backend(fs, stderr)
	if err != nil {
		return err
	}
	if err := checkSanitize(f.sanitize, f.sanitizeJobs, bs); err != nil {
		return err
	}
	if f.cpuProfile != "" {
		if !bs.inProcess || bs.replay != nil {
			return usageErrorf("--cpuprofile profiles this process: the points run in it only with --in-process (and the CUDA backend)")
		}
		stop, err := startCPUProfile(f.cpuProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var shard *sweep.Shard
	if f.shard != "" {
		sh, err := sweep.ParseShard(f.shard)
		if err != nil {
			return usageErrorf("--shard: %v", err)
		}
		shard = &sh
	}

	bn, err := openBench(ctx, stderr, pos[0], f.backendFlags, bs, deps, over, func(draft *plan.Plan) error {
		if filter != nil {
			if err := filter.Check(draft.Configs()); err != nil {
				return usageErrorf("--only: %v", err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer bn.close()
	s, pl, env, where := bn.spec, bn.plan, bn.env, bn.where

	// A shard is cut from the whole plan, before --only, so that every
	// machine of a job array deals the same groups whatever it selects.
	selected := func(*plan.Point) bool { return true }
	if shard != nil {
		selected = shard.Filter(pl.Points)
	}
	inShard, chosen := 0, 0
	for _, p := range pl.Points {
		if selected(p) {
			inShard++
			if filter.Match(&p.Config) {
				chosen++
			}
		}
	}
	if shard != nil {
		m := &sweep.Manifest{Spec: s.Name, Plan: sweep.PlanHash(pl.Points), Points: len(pl.Points),
			Count: shard.Count, Shards: []int{shard.Index}, Selected: chosen}
		if err := sweep.CheckManifest(f.out, m); err != nil {
			return usageErrorf("--shard %s: %v", shard, err)
		}
		if err := sweep.WriteManifest(f.out, m); err != nil {
			return err
		}
	}
	fmt.Fprintf(stderr, "%s: %d points", pos[0], len(pl.Points))
	if shard != nil {
		fmt.Fprintf(stderr, ", %d in shard %s", inShard, shard)
	}
	if filter != nil {
		fmt.Fprintf(stderr, ", %d selected by --only", chosen)
	}
	if n := len(pl.Skipped); n > 0 {
		fmt.Fprintf(stderr, " (%d configurations the kernels cannot run are left out)", n)
	}
	fmt.Fprintf(stderr, " on %s (%s, %s) into %s\n", env.Device, env.Arch, where, results.FilePath(f.out))

	opts := bn.opts
	opts.Force = f.force
	switch {
	case filter != nil:
		opts.Filter = func(p *plan.Point) bool { return selected(p) && filter.Match(&p.Config) }
	case shard != nil:
		opts.Filter = selected
	}
	backend := bn.backend
	if f.sanitize.tools != nil {
		var todo []*plan.Point
		for _, p := range pl.Points {
			if opts.Filter == nil || opts.Filter(p) {
				todo = append(todo, p)
			}
		}
		if backend, err = sanitize(ctx, stderr, f.sanitize, f.sanitizeJobs, f.out, bs, backend, todo); err != nil {
			return err
		}
		opts.Again = sweep.SanitizeUndecided
	}
	sum, runErr := sweep.Run(ctx, backend, pl, opts)
	printRunSummary(stdout, stderr, sum, f.out, true)
	if bs.replay != nil {
		printReplaySummary(stdout, sum.Records, bs.replay.match)
	}
	if runErr != nil {
		return interruptedOr(ctx, runErr)
	}
	return unanswered(sum.Records)
}

// unanswered is the sweep's error when points of the plan hold no answer
// about their kernel: an error, a timeout or an out-of-memory record (a
// gate failure, a fault or a compile failure is an answer).
func unanswered(recs []results.Record) error {
	n := 0
	for i := range recs {
		switch recs[i].Status {
		case results.StatusError, results.StatusTimeout, results.StatusOOM:
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return withCode(exitUnanswered, fmt.Errorf("sweep: %d of %d points recorded no answer about their kernel (error, timeout or oom; above: why)", n, len(recs)))
}

// printReplaySummary says how a replay's points found their records, and
// what to do about those that found none.
func printReplaySummary(stdout io.Writer, recs []results.Record, match replay.Match) {
	n := map[results.ReplayMatch]int{}
	for _, r := range recs {
		if r.Replayed != nil {
			n[r.Replayed.Match]++
		}
	}
	fmt.Fprintf(stdout, "replayed, not measured: %d by hash, %d by configuration, %d not recorded\n",
		n[results.ReplayHash], n[results.ReplayConfig], n[results.ReplayNone])
	if n[results.ReplayNone] > 0 && match == replay.MatchHash {
		fmt.Fprintln(stdout, "(--replay-match config also serves a record of the same configuration measured under another hash)")
	}
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

// startCPUProfile starts a CPU profile into path; stop ends it and closes
// the file.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("--cpuprofile: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
