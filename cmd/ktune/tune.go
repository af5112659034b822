package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/dispatch"
	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/internal/workload"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/search"
)

func init() {
	register(&command{
		name:    "tune",
		summary: "search a spec's space and export a dispatch table (YAML and C header)",
		run: func(stdout, stderr io.Writer, args []string) error {
			ctx, stop := interruptible(stderr)
			defer stop()
			return runTune(ctx, stdout, stderr, args, sweepDeps{open: openBackend, isTTY: isTerminal, precompile: precompile, facts: compileFacts})
		},
	})
}

var tuneUsage = `Usage:
  ktune tune SPEC -o DIR [--search grid|random|halving|model] [flags]
  ktune tune --from RESULTS... -o DIR [--probe cold|graph]
  ktune tune --simulate RESULTS... [--search all|STRATEGY,...] [--seeds N]

Tune searches the space of the experiment SPEC on the GPU, records every
measured point in DIR/results.jsonl as 'ktune sweep' does, and exports
DIR/dispatch.yaml and DIR/dispatch.h: for each shape and batch, nkv ranges
with the fastest configuration that passed all its gates. A faster median
wins only when the difference is significant (Mann-Whitney U, α=` + decision.AlphaText() + `);
ties keep the landed configuration, then the one winning at neighbouring
nkv, then the smaller SPLITS. It prints the table with the evidence for
each measured nkv.

A configuration is a variant with its defines at one shape; the search
keeps or drops whole configurations and runs a kept one at every nkv of
the spec.

# Searches

--search grid (the default) measures every point, as 'ktune sweep' does.

--search random measures --samples N configurations drawn with --seed S
(the same seed draws the same configurations on every machine), plus the
landed configuration, so that the table has its baseline. DIR/search.json
records the seed and the configurations drawn.

--search halving is successive halving. Round 1 measures every
configuration with 5 samples (gates as usual); at each shape and nkv, a
configuration whose samples are significantly slower than the fastest's
(Mann-Whitney U, α=` + decision.AlphaText() + `) and whose median is slower by more than
--keep is dropped there. A configuration survives when it survives at some
nkv (it may win a range there); the landed one always survives. The
survivors are screened again with twice the samples, up to --rounds
rounds, or until one configuration per shape and nkv is left; the last
round measures the survivors under the spec's own stopping rule.

--search model is Bayesian optimisation of the table: it times the landed
configuration, then rounds of --batch points (default 4) chosen by a
Gaussian process fitted to the log times measured so far, over nkv, the
shape, the variant and each define: the points of largest expected
improvement over the best time of their own shape and nkv, a shape and
nkv with no time yet first. It stops after --budget points or once no
point has a --stop chance (default 0.02) of being 1% faster than the best
of its shape and nkv. --facts adds the compile facts of each point to
what it learns from (off: on the committed H200 searches they cost
points). --cost ranks by expected improvement per expected GPU second
instead: a point of a configuration with nothing timed yet pays its
compile and gates (seconds, the mean of those paid so far), one of a
configuration already timed only its timing (milliseconds), so the
search finishes the configurations it has paid for before it pays for
another; the stopping rule is unchanged. Off: over the committed H200
searches it saved 2.5-13% of the GPU seconds to come within 2% and timed
5-30% more points (experiments/results/h200/search-sim/README.md). --seed
draws its first points when there is no landed configuration.

Whatever the search, a point whose compile facts break its variant's
budget or --max-registers, --no-spills or --max-shared is never timed;
DIR/search.json lists it with why.

The screening rounds are recorded in DIR/screen/results.jsonl (their
samples are too few for a table; each measurement's note says "halving
round 1 of 3: screening, 5 samples"; 'ktune report DIR/screen' shows
them). DIR/results.jsonl receives only full measurements, so the dispatch
table, built from DIR/results.jsonl, rests on full measurements alone.
DIR/search.json lists each round's configurations and those it dropped.

Every round resumes: an interrupted search skips what it recorded when the
same command runs again, and a point 'ktune sweep SPEC -o DIR' measured is
not measured again. The table is built from every record of SPEC in
DIR/results.jsonl, earlier searches included: use a fresh DIR for a
table of one search alone.

The devices, the worker processes and the compile cache are those of
'ktune sweep' (ktune help sweep).

# Simulation

With --simulate, tune measures nothing: it runs the strategies of --search
(all, or a comma-separated list; their flags apply) with seeds 1..--seeds
over each recorded full search, serving each proposed point its record,
and prints for each the points it timed, and the GPU seconds the records
say they cost (compile and gates included), until the table of its full
measurements was within 1% and 2% of the whole file's at every shape and
nkv: the median over seeds, the lowest and highest, how many seeds got
there, and how many times fewer points than random search's median; then
where each stopped on its own: its points, GPU seconds and worst cell.

# Invariance

--invariant exports instead a table whose arms are invariant with one
another: a sequence's output bits do not depend on the batch, its
position in it, or which arm served it. A configuration qualifies by its
built-in form's claim (mma's forms: those that split alike and compute
alike share a class; with SPLITSIZE, a fixed split size, SPLITS and
MINROWS do not matter) or by a passing invariance gate on batch and
position (a class of its own). Per shape the table keeps the arms of one
class, the one that costs least over the measured nkv, and tune prints
the price of invariance: per shape and nkv the fastest configuration, the
fastest invariant one and the invariant table's arm, with their cost. A
spec that gates the table's arms declares them as a dispatch variant
with invariant: [arm].

# Export only

With --from, tune measures nothing: it exports the table from results
files or sweep directories (a directory means its results.jsonl); when two
hold the same configuration, the later wins. 'ktune tune SPEC -o DIR'
writes the same files as 'ktune tune --from DIR -o DIR' would after it.

# A few arms

--max-arms N limits each shape's table to N nkv ranges: when the winners
above form more, the ranges are those of least total cost, the sum over
the measured nkv of log(median of the range's configuration / median of
that nkv's winner). Each nkv where the range's configuration is not the
winner says by how much it is slower (rule "arms"); one where it was not
measured at all says so (rule "unmeasured", median "-"), and a warning
names every configuration of the table not measured at a measured nkv:
the sweep to run before trusting the table there. With --workload FILE
(ktune help gate: Workload) each nkv's cost is weighted by the share of
the engine's steps it stands for (a bucket between two measured nkv
split between them, one beyond them an error): the arms fit the traffic. 'ktune report' opens
with this table for every shape with a landed kernel (--max-arms 3).

The outputs name their results files with a sha256, never a date:
regenerating from the same files gives the same bytes.

Examples:
  $ ktune tune experiments/slice.yaml -o out/slice
  $ ktune tune experiments/slice.yaml -o out/halving --search halving --devices all
  $ ktune tune experiments/slice.yaml -o out/random --search random --samples 8 --seed 7
  $ ktune tune experiments/splits.yaml -o out/model --search model --budget 32
  $ ktune tune --simulate experiments/results/h200/splits.jsonl --search random,model
  $ ktune tune --from experiments/results/h200/slice.jsonl -o out/dispatch
  $ ktune tune --from out/run1 --from out/run2 --probe graph -o out/dispatch
  $ ktune tune --from experiments/results/h200/slice.jsonl --max-arms 2 -o out/dispatch
  $ ktune tune --invariant --from experiments/results/h200/frontier3/h200-frontier3.jsonl -o out/invariant

Flags:
`

const tuneExit = `
Exit status: 0 when the table was written (gate failures included), 1 on a
device or I/O error, when no configuration qualified for the table, or when
a results line could not be read or a record is not evidence (no samples,
a sample not a finite positive time or below the point's physical floor,
a status its gates contradict: the
table is then not written), 2 for
a bad command line or spec, 130 when interrupted (re-run the same command
to resume).
`

// tuneFiles collects --from values and the arguments after them in
// command-line order, which decides which of two measurements of one
// configuration counts (the later).
type tuneFiles struct {
	paths []string
	from  bool // --from was given
}

func (f *tuneFiles) String() string { return strings.Join(f.paths, ",") }
func (f *tuneFiles) Set(v string) error {
	f.paths, f.from = append(f.paths, v), true
	return nil
}

// tuneFlags are the flags of the search; backendFlags those of sweep.
type tuneFlags struct {
	backendFlags
	from     tuneFiles
	probe    string
	search   string
	seed     uint64
	force    bool
	simulate bool
	seeds    int
	budget   budgetFlags
	// strategies are the flags each strategy declares.
	strategies *search.Flags
	maxArms    int
	byDims     bool
	workload   string
	weights    func(int, []int) ([]float64, error) // from --workload
	// allowReplayed: see replayed.go.
	allowReplayed bool
	// invariant exports the invariant table (invariance.go).
	invariant bool
}

// budgetFlags prune points before timing: a point whose compile facts
// break them is never timed.
type budgetFlags struct {
	maxRegisters, maxShared int
	noSpills                bool
}

func (b budgetFlags) budget() spec.Budget {
	return spec.Budget{MaxRegisters: b.maxRegisters, NoSpills: b.noSpills, MaxShared: b.maxShared}
}

// searchFlagNames are the flags that only a search takes (each
// strategy's own besides).
var searchFlagNames = []string{"search", "seed", "force", "simulate", "seeds", "max-registers", "no-spills", "max-shared",
	"device", "devices", "in-process", "wait", "v", "backend", "replay-from", "replay-match", "axis"}

// simulateOnly are the flags of --simulate alone.
var simulateOnly = []string{"simulate", "seeds"}

func runTune(ctx context.Context, stdout, stderr io.Writer, args []string, deps sweepDeps) error {
	var f tuneFlags
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f.register(fs)
	fs.Lookup("o").Usage = "`DIR` of the results and of dispatch.yaml and dispatch.h (required)"
	fs.Var(&f.from, "from", "export only, from this `RESULTS` file or sweep directory (repeatable; more may follow as arguments)")
	fs.StringVar(&f.probe, "probe", string(results.ProbeCold), "`PROBE` whose samples decide: cold or graph")
	fs.StringVar(&f.search, "search", "grid", "search `STRATEGY`: "+strategyList()+" (--simulate: a comma-separated list, or all)")
	fs.Uint64Var(&f.seed, "seed", 1, "random, model: the `SEED` of every random choice")
	fs.BoolVar(&f.byDims, "by-dims", false, "shapes that differ only in their name are one shape (as in 'ktune report')")
	fs.StringVar(&f.workload, "workload", "", "with --max-arms: weigh each measured nkv by the workload `FILE`'s steps (ktune help gate: Workload)")
	fs.IntVar(&f.maxArms, "max-arms", 0, "at most `N` nkv ranges per shape, chosen for the least cost against each nkv's winner (0: no limit)")
	fs.BoolVar(&f.force, "force", false, "measure again points already recorded in DIR (the new record supersedes)")
	fs.BoolVar(&f.simulate, "simulate", false, "run the strategies over recorded RESULTS instead of a device, and print how many points each needs")
	fs.IntVar(&f.seeds, "seeds", 20, "simulate: run each strategy with seeds 1..`N`")
	fs.IntVar(&f.budget.maxRegisters, "max-registers", 0, "never time a point whose kernels use more than `N` registers per thread")
	fs.BoolVar(&f.budget.noSpills, "no-spills", false, "never time a point whose kernels use local memory (spills)")
	fs.IntVar(&f.budget.maxShared, "max-shared", 0, "never time a point whose kernels use more than `BYTES` of shared memory per block")
	f.strategies = search.DeclareFlags(fs)
	registerAllowReplayed(fs, &f.allowReplayed)
	fs.BoolVar(&f.invariant, "invariant", false, "export a table whose arms are invariant with one another, and print the price of invariance")
	paths, help, err := parseArgs(fs, args, tuneUsage, tuneExit)
	if help || err != nil {
		return err
	}
	f.from.paths = append(f.from.paths, paths...)

	p, err := measure.ParseProbe(f.probe)
	// hot is not offered: back-to-back launches over warm caches are not
	// what a decode step sees, so they must not pick the engine's kernel.
	if err != nil || p != results.ProbeCold && p != results.ProbeGraph {
		return usageErrorf("tune: --probe %q: want cold or graph", f.probe)
	}
	if f.simulate {
		return tuneSimulate(ctx, stdout, stderr, fs, &f, p)
	}
	for _, name := range simulateOnly {
		if flagSet(fs, name) {
			return usageErrorf("tune: --%s belongs to --simulate", name)
		}
	}
	if f.out == "" {
		return usageErrorf("tune: -o DIR is required (run 'ktune help tune')")
	}
	if f.workload != "" {
		if f.maxArms <= 0 {
			return usageErrorf("tune: --workload weighs the arms of --max-arms N: give both")
		}
		w, err := workload.Load(f.workload)
		if err != nil {
			return usageErrorf("tune: %v", err)
		}
		f.weights = w.Spread
	}
	if f.from.from {
		set := ""
		fs.Visit(func(fl *flag.Flag) {
			if set == "" && (slices.Contains(searchFlagNames, fl.Name) || f.strategies.Owner(fl.Name) != "") {
				set = fl.Name
			}
		})
		if set != "" {
			return usageErrorf("tune: --%s measures, --from only exports: give one of them", set)
		}
		// Records of 'sweep --backend replay' are not measurements (replayed.go).
		if err := refuseReplayedFiles(stderr, f.from.paths, f.allowReplayed); err != nil {
			return err
		}
		return tuneExport(stdout, stderr, f.from.paths, dispatch.Options{Probe: p, MaxArms: f.maxArms, ByDims: f.byDims, Weights: f.weights}, f.out, f.invariant)
	}
	if len(f.from.paths) != 1 {
		return usageErrorf("tune: want one SPEC or --from RESULTS... (run 'ktune help tune')")
	}
	return tuneSearch(ctx, stdout, stderr, fs, &f, p, deps)
}

// strategyList is the registered strategies for help, e.g. "grid, random,
// halving or model".
func strategyList() string {
	var names []string
	for _, n := range search.Names() {
		names = append(names, string(n))
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// tuneSearch runs the search of one spec into f.out and exports its table.
func tuneSearch(ctx context.Context, stdout, stderr io.Writer, fs *flag.FlagSet, f *tuneFlags, p results.Probe, deps sweepDeps) error {
	specPath := f.from.paths[0]
	if _, err := search.Lookup(f.search); err != nil {
		return usageErrorf("tune: --search: %v", err)
	}
	name := search.Name(strings.TrimSpace(f.search))
	st, err := f.strategies.Build(name, search.Common{Seed: f.seed, Probe: p})
	if err != nil {
		return usageErrorf("tune: %v", err)
	}
	if reg, _ := search.Lookup(string(name)); flagSet(fs, "seed") && !reg.Seeded {
		return usageErrorf("tune: --seed: --search %s draws nothing at random", name)
	}
	bs, err := f.backend(fs, stderr)
	if err != nil {
		return err
	}
	bn, err := openBench(ctx, stderr, specPath, f.backendFlags, bs, deps, plan.Override{}, nil)
	if err != nil {
		return err
	}
	defer bn.close()
	opts := search.SearchOptions{Name: name, Strategy: st, Budget: f.budget.budget(), Run: bn.opts}
	if opts.Facts, err = tuneFacts(stderr, f, st, bn, deps); err != nil {
		return err
	}
	opts.Run.Force = f.force
	fmt.Fprintf(stderr, "%s: %d points, %d configurations; %s search on %s (%s, %s) into %s\n",
		specPath, len(bn.plan.Points), len(search.Configurations(bn.plan.Points)), name,
		bn.env.Device, bn.env.Arch, bn.where, results.FilePath(f.out))

	res, runErr := search.Search(ctx, bn.backend, bn.plan, opts)
	if err := writeSearch(f.out, res); err != nil {
		fmt.Fprintf(stderr, "ktune: %v\n", err)
	}
	for _, r := range res.Rounds {
		samples := "the spec's stopping rule"
		if r.Samples > 0 {
			samples = fmt.Sprintf("%d samples", r.Samples)
		}
		of := ""
		if r.Of > 0 {
			of = fmt.Sprintf(" of %d", r.Of)
		}
		fmt.Fprintf(stdout, "round %d%s (%s): %d configurations, %d points (%d already recorded, %d run)",
			r.Number, of, samples, len(r.Ran), r.Points, r.Skipped, r.Measured)
		if len(r.Dropped) > 0 {
			fmt.Fprintf(stdout, "; dropped %d", len(r.Dropped))
		}
		fmt.Fprintln(stdout)
	}
	printRunSummary(stdout, stderr, res.Summary, f.out, false)
	if runErr != nil {
		return interruptedOr(ctx, runErr)
	}
	// Records of 'tune --backend replay' are not measurements (replayed.go).
	if err := refuseReplayedFiles(stderr, []string{f.out}, f.allowReplayed); err != nil {
		return err
	}
	// The same export as --from DIR, restricted to this spec: a directory
	// may hold the results of others.
	return tuneExport(stdout, stderr, []string{f.out}, dispatch.Options{Probe: p, Spec: bn.spec.Name, MaxArms: f.maxArms, ByDims: f.byDims, Weights: f.weights}, f.out, f.invariant)
}

// tuneFacts compiles the plan's points before the search when something
// reads their compile facts: a budget of the search (which nothing else
// could enforce before timing) or a strategy that learns from them.
func tuneFacts(stderr io.Writer, f *tuneFlags, st search.Strategy, bn *bench, deps sweepDeps) (map[string]search.Facts, error) {
	budget := !f.budget.budget().IsZero()
	fu, ok := st.(search.FactsUser)
	if !budget && (!ok || !fu.UsesFacts()) {
		return nil, nil
	}
	var err error
	if deps.facts == nil {
		err = errors.New("this backend compiles nothing before timing")
	} else {
		var points []*plan.Point
		for _, p := range bn.plan.Points {
			if bn.opts.Filter == nil || bn.opts.Filter(p) {
				points = append(points, p)
			}
		}
		var facts map[string]search.Facts
		if facts, err = deps.facts(bn.env.Arch, points, stderr); err == nil {
			return facts, nil
		}
	}
	if budget {
		return nil, fmt.Errorf("tune: --max-registers, --no-spills and --max-shared need every point compiled first: %w", err)
	}
	fmt.Fprintf(stderr, "ktune: warning: no compile facts before timing (%v); the model learns from the axes alone\n", err)
	return nil, nil
}

// writeSearch records what a search ran in dir/search.json: the seed of a
// random draw, the rounds of halving and what each dropped.
func writeSearch(dir string, res *search.SearchResult) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the search log: %w", err)
	}
	path := filepath.Join(dir, "search.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("writing the search log: %w", err)
	}
	return nil
}

// tuneExport builds the dispatch table from results files and writes it
// into dir, printing it on stdout; with invariant, the invariant table
// and the price of invariance (invariance.go).
func tuneExport(stdout, stderr io.Writer, files []string, opt dispatch.Options, dir string, invariant bool) error {
	if invariant {
		return tuneInvariant(stdout, stderr, files, opt, dir)
	}
	tab, err := tuneTable(stderr, files, opt)
	if err != nil {
		return err
	}
	if err := tuneWrite(dir, tab, createTemp); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	return tab.WriteText(stdout)
}

// tuneTable builds the dispatch table of results files, warning on stderr.
func tuneTable(stderr io.Writer, files []string, opt dispatch.Options) (*dispatch.Table, error) {
	recs, sources, err := tuneRecords(stderr, files, &opt)
	if err != nil {
		return nil, err
	}
	tab, err := dispatch.Build(recs, sources, opt)
	if err != nil {
		return nil, fmt.Errorf("tune: %w", err)
	}
	for _, w := range tab.Warnings {
		fmt.Fprintf(stderr, "ktune: warning: %s\n", w)
	}
	return tab, nil
}

// tuneRecords reads results files into the records a table is built
// from, refusing damaged input; opt receives the superseded records.
func tuneRecords(stderr io.Writer, files []string, opt *dispatch.Options) ([]results.Record, []dispatch.Source, error) {
	in, err := dispatch.Load(files...)
	if err != nil {
		return nil, nil, fmt.Errorf("tune: %w", err)
	}
	// A table is shipped into an engine: built over an unreadable line or
	// a record that is not evidence, it might name what that line would
	// have ruled out, so it is not written at all.
	set := evidence.Check(in.Records, nil, evidence.Options{})
	set.Damaged = in.Warnings
	if set.Incomplete() {
		warnEvidence(stderr, set)
		return nil, nil, fmt.Errorf("tune: %s in %v: a dispatch table over them would be incomplete; remove or re-measure them", set.Summary(), files)
	}
	opt.Failed = in.Superseded
	return set.Records, in.Sources, nil
}

// tuneWrite writes both exports into dir, both or neither (writeFiles).
func tuneWrite(dir string, tab *dispatch.Table, create func(dir, pattern string) (tempFile, error)) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	var files []outFile
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"dispatch.yaml", tab.WriteYAML}, {"dispatch.h", tab.WriteHeader}} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return err
		}
		files = append(files, outFile{f.name, b.Bytes()})
	}
	return writeFiles(dir, files, create)
}
