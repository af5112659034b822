package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/report"
	"github.com/ktune/ktune/verdict"
)

// TestCommittedDecisions regenerates, from every committed H200 results
// file, what the report ships (per shape, the configuration of each nkv
// range) and the landing gate's verdict of every variant against the
// landed records, as gate and report compute them, and compares them with
// testdata/committed-decisions.golden: a change to how ktune identifies a
// point or picks a winner shows here as the verdicts and ship tables it
// moves. (The committed dispatch tables have their own test:
// internal/dispatch's TestCommittedTables.)
func TestCommittedDecisions(t *testing.T) {
	t.Parallel()
	var files []string
	err := filepath.WalkDir("../../experiments/results/h200", func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && (strings.HasSuffix(path, ".jsonl") || strings.HasSuffix(path, ".jsonl.gz")) {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	if len(files) < 50 {
		t.Fatalf("found %d committed results files, want the H200 set", len(files))
	}
	var b strings.Builder
	for _, f := range files {
		name := strings.TrimPrefix(f, "../../experiments/results/h200/")
		// One read serves both, as each command reads it: report
		// leaves out the ok records of a hash that failed elsewhere
		// (loadSourced), gate weighs them as failures.
		set, err := loadEvidence(io.Discard, []string{f}, evidence.Options{})
		if err != nil {
			fmt.Fprintf(&b, "%s: report: %v\n%s: gate: %v\n", name, err, name, err)
			continue
		}
		recs, _ := dropFailedElsewhere(io.Discard, set)
		if rep, err := report.Build(recs, report.Options{}); err != nil {
			fmt.Fprintf(&b, "%s: report: %v\n", name, err)
		} else {
			for _, s := range rep.Ship {
				var rs []string
				for _, r := range s.Ranges {
					rs = append(rs, fmt.Sprintf("%d-%d %s", r.MinNKV, r.MaxNKV, r.Config))
				}
				fmt.Fprintf(&b, "%s: ship %s %s: %s\n", name, s.Device, s.Shape, strings.Join(rs, " | "))
			}
		}
		var variants []string
		for i := range set.Records {
			if v := set.Records[i].Config.Variant; !slices.Contains(variants, v) {
				variants = append(variants, v)
			}
		}
		slices.Sort(variants)
		for _, v := range variants {
			res, err := verdict.Gate(set.Records, verdict.GateOptions{Candidate: v, Threshold: 0.02,
				Skipped: set.Damaged, Excluded: set.Excluded, Failures: set.Failures})
			if err != nil {
				fmt.Fprintf(&b, "%s: gate %s: %v\n", name, v, err)
				continue
			}
			regressions := 0
			for _, p := range res.Points {
				if p.Regression {
					regressions++
				}
			}
			fmt.Fprintf(&b, "%s: gate %s: %s (%d points, %d regressions, %d undecided, %d missing)\n",
				name, v, res.Verdict, len(res.Points), regressions, res.Undecided, len(res.Missing))
		}
	}
	golden.Check(t, "testdata/committed-decisions.golden", []byte(b.String()))
}
