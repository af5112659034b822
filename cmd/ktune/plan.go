package main

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe"
)

func init() {
	register(&command{
		name:    "plan",
		summary: "show the points a spec expands to (no GPU needed)",
		run:     planCmd,
	})
}

const planUsage = `Usage: ktune plan SPEC [--arch sm_90] [--count]

Plan reads an experiment spec, validates it and prints every point the
sweep would run, in order: variant, shape, defines, nkv, launch geometry,
numerics class and the start of the point's hash, then the counts and the
combinations a kernel cannot run, with the reason. Last come the
"waived:" lines: what the spec waives or declares for the gates (an
input set's own bounds, graph: never, a cache finite past each length),
each with its reason and the variants it applies to, as the records and
verdicts will name them. It needs no GPU, so it is the way to check a
spec before a sweep.

--count prints only the number of points, per variant, counted from the
axes and the kernels' rules without building the points: instant for a
spec of a million points, where the full plan takes minutes.

A mistake in the spec is reported as file:line:col: message and exits 2,
as is a launch no GPU accepts (a block over 1024 threads) and an --arch
that is not sm_NN[a|f]. A launch of a prebuilt CUBIN whose arguments are
not the kernel's parameters (as the CUBIN records them), or whose entry
the CUBIN lacks, is reported at the launch's file:line:col and exits 3.

Examples:
  $ ktune plan experiments/slice.yaml
  $ ktune plan my.yaml --arch sm_100    # hashes for another architecture
  $ ktune plan big.yaml --count
  $ ktune plan persistent.yaml --sms 132 --blocks-per-sm 2

A grid may read the device's SM count (sms) and its kernel's resident
blocks per SM (blocks_per_sm); a planned array, a scratch size and an
argument may read sms. Without a GPU the plan evaluates them at
--sms (default: the architecture's usual part, 132 for sm_90) and at
the launch's own blocks_per_sm where the spec declares it, else
--blocks-per-sm (default 1); it prints what it assumed, for which
launches, and hashes it. A sweep evaluates sms on its device, and
refuses, before any launch, a point whose kernel's occupancy is not the
blocks per SM it was planned for (declared or not).

Exit status: 0 the plan was printed, 1 it could not be written, 2 a bad
command line or spec (file:line:col: message).

Flags:
`

func planCmd(stdout, stderr io.Writer, args []string) error {
	fl := flag.NewFlagSet("plan", flag.ContinueOnError)
	fl.SetOutput(stderr)
	arch := fl.String("arch", "sm_90", "GPU architecture `ARCH` the points are hashed for (NVRTC -arch)")
	count := fl.Bool("count", false, "print the number of points only, without building them")
	var over plan.Override
	deviceFlags(fl, &over)
	var axes axisFlags
	axes.register(fl)
	// The spec path may come before or after the flags.
	paths, help, err := parseArgs(fl, args, planUsage)
	if help || err != nil {
		return err
	}
	if len(paths) != 1 {
		fl.Usage()
		return usageErrorf("plan: want exactly one SPEC, got %d", len(paths))
	}
	if err := spec.CheckArch(*arch); err != nil {
		return usageErrorf("plan --arch: %v", err)
	}
	s, err := loadSpec(paths[0], axes...)
	if err != nil {
		return err
	}
	if *count {
		return writeCount(stdout, plan.CountPoints(s), s.Restrictions)
	}
	// A variant's own build is looked up in the build cache, not run:
	// ktune check and sweeps run it.
	if over.BuildDir, err = probe.BuildDir(""); err != nil {
		return err
	}
	p, err := plan.BuildWith(s, *arch, over)
	if err != nil {
		return planError(paths[0], err)
	}
	if err := checkLaunches(s, p.Points); err != nil {
		return err
	}
	if err := checkPrebuiltParams(s, p.Points); err != nil {
		return err
	}
	if err := p.WriteTable(stdout); err != nil {
		return err
	}
	if err := writeAssumed(stdout, p, *arch, over); err != nil {
		return err
	}
	return writeWaived(stdout, p)
}

// writeWaived lists what the spec waives or declares for its points'
// gates (plan.Point.WaiverTexts: input-set waivers, graph: never, the
// stale rows' contract), each with the variants it applies to, so that
// they are seen before a sweep and not only in its records.
func writeWaived(w io.Writer, p *plan.Plan) error {
	var texts []string
	variants := map[string][]string{}
	for _, pt := range p.Points {
		for _, t := range pt.WaiverTexts() {
			if variants[t] == nil {
				texts = append(texts, t)
			}
			if !slices.Contains(variants[t], pt.Config.Variant) {
				variants[t] = append(variants[t], pt.Config.Variant)
			}
		}
	}
	for _, t := range texts {
		if _, err := fmt.Fprintf(w, "waived: %s (%s)\n", t, strings.Join(variants[t], ", ")); err != nil {
			return err
		}
	}
	return nil
}
