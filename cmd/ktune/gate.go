package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/internal/measure"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/workload"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/verdict"
)

func init() {
	register(&command{
		name:    "gate",
		summary: "decide whether a candidate kernel may land (exit 0 pass, 3 numerics, 4 regression, 5 undecided)",
		run:     runGate,
	})
}

var gateUsage = `Usage:
  ktune gate --candidate NAME [--against VARIANT] [--threshold 0.02] [--json] RESULTS...
  ktune gate SPEC --candidate NAME --results DIR|FILE [--threshold 0.02] [--json]

Gate decides whether the candidate variant may replace the baseline, from
recorded results. The baseline is the landed configuration (the records
marked landed), or VARIANT with --against; in the second form it is the
landed variant and defines of SPEC, and the results are DIR/results.jsonl
(or the results FILE given).
Gate never runs a sweep: measure first with 'ktune sweep SPEC -o DIR'.

The candidate passes when
  1. every configuration of it passes its numerics class at every gated
     nkv: byte-identical to its twin where it declares one (bitwise gate),
     within tolerance of the float64 oracle otherwise, replay-safe and
     fully written where those gates ran; a fault is a numerics failure;
  2. at no point (device, shape, nkv) is it significantly slower than the
     baseline by more than the threshold, for any probe measured on both
     sides: Mann-Whitney U (golang.org/x/perf/benchmath) at α=` + decision.AlphaText() + `;
  3. the samples can tell: at every point the test can reach α with the
     samples it has, and the 95% confidence interval of the change
     (Hodges-Lehmann, of candidate/baseline) stays within the threshold;
  4. the input is evidence (internal/evidence): every line was read as a
     record, strictly (a key twice or in another case, or null where the
     writer omits a field, is damage); every record is consistent (its
     status agrees with its gates, its probes hold samples, all finite,
     positive and no faster than the device can run the point (its
     physical floor: the launch floor, and the K and V it must read at
     the read bandwidth its run measured), at least the spec's
     min_samples in the SPEC form); no
     record of a candidate configuration anywhere in the input, superseded
     or in another file, failed a gate or faulted (else numerics);
  5. both sides were measured on every probe either measured (or every
     probe of --probes), each candidate configuration at every length the
     baseline was measured at, and in the SPEC form every planned point has
     a record (else incomplete);
  6. the sides ran on the same GPU, driver, NVRTC and clocks, or the
     difference is printed as a warning; --same-device makes it undecided.
Summaries are recomputed from the samples, never read.
A point where 3 does not hold is undecided, not a pass: "within noise"
with 3 samples a side says nothing (even a 2x slowdown gives p=0.1). The
verdict then says how many samples per side would decide. A line that
could not be read (a damaged or newer-schema file) may be the record
that fails the candidate, so it makes the gate undecided too, unless
--allow-damaged; skipped lines are counted in the text and the --json
document either way.
At each point the candidate's fastest configuration that passed numerics
is compared with the baseline's fastest (by the median of the first gated
probe): SPLITS is chosen per context length by the dispatch. To gate one
configuration of a swept candidate, pin it with --define SPLITS=64.

Exit codes:
  0  pass
  1  error: unreadable files, no candidate or baseline records, points or
     probes missing on one side or from the plan, points that ended in
     compile/OOM/timeout errors or whose sanitizer runs decided nothing
     (a configuration whose points all ended so has no gates to fail)
  2  usage: bad command line, or a SPEC mistake (file:line:col)
  3  numerics: the candidate fails its numerics class somewhere
  4  regression: significantly slower than the baseline beyond the threshold
     (with --workload: the weighted change, or regressed buckets carrying
     more than --max-regressed-weight of the steps)
  5  undecided: nothing failed, but too few samples, damaged input,
     records that are not evidence, or (--same-device) two machines, to
     say pass; measure more samples and gate again
A numerics failure outranks a regression, which outranks missing points,
which outrank undecided.

--json prints one JSON object (verdict, exit_code, numerics, per-point
rows with reasons, skipped_records, undecided and samples_per_side) and
nothing else on standard output, for CI steps.

# Workload

With --workload FILE the performance check weighs the points by how
often the engine runs them: FILE holds (batch, nkv, weight) buckets, in
ktune's YAML or imported from a histogram CSV, a FlashInfer-Bench trace
(.jsonl) or vLLM batch specs (.txt): 'go doc ./internal/workload' has the
forms. At each shape and probe, each bucket takes the compared points'
medians at its batch and nkv, interpolated linearly between measured nkv
(the table says so) and never beyond them (such a bucket is not
evaluated and the gate is undecided). The gate then fails when the
weighted change is significantly slower than the threshold, or when the
buckets that regress (slower by more than the threshold, their 95%
interval above 1) carry more than --max-regressed-weight of the steps
even though the total improves; it is undecided when the interval of the
weighted change allows a slowdown beyond the threshold. Intervals come
from a bootstrap of the points' samples (fixed seed). Numerics, missing
points and damaged input decide as without a workload.

Examples:
  $ ktune gate --candidate d2 out/slice
  $ ktune gate --candidate d2 --define SPLITS=64 --against r4 --threshold 0.01 out/slice/results.jsonl
  $ ktune gate experiments/slice.yaml --candidate d2 --results out/slice --json
  $ ktune gate experiments/slice.yaml --candidate r4 --results experiments/results/h200/slice.jsonl --workload experiments/workloads/long-context.csv

Flags:
`

// gateFilter collects --only FILTER and repeated --define NAME=VALUE
// flags (a shorthand for one term) into one filter.
type gateFilter struct{ f **results.Filter }

func (g gateFilter) String() string {
	if g.f == nil {
		return ""
	}
	return (*g.f).String()
}

func (g gateFilter) Set(s string) error {
	f, err := results.ParseFilter(s)
	if err != nil {
		return err
	}
	*g.f = (*g.f).And(f)
	return nil
}

// gateJSON is the --json document: the result with its exit code.
type gateJSON struct {
	*verdict.GateResult
	ExitCode int `json:"exit_code"`
}

// gateErrorJSON is the --json document of a gate that reached no verdict:
// the error with its exit code, so that a script reading stdout always
// finds a document.
type gateErrorJSON struct {
	Error    string `json:"error"`
	ExitCode int    `json:"exit_code"`
}

func runGate(stdout, stderr io.Writer, args []string) (err error) {
	fs := flag.NewFlagSet("gate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts verdict.GateOptions
	fs.StringVar(&opts.Candidate, "candidate", "", "candidate variant `NAME` (required)")
	fs.StringVar(&opts.Against, "against", "", "baseline `VARIANT` instead of the landed records")
	fs.Float64Var(&opts.Threshold, "threshold", 0.02, "tolerated significant slowdown (a `FRACTION`: 0.02 = 2%)")
	fs.Var(gateFilter{&opts.Only}, "only", "gate only the candidate configurations `FILTER` selects (the syntax of sweep --only: KEY=VALUE[|VALUE],...)")
	fs.Var(gateFilter{&opts.Only}, "define", "gate only the candidate configuration with `NAME=VALUE` (repeatable; a shorthand for --only)")
	probes := fs.String("probes", "", "gate only these `PROBES` (cold,hot,graph); default: every probe measured on both sides")
	resultsDir := fs.String("results", "", "results `DIR` of the sweep of SPEC (second form)")
	asJSON := fs.Bool("json", false, "print a machine-readable verdict only")
	workloadFile := fs.String("workload", "", "decide on the change weighted by the workload `FILE` (ktune help gate: Workload)")
	fs.Float64Var(&opts.MaxRegressedWeight, "max-regressed-weight", verdict.DefaultMaxRegressedWeight,
		"with --workload: fail when buckets that regress carry more than this `FRACTION` of the steps")
	fs.BoolVar(&opts.AllowDamaged, "allow-damaged", false, "let the gate pass although input lines could not be read or records are not evidence (they are still counted)")
	fs.BoolVar(&opts.SameDevice, "same-device", false, "a point whose two sides ran on different GPUs, drivers or clocks is undecided, not a warning")
	var allowReplayed bool
	registerAllowReplayed(fs, &allowReplayed)
	pos, help, err := parseArgs(fs, args, gateUsage)
	if help || err != nil {
		return err
	}
	wrote := false // the verdict's document
	if *asJSON {
		defer func() {
			if err != nil && !wrote {
				enc := json.NewEncoder(stdout)
				enc.SetIndent("", "  ")
				if jerr := enc.Encode(gateErrorJSON{err.Error(), exitCode(err)}); jerr != nil {
					err = fmt.Errorf("%w (and writing it as JSON: %v)", err, jerr)
				}
			}
		}()
	}
	if opts.Candidate == "" {
		return usageErrorf("gate wants --candidate NAME (ktune help gate)")
	}
	// NaN compares false with everything, so "slower by more than NaN"
	// never holds: a NaN or infinite threshold would pass any regression.
	if math.IsNaN(opts.Threshold) || math.IsInf(opts.Threshold, 0) || opts.Threshold < 0 || opts.Threshold >= 1 {
		return usageErrorf("--threshold %g: want a fraction in [0, 1), e.g. 0.02", opts.Threshold)
	}
	if math.IsNaN(opts.MaxRegressedWeight) || opts.MaxRegressedWeight < 0 || opts.MaxRegressedWeight > 1 {
		return usageErrorf("--max-regressed-weight %g: want a fraction in [0, 1], e.g. 0.05", opts.MaxRegressedWeight)
	}
	if *workloadFile != "" {
		w, err := workload.Load(*workloadFile)
		if err != nil {
			return usageErrorf("%v", err)
		}
		opts.Workload = w
	}
	if *probes != "" {
		var err error
		if opts.Probes, err = measure.ParseProbes(*probes); err != nil {
			return usageErrorf("--probes: %v", err)
		}
	}
	files := pos
	var ev evidence.Options
	var planned *plan.Plan
	if *resultsDir != "" {
		if len(pos) != 1 {
			return usageErrorf("gate with --results wants exactly one SPEC, got %d arguments", len(pos))
		}
		if opts.Against != "" {
			return usageErrorf("gate SPEC takes its baseline from the spec's landed entry; drop --against")
		}
		s, err := loadSpec(pos[0])
		if err != nil {
			return err
		}
		opts.Against, opts.AgainstOnly = s.Landed.Variant, results.DefinesFilter(s.Landed.Defines)
		ev.MinSamples = s.Measure.MinSamples
		// The plan says which points the gate must see: a record deleted
		// from the results is then missing, not unasked for.
		if planned, err = plan.Build(s, ""); err != nil {
			return planError(pos[0], err)
		}
		// results.Load takes a sweep directory or a results file.
		files = []string{*resultsDir}
	}
	if len(files) == 0 {
		return usageErrorf("gate wants RESULTS files, or SPEC with --results DIR (ktune help gate)")
	}
	set, err := loadEvidence(stderr, files, ev)
	if err != nil {
		return err
	}
	opts.Skipped, opts.Excluded, opts.Failures = set.Damaged, set.Excluded, set.Failures
	if planned != nil {
		for _, pt := range planned.Points {
			c := pt.Config
			if (c.Variant == opts.Candidate && opts.Only.Match(&c)) || (c.Variant == opts.Against && opts.AgainstOnly.Match(&c)) {
				opts.Expected = append(opts.Expected, c)
			}
		}
	}
	// Records of 'sweep --backend replay' are not measurements (replayed.go).
	if err := refuseReplayed(stderr, set.Records, allowReplayed); err != nil {
		return err
	}
	warnGateInput(stderr, set, opts.Candidate, opts.Against)
	if opts.Only != nil {
		// As sweep's and report's --only: a key no candidate record has,
		// or a filter that selects none of them, is the command line's
		// mistake.
		var configs []*results.Config
		for i := range set.Records {
			if set.Records[i].Config.Variant == opts.Candidate {
				configs = append(configs, &set.Records[i].Config)
			}
		}
		if len(configs) > 0 {
			if err := opts.Only.Check(configs); err != nil {
				return usageErrorf("--only: %v", err)
			}
		}
	}
	res, err := verdict.Gate(set.Records, opts)
	if err != nil {
		return err
	}
	code := gateExitCode(res.Verdict)
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		wrote = true
		if err := enc.Encode(gateJSON{res, code}); err != nil {
			return fmt.Errorf("writing gate verdict: %w", err)
		}
	} else if err := res.WriteText(stdout); err != nil {
		return err
	}
	if code == exitOK {
		return nil
	}
	why := ""
	if res.Workload != nil && len(res.Workload.Groups) == 0 {
		why = ": no compared point to evaluate the workload at"
	}
	if res.Workload != nil {
		for _, g := range res.Workload.Groups {
			if g.Regression || g.Undecided {
				why = fmt.Sprintf(": %s, probe %s: %s", g.Shape, g.Probe, g.Reason)
				break
			}
		}
	}
	return withCode(code, fmt.Errorf("gate: candidate %s: %s%s", res.Candidate, res.Verdict, why))
}

// warnGateInput says what of the input a verdict would otherwise pass
// over in silence: a point recorded in two files (two measurements of one
// hash, of which the verdict reads one), and candidate and baseline
// records that ran different gate suites (their numerics rest on
// different gates).
func warnGateInput(stderr io.Writer, set *evidence.Set, candidate, against string) {
	first := map[string]string{}
	twice := 0
	for i, r := range set.Records {
		src := set.Sources[i]
		if prev, ok := first[r.Hash]; ok && prev != src {
			if twice++; twice <= 5 {
				fmt.Fprintf(stderr, "warning: point %s (%s nkv=%d) is recorded in %s and again in %s: two measurements of one point; give one of the files\n",
					r.Hash, r.Config.Variant, r.Config.NKV, prev, src)
			}
			continue
		}
		first[r.Hash] = src
	}
	if twice > 5 {
		fmt.Fprintf(stderr, "warning: %d points in all are recorded in two files\n", twice)
	}
	suites := map[bool]map[string]bool{true: {}, false: {}}
	for _, r := range set.Records {
		isCand := r.Config.Variant == candidate
		if (isCand || r.Config.Variant == against || against == "" && r.Landed) && r.GateSuite != "" {
			suites[isCand][results.GateSuiteKey(r.GateSuite)] = true
		}
	}
	if len(suites[true]) > 0 && len(suites[false]) > 0 && !maps.Equal(suites[true], suites[false]) {
		fmt.Fprintf(stderr, "warning: the candidate's records ran gate suite(s) %s and the baseline's %s: their numerics rest on different gates\n",
			strings.Join(slices.Sorted(maps.Keys(suites[true])), ", "), strings.Join(slices.Sorted(maps.Keys(suites[false])), ", "))
	}
}

func gateExitCode(v verdict.Verdict) int {
	switch v {
	case verdict.VerdictPass:
		return exitOK
	case verdict.VerdictNumerics:
		return exitNumerics
	case verdict.VerdictRegression:
		return exitRegression
	case verdict.VerdictUndecided:
		return exitUndecided
	}
	return exitError
}
