package main

import (
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/ktune/ktune/plan"
)

// deviceFlags adds the flags that set the device symbols a spec's
// expressions may read (plan/devicesyms.go) to fl.
func deviceFlags(fl *flag.FlagSet, over *plan.Override) {
	fl.IntVar(&over.SMs, "sms", 0, "the SM count `N` that sms is evaluated at, in grids, planned arrays, scratch sizes and arguments (default: the architecture's usual part; a sweep uses its device's)")
	fl.IntVar(&over.BlocksPerSM, "blocks-per-sm", 0, "the resident blocks per SM, `N`, a grid's blocks_per_sm is evaluated at (default 1; a sweep refuses a kernel whose occupancy differs)")
}

// writeAssumed says, after a plan's table, what the plan assumed for the
// device symbols its grids, planned arrays, scratch sizes and arguments
// read, so that a plan made without a GPU says which device its hashes
// are for.
func writeAssumed(w io.Writer, p *plan.Plan, arch string, over plan.Override) error {
	sms, bps := map[int]bool{}, map[int]bool{}
	for _, pt := range p.Points {
		if pt.SMs != 0 {
			sms[pt.SMs] = true
		}
		for _, l := range pt.Launches {
			if l.SMs != 0 {
				sms[l.SMs] = true
			}
			if l.BlocksPerSM != 0 {
				bps[l.BlocksPerSM] = true
			}
		}
	}
	for _, n := range slices.Sorted(maps.Keys(sms)) {
		from := "the default of " + arch + "; --sms to change"
		if over.SMs != 0 {
			from = "--sms"
		}
		if _, err := fmt.Fprintf(w, "assumed: sms = %d (%s; a sweep uses its device's)\n", n, from); err != nil {
			return err
		}
	}
	for _, n := range slices.Sorted(maps.Keys(bps)) {
		if _, err := fmt.Fprintf(w, "assumed: blocks_per_sm = %d (--blocks-per-sm; default 1; a sweep refuses a kernel whose occupancy differs)\n", n); err != nil {
			return err
		}
	}
	return nil
}
