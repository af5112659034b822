package dispatch

import (
	"fmt"

	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
)

// launchable says whether r is a kernel the dispatch table can name: not
// a reference measurement and not a fault fixture (results.IsReference,
// results.FixtureSpecs), with a page size the table can key.
func launchable(r *results.Record, fixtures map[string]bool) (bool, string) {
	if _, err := pageSize(&r.Config); err != nil {
		return false, "unreadable page size"
	}
	if results.IsReference(r) {
		return false, "reference measurement"
	}
	if results.IsFixture(r, fixtures) {
		return false, "fault fixture"
	}
	return true, ""
}

// failedConfigs returns the configurations (per shape) that failed a gate
// or ended in a fault in any record: a kernel that was once wrong for a
// configuration is not chosen there on the strength of another record
// that happened to pass.
func failedConfigs(recs []results.Record) map[tableKey]map[string]bool {
	bad := map[tableKey]map[string]bool{}
	for i := range recs {
		r := &recs[i]
		if r.Status != results.StatusFault && r.Status != results.StatusGateFailed && r.GatesPass() {
			continue
		}
		k := keyOf(&r.Config)
		if bad[k] == nil {
			bad[k] = map[string]bool{}
		}
		bad[k][decision.ConfigID(&r.Config)] = true
	}
	return bad
}

// excludedNote says, for the caller's warnings, what was left out.
func excludedNote(counts map[string]int) []string {
	var out []string
	for _, why := range []string{"reference measurement", "fault fixture", "unreadable page size", "failed elsewhere"} {
		if n := counts[why]; n > 0 {
			out = append(out, fmt.Sprintf("left out %d record(s): %s (never a dispatch choice)", n, why))
		}
	}
	return out
}
