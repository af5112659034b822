package main

import (
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

// warnEvidence prints what of set is not evidence, one line each and a count.
func warnEvidence(stderr io.Writer, set *evidence.Set) {
	for _, w := range set.Damaged {
		fmt.Fprintf(stderr, "warning: %v (skipped)\n", w)
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
// warning and a count on stderr.
func loadSourced(stderr io.Writer, paths []string) ([]results.Record, []string, error) {
	set := &evidence.Set{}
	for _, p := range paths {
		one, err := evidence.Load([]string{p}, evidence.Options{})
		if one != nil {
			set.Damaged = append(set.Damaged, one.Damaged...)
			set.Excluded = append(set.Excluded, one.Excluded...)
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
	if len(set.Records) == 0 {
		return nil, nil, fmt.Errorf("reading results: no records that are evidence in %v", paths)
	}
	return set.Records, set.Sources, nil
}
