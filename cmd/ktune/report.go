package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/workload"
	"github.com/ktune/ktune/report"
)

func init() {
	register(&command{
		name:    "report",
		summary: "render results files as tables, plots and a Markdown report",
		run: func(stdout, stderr io.Writer, args []string) error {
			// SIGINT cancels the rendering instead of killing the process:
			// the report is rendered beside DIR and only a complete one is
			// moved into place.
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return runReport(ctx, stdout, stderr, args)
		},
	})
}

const reportUsage = `Usage: ktune report RESULTS... -o DIR [--json] [--plots=false] [--layers N --step-ms X]
       ktune report RESULTS... --json

Report reads one or more results files (or sweep directories holding a
results.jsonl) and writes into DIR:

  DIR/report.md    the recommendation (below), what to ship, the environments, per shape its
                   configurations, a table per probe and its plots, the
                   gate failures with their evidence, the gates the spec
                   waived or left out (graph: never: no replay gate),
                   with --layers and --step-ms a wall-clock projection,
                   and the warnings
  DIR/tables.csv   every row and probe with full precision (long form)
  DIR/*.png, *.svg the plots per shape: time vs nkv (log-log, with the
                   landed kernel, the references and K+V at the run's
                   streaming-read rate),
                   cold vs hot vs graph, speedup vs landed (heatmap), and
                   time vs SPLITS at each nkv where SPLITS was swept
  DIR/report.json  with --json: the report as JSON (schema: go doc
                   ./report Document); without -o it goes to stdout
  DIR/invariance.md  when the results hold both configurations whose
                   output bits do not depend on the batch (a built-in
                   form's claim or a passing invariance gate) and others:
                   the price of invariance per shape and nkv (ktune help
                   tune, --invariant)

and prints what to ship, then one cold-probe table per shape. What to
ship is, per shape and range of nkv, the fastest configuration (cold
median) that passed every gate, excluding references (kernels ktune did
not build, such as PyTorch's SDPA) and fault-isolation fixtures, with its
speedup over the landed kernel and each reference and their 95%
confidence intervals, and the 'ktune tune --from' command that turns it
into a dispatch table.

report.md opens with a recommendation per shape with a landed kernel:
the dispatch of at most --max-arms nkv ranges (3) that 'ktune tune --from
FILES --by-dims --max-arms N' emits from the files holding what to ship
(the command is printed; 'ktune help tune' gives the rule), the cost of
each nkv's arm against that nkv's winner, its speedup over landed and the
references with 95% intervals, and every arm not measured at a measured
nkv with the 'ktune sweep --only' command that measures it. Points
measured more than once are listed with the record kept (the newest).

With --workload FILE (the forms: 'ktune help gate', Workload) report.md
adds, per shape with a landed kernel and steps at its batch, the expected
attention time per decode step of the recommended dispatch, the landed
kernel, the references and the best variants, with 95% bootstrap
intervals and the buckets that regress, and DIR/workload_SHAPE.png, its
bar chart.

Each plot draws a few kernel variants, those what to ship names first
(report.md states the rule); the landed kernel, the references and the
time to stream K+V once at the read rate measured in the run are always
drawn, with error bars over the interquartile range where they show past
the marker (the legend says how many do). Fixtures and records that failed a gate are never drawn, and a
plot with nothing to draw is not written.
--plots=false draws none (drawing them is most of a report's time):
report.md, tables.csv and report.json are the same but link no plot, and
the plots an earlier report wrote into DIR are removed.

Shapes are told apart by every dimension, the batch, the capacity and
the attention options; two that share a spec label are named apart
("7b-b1", "7b-b16", "7b-window4096").

Warnings go to stderr: a malformed line as file:line: msg (and skipped),
duplicate points and refused projection rows as one line per kind with a
count. No GPU is needed. The report is rendered beside DIR and moved into place when
complete; files an earlier report wrote into DIR and this one does not
are removed, nothing else.

The projection is labelled as one: rest = step_ms − layers × landed,
projected step = rest + layers × kernel, tokens/s = 1000 / projected step
(graph probe when measured). Where layers × the landed kernel exceeds
step_ms the figures cannot hold and the point is refused; when every
point is refused, the command fails with exit status 2.

Examples:
  $ ktune report out/slice -o out/report
  $ ktune report experiments/results/h200/*.jsonl -o out/report
  $ ktune report experiments/results/h200/slice.jsonl -o out/report --layers 28 --step-ms 30
  $ ktune report experiments/results/h200/h200-frontier.jsonl --json > report.json

Exit status: 0 the report was written, 1 a results file could not be
read or holds no evidence, or an I/O error, 2 a bad command line or
--only filter, 130 when interrupted (DIR is left as it was).

Flags:
`

func runReport(ctx context.Context, stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("o", "", "output `DIR` (created if needed)")
	asJSON := fs.Bool("json", false, "write the report as JSON: DIR/report.json with -o, else stdout")
	layers := fs.Int("layers", 0, "`N` attention launches per decode step, for the projection")
	stepMS := fs.Float64("step-ms", 0, "measured decode step with the landed kernel (`MS`, milliseconds), for the projection")
	maxArms := fs.Int("max-arms", report.DefaultMaxArms, "report.md opens with a dispatch of at most `N` nkv ranges per shape with a landed kernel (0: none)")
	workloadFile := fs.String("workload", "", "add the expected attention time per decode step of each candidate under the workload `FILE` (ktune help gate: Workload) and its bar chart")
	plots := fs.Bool("plots", true, "draw the plots (PNG and SVG); --plots=false writes the tables and report.md without them")
	only := fs.String("only", "", "render only the records `FILTER` selects (the syntax of sweep --only: KEY=VALUE[|VALUE],...)")
	var allowReplayed bool
	registerAllowReplayed(fs, &allowReplayed)
	pos, help, err := parseArgs(fs, args, reportUsage)
	if help || err != nil {
		return err
	}
	if len(pos) == 0 {
		return usageErrorf("report wants at least one RESULTS file (ktune help report)")
	}
	if *out == "" && !*asJSON {
		return usageErrorf("report wants -o DIR, or --json for stdout (ktune help report)")
	}
	if (*layers > 0) != (*stepMS > 0) || *layers < 0 || *stepMS < 0 {
		return usageErrorf("--layers and --step-ms go together, both positive")
	}
	var filter *results.Filter
	if *only != "" {
		if filter, err = results.ParseFilter(*only); err != nil {
			return usageErrorf("--only: %v", err)
		}
	}
	recs, sources, err := loadSourced(stderr, pos)
	if err != nil {
		return err
	}
	if filter != nil {
		configs := make([]*results.Config, len(recs))
		for i := range recs {
			configs[i] = &recs[i].Config
		}
		if err := filter.Check(configs); err != nil {
			return usageErrorf("--only: %v", err)
		}
		recs = slices.DeleteFunc(recs, func(r results.Record) bool { return !filter.Match(&r.Config) })
	}
	// Records of 'sweep --backend replay' are not measurements (replayed.go).
	if err := refuseReplayed(stderr, recs, allowReplayed); err != nil {
		return err
	}
	opts := report.Options{Layers: *layers, StepMS: *stepMS, Sources: sources, MaxArms: *maxArms}
	if *workloadFile != "" {
		if opts.Workload, err = workload.Load(*workloadFile); err != nil {
			return usageErrorf("report: %v", err)
		}
	}
	rep, err := report.Build(recs, opts)
	if errors.Is(err, report.ErrProjection) {
		return withCode(exitUsage, err)
	}
	if err != nil {
		return err
	}
	if err := rep.WriteWarnings(stderr); err != nil {
		return err
	}
	if *out == "" {
		return rep.WriteJSON(stdout, nil, "")
	}
	if _, err := rep.WriteDir(ctx, *out, report.WriteOptions{JSON: *asJSON, NoPlots: !*plots}); err != nil {
		if ctx.Err() != nil {
			return withCode(exitInterrupt, fmt.Errorf("report interrupted: %s left as it was", *out))
		}
		return err
	}
	if err := rep.WriteText(stdout); err != nil {
		return err
	}
	what := "report.md and tables.csv"
	if *asJSON {
		what = "report.md, report.json and tables.csv"
	}
	if *plots {
		what = strings.Replace(what, " and ", ", ", 1) + " and the plots"
	}
	// The price of invariance (invariance.go).
	if wrote, err := reportInvariance(stderr, recs, *out); err != nil {
		return err
	} else if wrote {
		what += ", invariance.md"
	}
	_, err = fmt.Fprintf(stdout, "\nwrote %s into %s\n", what, *out)
	return err
}
