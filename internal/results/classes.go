package results

import (
	"path"
	"strings"
)

// ReferenceKernel is the kernel name experiments/sdpa_ref.py writes for
// its PyTorch SDPA measurements.
const ReferenceKernel = "torch"

// IsReference reports whether r measured a kernel ktune did not build: a
// reference such as PyTorch's SDPA, written in the results format with
// kernel ReferenceKernel and no launch geometry. Every kernel ktune
// launches has a positive grid and block. A reference is compared
// against, never shipped and never named in a dispatch table.
func IsReference(r *Record) bool {
	c := &r.Config
	if c.Kernel == ReferenceKernel {
		return true
	}
	for i := range 3 {
		if c.Grid[i] <= 0 || c.Block[i] <= 0 {
			return true
		}
	}
	return false
}

// FixtureKernel reports whether a kernel source lives in a testdata
// directory: the deliberately broken kernels that check a sweep survives
// faults (kernels/testdata).
func FixtureKernel(kernel string) bool {
	for _, part := range strings.Split(path.Clean(strings.ReplaceAll(kernel, `\`, "/")), "/") {
		if part == "testdata" {
			return true
		}
	}
	return false
}

// FixtureSpecs names the specs with at least one fixture kernel. Every
// record of such a spec is a fixture: its good kernels run right after a
// deliberate fault to show the worker recovered, under names no engine
// ships, so they are neither plotted, shipped nor put in a dispatch table.
func FixtureSpecs(recs []Record) map[string]bool {
	out := map[string]bool{}
	for i := range recs {
		if FixtureKernel(recs[i].Config.Kernel) {
			out[recs[i].Config.Spec] = true
		}
	}
	return out
}

// IsFixture reports whether r is a fixture: its own kernel is one
// (FixtureKernel), its record says so (Config.Fixture), or fixtureSpecs
// (FixtureSpecs of the input, for records written before the mark) names
// its spec. Any one of the three suffices, so one edited field does not
// turn a fixture into a kernel to ship.
func IsFixture(r *Record, fixtureSpecs map[string]bool) bool {
	return r.Config.Fixture || FixtureKernel(r.Config.Kernel) || fixtureSpecs[r.Config.Spec]
}

// ReplayedHostPrefix starts the Env.Host of every record the replay
// backend serves marked: a second mark beside Record.Replayed, so that
// deleting or nulling one field does not pass a replay for a measurement.
const ReplayedHostPrefix = "replayed:"

// IsReplayed reports whether the replay backend served r (either mark).
func IsReplayed(r *Record) bool {
	return r.Replayed != nil || strings.HasPrefix(r.Env.Host, ReplayedHostPrefix)
}
