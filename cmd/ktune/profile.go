package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

func init() {
	register(&command{
		name:    "profile",
		summary: "cross-check points against Nsight Compute: ktune's cold median next to ncu's kernel durations",
		run: func(stdout, stderr io.Writer, args []string) error {
			ctx, stop := interruptible(stderr)
			defer stop()
			return runProfile(ctx, stdout, stderr, args, profileDeps{run: execTo, self: os.Executable, ncu: findNCU})
		},
	})
}

const profileUsage = `Usage: ktune profile SPEC --only FILTER -o DIR [flags]

Profile measures each point --only selects twice, and puts the two
numbers side by side: ktune's cold median (a sweep of the point into
DIR/sweep, gated, in a worker process as usual), and the kernel
durations Nsight Compute reports for the same launches, with the clocks
left alone and every cache flushed before each kernel:

  ncu --clock-control none --cache-control all \
      --metrics gpu__time_duration.sum --csv --print-kernel-base function \
      --kernel-name regex:'^(ENTRY|…)$' --launch-count N \
      ktune sweep SPEC --only POINT --in-process --no-gates --probes cold --force

ncu must see the kernels, so that second sweep runs them in its own
process (--in-process): a worker process would run them out of ncu's
sight. Its records land in DIR/ncu-sweep and mean nothing (ncu
serialises every launch, so ktune's stream blocker cannot work); ncu's
CSV goes to DIR/ncu-<n>-<variant>.csv.

For each point, ncu's time of one step is the sum over its launches of
each kernel's median duration. DIR/profile.jsonl gets one line per point
(the record's hash, ktune's cold median, ncu's step time, their ratio
and each kernel's median), which 'ktune report' and scripts can read;
the table is printed too. A ratio near 1 says the two instruments agree;
ncu's cache flush is a full one, ktune's reads twice the L2, so a cold
ratio a few percent above 1 is expected.

ncu is looked for on PATH, then in /usr/local/cuda/bin; --ncu names it.

Examples:

  $ ktune profile experiments/slice.yaml --only variant=d2,SPLITS=32,nkv=32768 -o out/profile
  $ ktune profile experiments/engine.yaml --only 'variant=engine|d2,nkv=32768' -o out/profile

Exit status: 0 every selected point was profiled, 1 ncu or the sweep
under it failed or its output could not be read, 2 a bad command line
or spec (file:line:col: message), 130 when interrupted.

Flags:
`

type profileDeps struct {
	// run runs a program with its output going to stderr.
	run func(ctx context.Context, stderr io.Writer, name string, args ...string) error
	// self is the path of this ktune binary.
	self func() (string, error)
	// ncu finds Nsight Compute's command-line profiler.
	ncu func() (string, error)
}

func execTo(ctx context.Context, stderr io.Writer, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("running %s: %w", filepath.Base(name), err)
	}
	return nil
}

// findNCU looks for ncu on PATH, then where the CUDA toolkit installs it.
func findNCU() (string, error) {
	if p, err := exec.LookPath("ncu"); err == nil {
		return p, nil
	}
	const def = "/usr/local/cuda/bin/ncu"
	if _, err := os.Stat(def); err == nil {
		return def, nil
	}
	return "", errors.New("ncu (Nsight Compute) is neither on PATH nor at /usr/local/cuda/bin/ncu; install it or pass --ncu PATH")
}

// A profileRow is one line of DIR/profile.jsonl.
type profileRow struct {
	Spec    string          `json:"spec"`
	Variant string          `json:"variant"`
	Shape   string          `json:"shape"`
	Defines results.Defines `json:"defines"`
	NKV     int             `json:"nkv"`
	Hash    string          `json:"hash"` // the record of DIR/sweep the ktune number comes from
	// KtuneColdUS is ktune's cold median of the step (all its launches).
	KtuneColdUS float64 `json:"ktune_cold_us"`
	// NCUUS is ncu's step time: Σ over kernels of median × launches per step.
	NCUUS float64 `json:"ncu_us"`
	// Ratio is KtuneColdUS / NCUUS.
	Ratio   float64      `json:"ratio"`
	Kernels []kernelTime `json:"kernels"`
	CSV     string       `json:"csv"` // ncu's output, relative to DIR
}

func runProfile(ctx context.Context, stdout, stderr io.Writer, args []string, deps profileDeps) error {
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var out, only, ncuPath string
	var steps int
	fs.StringVar(&out, "o", "", "write into `DIR` (DIR/sweep, DIR/ncu-*.csv, DIR/profile.jsonl)")
	fs.StringVar(&only, "only", "", "profile the points matching `EXPR`, e.g. variant=d2,SPLITS=32,nkv=32768")
	fs.StringVar(&ncuPath, "ncu", "", "the ncu `PATH` (default: PATH, then /usr/local/cuda/bin/ncu)")
	fs.IntVar(&steps, "steps", 10, "profile this many `N` steps of each point (ncu --launch-count N × launches per step)")
	pos, help, err := parseArgs(fs, args, profileUsage)
	if help || err != nil {
		return err
	}
	switch {
	case len(pos) != 1:
		return usageErrorf("profile wants one SPEC file, got %d arguments (ktune help profile)", len(pos))
	case out == "":
		return usageErrorf("profile wants -o DIR (ktune help profile)")
	case only == "":
		return usageErrorf("profile wants --only FILTER: each point it selects runs under ncu (ktune help profile)")
	case steps < 1:
		return usageErrorf("--steps: want ≥ 1, got %d", steps)
	}
	filter, err := results.ParseFilter(only)
	if err != nil {
		return usageErrorf("--only: %v", err)
	}
	s, err := spec.Load(pos[0], variants.Builtins())
	if err != nil {
		return withCode(exitUsage, err)
	}
	// The architecture only enters the hashes, which profile takes from
	// the records instead: any label plans the same points.
	pl, err := plan.Build(s, "sm_profile")
	if err != nil {
		return withCode(exitUsage, err)
	}
	if err := filter.Check(pl.Configs()); err != nil {
		return usageErrorf("--only: %v", err)
	}
	self, err := deps.self()
	if err != nil {
		return fmt.Errorf("finding the ktune binary: %w", err)
	}
	if ncuPath == "" {
		if ncuPath, err = deps.ncu(); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("creating %s: %w", out, err)
	}

	sweepDir := filepath.Join(out, "sweep")
	fmt.Fprintf(stderr, "ktune profile: measuring with ktune into %s\n", sweepDir)
	if err := deps.run(ctx, stderr, self, "sweep", pos[0], "-o", sweepDir, "--only", only, "--probes", "cold"); err != nil {
		return interruptedOr(ctx, fmt.Errorf("measuring the points with ktune: %w", err))
	}
	recs, _, err := results.ReadFile(results.FilePath(sweepDir))
	if err != nil {
		return fmt.Errorf("reading ktune's records: %w", err)
	}
	recs, _ = results.Latest(recs)

	var rows []profileRow
	n := 0
	for _, p := range pl.Points {
		if !filter.Match(&p.Config) {
			continue
		}
		n++
		rec := recordOf(recs, p)
		if rec == nil || rec.Probe(results.ProbeCold) == nil || rec.Probe(results.ProbeCold).Summary.Median <= 0 {
			fmt.Fprintf(stderr, "ktune profile: %s: no cold median in %s (status %s); skipped\n", pointLabel(p), sweepDir, statusOf(rec))
			continue
		}
		var names []string
		for _, l := range p.Launches {
			names = append(names, functionName(l.Entry))
		}
		csvName := fmt.Sprintf("ncu-%d-%s.csv", n, safeName(p.Config.Variant))
		csvPath := filepath.Join(out, csvName)
		ncuArgs := []string{"--clock-control", "none", "--cache-control", "all",
			"--metrics", "gpu__time_duration.sum", "--csv", "--print-kernel-base", "function",
			"--kernel-name", "regex:^(" + strings.Join(uniqueQuoted(names), "|") + ")$",
			"--launch-count", fmt.Sprint(steps * len(names)), "--log-file", csvPath,
			self, "sweep", pos[0], "-o", filepath.Join(out, "ncu-sweep"), "--only", pointFilter(p),
			"--in-process", "--force", "--no-gates", "--probes", "cold"}
		fmt.Fprintf(stderr, "ktune profile: %s under ncu into %s\n", pointLabel(p), csvPath)
		if err := deps.run(ctx, stderr, ncuPath, ncuArgs...); err != nil {
			return interruptedOr(ctx, fmt.Errorf("profiling %s: %w", pointLabel(p), err))
		}
		f, err := os.Open(csvPath)
		if err != nil {
			return fmt.Errorf("reading ncu's output for %s: %w", pointLabel(p), err)
		}
		ks, err := parseNCU(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", csvPath, err)
		}
		row, err := profileOf(s.Name, p, rec, names, ks)
		if err != nil {
			return fmt.Errorf("%s: %w", pointLabel(p), err)
		}
		row.CSV = csvName
		rows = append(rows, row)
	}
	if err := writeProfile(filepath.Join(out, "profile.jsonl"), rows); err != nil {
		return err
	}
	printProfile(stdout, rows)
	return nil
}

// profileOf puts ktune's cold median of a point next to ncu's step time.
func profileOf(specName string, p *plan.Point, rec *results.Record, names []string, ks []ncuKernel) (profileRow, error) {
	ncuNS, kernels, err := stepTime(names, ks)
	if err != nil {
		return profileRow{}, err
	}
	cold := rec.Probe(results.ProbeCold).Summary.Median
	return profileRow{
		Spec: specName, Variant: p.Config.Variant, Shape: p.Config.Shape.Name, Defines: p.Config.Defines.Own(),
		NKV: p.Config.NKV, Hash: rec.Hash, KtuneColdUS: cold / 1e3, NCUUS: ncuNS / 1e3, Ratio: cold / ncuNS, Kernels: kernels,
	}, nil
}

// recordOf finds the record of a point by its configuration (the hashes
// of the records carry the device's architecture, the plan's here not).
func recordOf(recs []results.Record, p *plan.Point) *results.Record {
	c := &p.Config
	for i := len(recs) - 1; i >= 0; i-- {
		r := &recs[i].Config
		if r.Variant == c.Variant && r.Shape.Name == c.Shape.Name && r.NKV == c.NKV && r.Defines.String() == c.Defines.String() {
			return &recs[i]
		}
	}
	return nil
}

func statusOf(r *results.Record) string {
	if r == nil {
		return "not recorded"
	}
	return string(r.Status)
}

// pointFilter is a --only expression that selects exactly p.
func pointFilter(p *plan.Point) string {
	terms := []string{"variant=" + p.Config.Variant, "shape=" + p.Config.Shape.Name, fmt.Sprint("nkv=", p.Config.NKV)}
	for _, d := range p.Config.Defines.Own() {
		terms = append(terms, d.Name+"="+d.Value)
	}
	return strings.Join(terms, ",")
}

func pointLabel(p *plan.Point) string {
	return fmt.Sprintf("%s %s %s nkv %d", p.Config.Variant, p.Config.Shape.Name, p.Config.Defines.Own().String(), p.Config.NKV)
}

var unsafeRE = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func safeName(s string) string { return unsafeRE.ReplaceAllString(s, "_") }

// uniqueQuoted lists names once each, regex-quoted.
func uniqueQuoted(names []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, n := range names {
		if !seen[n] {
			seen[n] = true
			out = append(out, regexp.QuoteMeta(n))
		}
	}
	return out
}

func writeProfile(path string, rows []profileRow) error {
	var b strings.Builder
	for _, r := range rows {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encoding %s: %w", path, err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

func printProfile(w io.Writer, rows []profileRow) {
	fmt.Fprintf(w, "%-14s %-10s %-24s %8s %12s %10s %7s\n", "variant", "shape", "defines", "nkv", "ktune cold", "ncu", "ratio")
	for _, r := range rows {
		fmt.Fprintf(w, "%-14s %-10s %-24s %8d %9.1f us %7.1f us %7.3f\n", r.Variant, r.Shape, r.Defines.String(), r.NKV, r.KtuneColdUS, r.NCUUS, r.Ratio)
		for _, k := range r.Kernels {
			fmt.Fprintf(w, "    %-40s ×%d  median %.1f us over %d launches\n", k.Name, k.PerStep, k.MedianUS, k.N)
		}
	}
}
