package main

import (
	"fmt"
	"io"

	"github.com/ktune/ktune/internal/results"
)

// loadSet reads results files or sweep directories and returns the whole
// Set, so that a verdict can count the lines it had to skip; each skipped
// line is also warned about on standard error. No records at all is an
// error.
func loadSet(stderr io.Writer, paths []string) (*results.Set, error) {
	set, err := results.Load(paths...)
	warnSkipped(stderr, set)
	if err != nil {
		return nil, err
	}
	if len(set.Records) == 0 {
		return nil, fmt.Errorf("reading results: no records in %v", paths)
	}
	return set, nil
}

// loadResults is loadSet's records.
func loadResults(stderr io.Writer, paths []string) ([]results.Record, error) {
	set, err := loadSet(stderr, paths)
	if err != nil {
		return nil, err
	}
	return set.Records, nil
}

// loadSourced is loadResults that also returns with each record the path
// it was read from, as given: the report's "what to ship" summary names
// those files in its tune command.
func loadSourced(stderr io.Writer, paths []string) ([]results.Record, []string, error) {
	var recs []results.Record
	var sources []string
	for _, p := range paths {
		set, err := results.Load(p)
		warnSkipped(stderr, set)
		if err != nil {
			return nil, nil, err
		}
		recs = append(recs, set.Records...)
		for range set.Records {
			sources = append(sources, p)
		}
	}
	if len(recs) == 0 {
		return nil, nil, fmt.Errorf("reading results: no records in %v", paths)
	}
	return recs, sources, nil
}

// warnSkipped prints the lines a read had to skip.
func warnSkipped(stderr io.Writer, set *results.Set) {
	if set == nil {
		return
	}
	for _, w := range set.Warnings {
		fmt.Fprintf(stderr, "warning: %v (skipped)\n", w)
	}
}
