package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/report"
)

func init() {
	register(&command{
		name:    "compare",
		summary: "compare two results files point by point, with significance tests",
		run:     runCompare,
	})
}

var compareUsage = `Usage: ktune compare OLD NEW [--markdown | --json]

Compare matches the points of two results files (or sweep directories) by
variant, shape, defines and nkv — not by record hash, which also covers
the device architecture and the spec, so that two machines or two specs
can be compared — and for every probe measured on both sides prints the
old and new medians with 95% confidence intervals and the change: the
Hodges-Lehmann estimate of new/old − 1 (the median of the ratios of every
new sample to every old one), the centre of the change's 95% interval,
which the ratio of the two medians need not be.

A change is shown as a signed percentage only when the Mann-Whitney U test
(golang.org/x/perf/benchmath, AssumeNothing) rejects "same distribution"
at α=` + decision.AlphaText() + `; otherwise it is "~" with its p-value: within noise, never a win.

Lines of either file that cannot be read as records are counted and
their points reported as present on one side only. When the two sides
were measured on different GPUs or drivers, compare says so (on standard
error, and in the output): a change may be the machine's.

--json prints one JSON document instead of the table: report.CompareDoc
(go doc github.com/ktune/ktune/report CompareDoc), versioned by its
"schema" field.

Examples:
  $ ktune compare out/before out/after
  $ ktune compare experiments/results/h200/slice.jsonl out/slice/results.jsonl --markdown
  $ ktune compare out/before out/after --json | jq '.rows[] | select(.significant)'

Exit status: 0 the comparison was printed (whatever it found: compare
decides nothing; gate does), 1 a results file could not be read or holds
no evidence, 2 a bad command line.

Flags:
`

func runCompare(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	md := fs.Bool("markdown", false, "print a Markdown table")
	asJSON := fs.Bool("json", false, "print the comparison as one JSON document (report.CompareDoc)")
	var allowReplayed bool
	registerAllowReplayed(fs, &allowReplayed)
	pos, help, err := parseArgs(fs, args, compareUsage)
	if help || err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErrorf("compare wants OLD and NEW, got %d arguments (ktune help compare)", len(pos))
	}
	if *md && *asJSON {
		return usageErrorf("compare: --markdown and --json exclude each other")
	}
	old, err := loadEvidence(stderr, pos[:1], evidence.Options{})
	if err != nil {
		return err
	}
	cur, err := loadEvidence(stderr, pos[1:], evidence.Options{})
	if err != nil {
		return err
	}
	// Records of 'sweep --backend replay' are not measurements (replayed.go).
	if err := refuseReplayed(stderr, append(old.Records[:len(old.Records):len(old.Records)], cur.Records...), allowReplayed); err != nil {
		return err
	}
	c, err := report.Compare(old.Records, cur.Records)
	if err != nil {
		return err
	}
	// A record that is not evidence counts as a skipped one: both are
	// input the comparison could not use.
	c.OldSkipped, c.NewSkipped = len(old.Damaged)+len(old.Excluded), len(cur.Damaged)+len(cur.Excluded)
	if c.EnvWarning != "" {
		fmt.Fprintf(stderr, "warning: %s\n", c.EnvWarning)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(c.Doc()); err != nil {
			return fmt.Errorf("writing the comparison: %w", err)
		}
	} else if err := c.WriteText(stdout, *md); err != nil {
		return err
	}
	if len(c.Rows) == 0 {
		// Two files of nothing in common read as "no change" otherwise.
		return fmt.Errorf("compare: %s and %s share no point (shape, configuration and nkv measured on both sides): nothing was compared",
			pos[0], pos[1])
	}
	return nil
}
