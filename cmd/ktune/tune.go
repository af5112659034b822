package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/ktune/ktune/internal/dispatch"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
)

func init() {
	register(&command{
		name:    "tune",
		summary: "export a dispatch table (YAML and C header) from results",
		run:     runTune,
	})
}

const tuneUsage = `Usage:
  ktune tune --from RESULTS... -o DIR [--probe cold|graph]
  ktune tune SPEC -o DIR [--probe cold|graph]

Tune reads measured results and writes DIR/dispatch.yaml and DIR/dispatch.h:
for each shape and batch, nkv ranges with the fastest configuration that
passed all its gates. A faster median wins only when the difference is
significant (Mann-Whitney U, alpha 0.05); ties keep the landed
configuration, then the one winning at neighbouring nkv, then the smaller
SPLITS. It prints the table with the evidence for each measured nkv.

Tune does not measure anything: searching the space is 'ktune sweep' (a
grid over the spec's axes). With a SPEC, tune exports the records of that
spec from DIR/results.jsonl, the file 'ktune sweep SPEC -o DIR' wrote.
RESULTS are results files or sweep directories; when two hold the same
configuration, the later wins.

The outputs name their results files with a sha256, never a date:
regenerating from the same files gives the same bytes.

Examples:
  $ ktune sweep experiments/slice.yaml -o out/slice
  $ ktune tune experiments/slice.yaml -o out/slice
  $ ktune tune --from experiments/results/h200/slice.jsonl -o out/dispatch
  $ ktune tune --from out/run1 --from out/run2 --probe graph -o out/dispatch

Flags:
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

func runTune(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("tune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var from tuneFiles
	fs.Var(&from, "from", "results file or sweep directory (repeatable; more may follow as arguments)")
	out := fs.String("o", "", "output directory for dispatch.yaml and dispatch.h (required)")
	probe := fs.String("probe", string(results.ProbeCold), "probe whose medians decide: cold or graph")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), tuneUsage)
		fs.PrintDefaults()
	}
	// Flags may come after the positional arguments (ktune tune SPEC -o
	// DIR), which the flag package alone does not allow.
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil
			}
			return withCode(exitUsage, err)
		}
		if fs.NArg() == 0 {
			break
		}
		from.paths = append(from.paths, fs.Arg(0))
		args = fs.Args()[1:]
	}

	p := results.Probe(*probe)
	// hot is not offered: back-to-back launches over warm caches are not
	// what a decode step sees, so they must not pick the engine's kernel.
	if p != results.ProbeCold && p != results.ProbeGraph {
		return usageErrorf("tune: --probe %q: want cold or graph", *probe)
	}
	if *out == "" {
		return usageErrorf("tune: -o DIR is required (run 'ktune help tune')")
	}
	files := from.paths
	opt := dispatch.Options{Probe: p}
	if !from.from {
		if len(files) != 1 {
			return usageErrorf("tune: want one SPEC or --from RESULTS... (run 'ktune help tune')")
		}
		s, err := spec.Load(files[0])
		if err != nil {
			return withCode(exitUsage, err)
		}
		opt.Spec = s.Name
		res := results.FilePath(*out)
		if _, err := os.Stat(res); err != nil {
			return usageErrorf("tune: %s: no results to export; measure first with 'ktune sweep %s -o %s'", res, files[0], *out)
		}
		files = []string{res}
	}

	in, err := dispatch.Load(files...)
	if err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	for _, w := range in.Warnings {
		fmt.Fprintf(stderr, "ktune: warning: %v\n", w)
	}
	tab, err := dispatch.Build(in.Records, in.Sources, opt)
	if err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	for _, w := range tab.Warnings {
		fmt.Fprintf(stderr, "ktune: warning: %s\n", w)
	}
	if err := tuneWrite(*out, tab); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	return tab.WriteText(stdout)
}

// tuneWrite writes both exports into dir.
func tuneWrite(dir string, tab *dispatch.Table) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{{"dispatch.yaml", tab.WriteYAML}, {"dispatch.h", tab.WriteHeader}} {
		var b strings.Builder
		if err := f.write(&b); err != nil {
			return err
		}
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
	}
	return nil
}
