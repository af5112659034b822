package main

import (
	"cmp"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/ktune/ktune/plan"
)

// deviceFlags adds the flags that set the device symbols a spec's
// expressions may read (plan/devicesyms.go) to fl.
func deviceFlags(fl *flag.FlagSet, over *plan.Override) {
	fl.IntVar(&over.SMs, "sms", 0, "the SM count `N` that sms is evaluated at, in grids, planned arrays, scratch and shared sizes and arguments (default: the architecture's usual part; a sweep uses its device's)")
	fl.IntVar(&over.BlocksPerSM, "blocks-per-sm", 0, "the resident blocks per SM, `N`, a grid's blocks_per_sm is evaluated at where its launch declares none in the spec (default 1; a sweep refuses a kernel whose occupancy differs)")
}

// writeAssumed says, after a plan's table, what the plan assumed for the
// device symbols its grids, planned arrays, scratch and shared sizes and arguments
// read, so that a plan made without a GPU says which device its hashes
// are for; for blocks_per_sm, which launches took the spec's declared
// value and which the flag's.
func writeAssumed(w io.Writer, p *plan.Plan, arch string, over plan.Override) error {
	sms := map[int]bool{}
	type origin struct {
		n        int
		declared bool
	}
	bps := map[origin][]string{} // the launches, "variant launches[i]", in plan order
	for _, pt := range p.Points {
		if pt.SMs != 0 {
			sms[pt.SMs] = true
		}
		for i, l := range pt.Launches {
			if l.SMs != 0 {
				sms[l.SMs] = true
			}
			if l.BlocksPerSM != 0 {
				o := origin{l.BlocksPerSM, l.BlocksPerSMDeclared}
				if name := fmt.Sprintf("%s launches[%d]", pt.Config.Variant, i); !slices.Contains(bps[o], name) {
					bps[o] = append(bps[o], name)
				}
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
	// The spec's first: the engine's facts, then the flag's assumption.
	for _, declared := range []bool{true, false} {
		for _, o := range slices.SortedFunc(maps.Keys(bps), func(a, b origin) int { return cmp.Compare(a.n, b.n) }) {
			if o.declared != declared {
				continue
			}
			from := "--blocks-per-sm; default 1"
			if o.declared {
				from = "the spec's blocks_per_sm; --blocks-per-sm does not change it"
			}
			if _, err := fmt.Fprintf(w, "assumed: blocks_per_sm = %d for %s (%s; a sweep refuses a kernel whose occupancy differs)\n", o.n, strings.Join(bps[o], ", "), from); err != nil {
				return err
			}
		}
	}
	return nil
}
