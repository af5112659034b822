package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/replay"
	"github.com/ktune/ktune/search"
)

// simWithin are the thresholds the simulation reports: within 1% and 2%
// of the best table.
var simWithin = []float64{0.01, 0.02}

// tuneSimulate runs the strategies of --search over each recorded results
// file and prints how many points each needed.
func tuneSimulate(ctx context.Context, stdout, stderr io.Writer, fs *flag.FlagSet, f *tuneFlags, p results.Probe) error {
	for _, name := range []string{"o", "force", "device", "devices", "in-process", "wait", "backend", "replay-from", "replay-match", "from"} {
		if flagSet(fs, name) {
			return usageErrorf("tune: --%s measures or writes a table; --simulate only reads recorded results", name)
		}
	}
	if flagSet(fs, "seed") {
		return usageErrorf("tune: --simulate runs seeds 1..--seeds; --seed is for a search")
	}
	if flagSet(fs, "samples") {
		// Random's sample size is chosen before a search; the simulation
		// shows what every size would have found.
		return usageErrorf("tune: --simulate draws every configuration in random's order; --samples is for a search")
	}
	if len(f.from.paths) == 0 {
		return usageErrorf("tune: --simulate wants recorded RESULTS files or sweep directories")
	}
	if f.seeds < 1 {
		return usageErrorf("tune: --seeds %d: want at least 1", f.seeds)
	}
	var names []search.Name
	if strings.TrimSpace(f.search) == "all" {
		names = search.Names()
	} else {
		for _, n := range strings.Split(f.search, ",") {
			if _, err := search.Lookup(n); err != nil {
				return usageErrorf("tune: --search: %v", err)
			}
			names = append(names, search.Name(strings.TrimSpace(n)))
		}
	}
	// Flags of a strategy not simulated are a mistake, as in a search;
	// so are bad values.
	if err := f.strategies.Check(names...); err != nil {
		return usageErrorf("tune: %v", err)
	}
	for _, n := range names {
		if _, err := f.strategies.New(n, search.Common{Probe: p, Simulated: true}); err != nil {
			return usageErrorf("tune: %v", err)
		}
	}
	var spaces []search.SimSpace
	for _, path := range f.from.paths {
		set, err := results.Load(path)
		if err != nil {
			return fmt.Errorf("tune: --simulate: %w", err)
		}
		for _, w := range set.Warnings {
			fmt.Fprintf(stderr, "ktune: warning: %v\n", w)
		}
		sp := search.SimSpace{Name: path}
		for _, n := range names {
			build := func(c search.Common) (search.Strategy, error) {
				c.Probe = p
				return f.strategies.New(n, c)
			}
			res, err := search.Simulate(ctx, replay.New(set.Records), set.Records, build, search.SimOptions{Seeds: f.seeds, Probe: p,
				Within: simWithin, Budget: f.budget.budget()})
			if err != nil {
				return fmt.Errorf("tune: --simulate %s over %s: %w", n, path, err)
			}
			res.Strategy = n
			sp.Results = append(sp.Results, res)
		}
		spaces = append(spaces, sp)
	}
	fmt.Fprintf(stdout, "# objective: the dispatch table by the %s median; a search is within x of the best when every cell (shape, nkv) of the table of its full measurements is within x of the full set's\n", p)
	return search.WriteSimTable(stdout, spaces, f.seeds)
}
