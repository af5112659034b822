package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/report"
)

func init() {
	register(&command{
		name:    "report",
		summary: "render results files as tables, plots and a Markdown report",
		run:     runReport,
	})
}

const reportUsage = `Usage: ktune report RESULTS... -o DIR [--layers N --step-ms X]

Report reads one or more results files (or sweep directories holding a
results.jsonl) and writes into DIR:

  DIR/report.md    environment, the result table, the plots, gate failures
                   with their evidence and, with --layers and --step-ms, a
                   wall-clock projection
  DIR/tables.csv   every row and probe with full precision (long form)
  DIR/*.png, *.svg the plots: time vs SPLITS at each nkv, time vs nkv
                   (log-log, with the landed kernel and the memory floor),
                   cold vs hot vs graph, speedup vs landed (heatmap)

and prints the result table. Malformed lines are reported as warnings
(file:line: msg) and skipped. No GPU is needed.

The projection is labelled as one: Δstep = layers × Δkernel and projected
tokens/s = 1000 / (step_ms + Δstep_ms), with Δkernel the difference to the
landed kernel's median (graph probe when measured).

Examples:
  $ ktune report out/slice -o out/report
  $ ktune report experiments/results/h200/*.jsonl -o out/report --layers 28 --step-ms 11.5

Flags:
`

func runReport(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output `DIR` (created if needed)")
	layers := fs.Int("layers", 0, "attention launches per decode step, for the projection")
	stepMS := fs.Float64("step-ms", 0, "measured decode step with the landed kernel (`ms`), for the projection")
	var allowReplayed bool
	registerAllowReplayed(fs, &allowReplayed)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), reportUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return withCode(exitUsage, errSilent)
	}
	if len(pos) == 0 {
		return usageErrorf("report wants at least one RESULTS file (ktune help report)")
	}
	if *out == "" {
		return usageErrorf("report wants -o DIR (ktune help report)")
	}
	if (*layers > 0) != (*stepMS > 0) || *layers < 0 || *stepMS < 0 {
		return usageErrorf("--layers and --step-ms go together, both positive")
	}
	recs, err := loadResults(stderr, pos)
	if err != nil {
		return err
	}
	// Records of 'sweep --backend replay' are not measurements (replayed.go).
	if err := refuseReplayed(stderr, recs, allowReplayed); err != nil {
		return err
	}
	rep, err := report.Build(recs, report.Options{Layers: *layers, StepMS: *stepMS})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return fmt.Errorf("creating report directory: %w", err)
	}
	if _, err := rep.Write(*out); err != nil {
		return err
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "\nwrote %s/report.md, %s/tables.csv and the plots\n", *out, *out)
	return err
}

// loadResults reads results files or sweep directories, printing the
// lines it had to skip as warnings. No records at all is an error.
func loadResults(stderr io.Writer, paths []string) ([]results.Record, error) {
	set, err := results.Load(paths...)
	if set != nil {
		for _, w := range set.Warnings {
			fmt.Fprintf(stderr, "warning: %v\n", w)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(set.Records) == 0 {
		return nil, fmt.Errorf("reading results: no records in %v", paths)
	}
	return set.Records, nil
}
