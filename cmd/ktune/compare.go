package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/ktune/ktune/report"
)

func init() {
	register(&command{
		name:    "compare",
		summary: "compare two results files point by point, with significance tests",
		run:     runCompare,
	})
}

const compareUsage = `Usage: ktune compare OLD NEW [--markdown]

Compare matches the points of two results files (or sweep directories) by
variant, shape, defines and nkv — not by record hash, which also covers
the device architecture and the spec, so that two machines or two specs
can be compared — and for every probe measured on both sides prints the
old and new medians with 95% confidence intervals and the change.

A change is shown as a signed percentage only when the Mann-Whitney U test
(golang.org/x/perf/benchmath, AssumeNothing) rejects "same distribution"
at α=0.05; otherwise it is "~" with its p-value: within noise, never a win.

Examples:
  $ ktune compare out/before out/after
  $ ktune compare experiments/results/h200/slice.jsonl out/slice/results.jsonl --markdown

Flags:
`

func runCompare(stdout, stderr io.Writer, args []string) error {
	fs := flag.NewFlagSet("compare", flag.ContinueOnError)
	fs.SetOutput(stderr)
	md := fs.Bool("markdown", false, "print a Markdown table")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), compareUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return withCode(exitUsage, errSilent)
	}
	if len(pos) != 2 {
		return usageErrorf("compare wants OLD and NEW, got %d arguments (ktune help compare)", len(pos))
	}
	old, err := loadResults(stderr, pos[:1])
	if err != nil {
		return err
	}
	cur, err := loadResults(stderr, pos[1:])
	if err != nil {
		return err
	}
	c, err := report.Compare(old, cur)
	if err != nil {
		return err
	}
	return c.WriteText(stdout, *md)
}
