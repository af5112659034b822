package report

import (
	"path"
	"strings"

	"github.com/ktune/ktune/internal/results"
)

// isReference reports whether r measured a kernel ktune did not build: a
// reference such as PyTorch's SDPA, which experiments/sdpa_ref.py writes
// in the results format with kernel "torch". Every kernel ktune launches
// has a grid and an NVRTC version; a record with neither came from
// another tool. A reference is compared against, never shipped.
func isReference(r *results.Record) bool {
	return r.Config.Kernel == "torch" || r.Config.Grid == [3]int{} && r.Env.NVRTC == ""
}

// fixtureKernel reports whether a kernel source lives in a testdata
// directory: the deliberately broken kernels that check a sweep survives
// faults (kernels/testdata).
func fixtureKernel(kernel string) bool {
	for _, part := range strings.Split(path.Clean(strings.ReplaceAll(kernel, `\`, "/")), "/") {
		if part == "testdata" {
			return true
		}
	}
	return false
}

// fixtureSpecs names the specs with at least one fixture kernel. Every
// record of such a spec is a fixture: its good kernels run right after a
// deliberate fault to show the worker recovered, and their timings say
// nothing about what to ship, so they are neither plotted nor chosen.
func fixtureSpecs(recs []results.Record) map[string]bool {
	out := map[string]bool{}
	for i := range recs {
		if fixtureKernel(recs[i].Config.Kernel) {
			out[recs[i].Config.Spec] = true
		}
	}
	return out
}
