package main

import (
	"fmt"
	"io"

	"github.com/ktune/ktune/internal/results"
)

// loadSet reads results files or sweep directories like loadResults, but
// returns the whole Set, so that a verdict can count the lines it had to
// skip instead of leaving them to a warning on standard error.
func loadSet(stderr io.Writer, paths []string) (*results.Set, error) {
	set, err := results.Load(paths...)
	if set != nil {
		for _, w := range set.Warnings {
			fmt.Fprintf(stderr, "warning: %v (skipped)\n", w)
		}
	}
	if err != nil {
		return nil, err
	}
	if len(set.Records) == 0 {
		return nil, fmt.Errorf("reading results: no records in %v", paths)
	}
	return set, nil
}
