package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/ktune/ktune/internal/evidence"
	"github.com/ktune/ktune/internal/results"
)

// loadEvidence reads results files or sweep directories into evidence
// (internal/evidence): each skipped line and each record that is not
// evidence is warned about on standard error, with a count. No evidence
// at all is an error.
func loadEvidence(stderr io.Writer, paths []string, opt evidence.Options) (*evidence.Set, error) {
	set, err := evidence.Load(paths, opt)
	if set != nil {
		warnEvidence(stderr, set)
	}
	if err != nil {
		return nil, err
	}
	if len(set.Records) == 0 {
		return nil, fmt.Errorf("reading results: no records that are evidence in %v", paths)
	}
	return set, nil
}

// maxLinesShown bounds the unreadable lines named per file: a file that
// is not results at all (a binary, a log) is thousands of them, which
// would bury every other warning.
const maxLinesShown = 10

// warnEvidence prints what of set is not evidence, one line each (at most
// maxLinesShown unreadable lines a file, then their count) and a count.
func warnEvidence(stderr io.Writer, set *evidence.Set) {
	shown, hidden := map[string]int{}, map[string]int{}
	var files []string
	for _, w := range set.Damaged {
		file := ""
		if se := (*results.SyntaxError)(nil); errors.As(w, &se) {
			file = se.File
		}
		if shown[file] == maxLinesShown {
			if hidden[file] == 0 {
				files = append(files, file)
			}
			hidden[file]++
			continue
		}
		shown[file]++
		fmt.Fprintf(stderr, "warning: %v (skipped)\n", w)
	}
	for _, f := range files {
		fmt.Fprintf(stderr, "warning: %s: %d more unreadable line(s) not shown (skipped)\n", f, hidden[f])
	}
	for _, e := range set.Excluded {
		fmt.Fprintf(stderr, "warning: %v (excluded)\n", e)
	}
	if s := set.Summary(); s != "" {
		fmt.Fprintf(stderr, "warning: %s\n", s)
	}
}

// loadSourced is loadEvidence's records, with each the path it was read
// from, as given: the report's "what to ship" summary names those files in
// its tune command. Records that are not evidence are left out, with a
// warning and a count on stderr. So is an ok record of a hash that failed
// anywhere in the input (a superseded line, another file): as in gate, a
// failure of a kernel stays one, and "what to ship" must not name it.
func loadSourced(stderr io.Writer, paths []string) ([]results.Record, []string, error) {
	set := &evidence.Set{}
	for _, p := range paths {
		one, err := evidence.Load([]string{p}, evidence.Options{})
		if one != nil {
			set.Damaged = append(set.Damaged, one.Damaged...)
			set.Excluded = append(set.Excluded, one.Excluded...)
			set.Failures = append(set.Failures, one.Failures...)
			set.Records = append(set.Records, one.Records...)
			for range one.Records {
				set.Sources = append(set.Sources, p)
			}
		}
		if err != nil {
			warnEvidence(stderr, set)
			return nil, nil, err
		}
	}
	warnEvidence(stderr, set)
	recs, sources := dropFailedElsewhere(stderr, set)
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("reading results: no records that are evidence in %v", paths)
	}
	return recs, sources, nil
}

// dropFailedElsewhere returns set's records and sources without the ok
// records of a hash that some record of the input says is wrong, each
// named on stderr.
func dropFailedElsewhere(stderr io.Writer, set *evidence.Set) ([]results.Record, []string) {
	failed := map[string]string{}
	for _, f := range set.Failures {
		if _, seen := failed[f.Hash]; !seen {
			failed[f.Hash] = f.Reason
		}
	}
	var recs []results.Record
	var sources []string
	dropped := 0
	for i, r := range set.Records {
		if reason, bad := failed[r.Hash]; bad && r.Status == results.StatusOK {
			fmt.Fprintf(stderr, "warning: %s: %s nkv=%d (hash %s) is ok here but failed elsewhere in the input (%s): left out\n",
				set.Sources[i], r.Config.Variant, r.Config.NKV, r.Hash, reason)
			dropped++
			continue
		}
		recs = append(recs, r)
		sources = append(sources, set.Sources[i])
	}
	if dropped > 0 {
		fmt.Fprintf(stderr, "warning: %d ok record(s) left out: their kernel failed elsewhere in the input\n", dropped)
	}
	return recs, sources
}
