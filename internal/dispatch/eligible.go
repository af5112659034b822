package dispatch

import (
	"fmt"

	"github.com/ktune/ktune/internal/results"
)

// ReferenceKernel is the kernel name experiments/sdpa_ref.py writes for
// its PyTorch SDPA measurements: a yardstick for reports, not a kernel an
// engine built on ktune's ABI can launch.
const ReferenceKernel = "torch"

// FixtureSpecs names the specs whose records exist to break a sweep
// (experiments/faults.yaml: out-of-bounds, trapping and hanging kernels,
// each followed by a good d2 under another name). Their good records are
// real measurements of d2, but under fixture names no engine ships; a
// table built from a directory that holds them must not pick them.
var FixtureSpecs = map[string]bool{"faults": true}

// launchable says whether r is a kernel the dispatch table can name: not
// a reference measurement (the reference script's kernel, or no launch
// geometry at all) and not a fault fixture.
func launchable(r *results.Record) (bool, string) {
	c := &r.Config
	if c.Kernel == ReferenceKernel {
		return false, "reference measurement"
	}
	for i := range 3 {
		if c.Grid[i] <= 0 || c.Block[i] <= 0 {
			return false, "reference measurement"
		}
	}
	if FixtureSpecs[c.Spec] {
		return false, "fault fixture"
	}
	return true, ""
}

// failedConfigs returns the configurations (per shape) that failed a gate
// or ended in a fault in any record: a kernel that was once wrong for a
// configuration is not chosen there on the strength of another record
// that happened to pass.
func failedConfigs(recs []results.Record) map[results.Shape]map[string]bool {
	bad := map[results.Shape]map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Status != results.StatusFault && r.Status != results.StatusGateFailed && r.GatesPass() {
			continue
		}
		k := shapeKey(r.Config.Shape)
		if bad[k] == nil {
			bad[k] = map[string]bool{}
		}
		bad[k][configID(&r.Config)] = true
	}
	return bad
}

// excludedNote says, for the caller's warnings, what was left out.
func excludedNote(counts map[string]int) []string {
	var out []string
	for _, why := range []string{"reference measurement", "fault fixture", "failed elsewhere"} {
		if n := counts[why]; n > 0 {
			out = append(out, fmt.Sprintf("left out %d record(s): %s (never a dispatch choice)", n, why))
		}
	}
	return out
}
