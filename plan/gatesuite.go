package plan

import (
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// gateSuiteRevision counts changes to what a gate checks that leave its
// name as it was (a tighter bound, another fill, one more length): raise
// it with such a change, so that resumed sweeps gate again.
const gateSuiteRevision = 1

// GateSuite names the gate suite a record's gates ran under: the revision,
// the gates (results.GateKinds, the one registry of them, in order) and
// the oracle's input sets. A sweep writes it into every
// record (results.Record.GateSuite) and, resuming, runs again every point
// recorded under another suite, since a record from an older suite was
// never checked by the gates added since. It is a record field rather
// than part of the point hash so that the hashes of committed results,
// and everything matched by them, stay what they were.
var GateSuite = gateSuite()

func gateSuite() string {
	sets := make([]string, len(oracle.Sets))
	for i, s := range oracle.Sets {
		sets[i] = string(s)
	}
	kinds := make([]string, len(results.GateKinds))
	for i, k := range results.GateKinds {
		kinds[i] = string(k)
	}
	return "r" + strconv.Itoa(gateSuiteRevision) + ": " + strings.Join(kinds, " ") + "; inputs " + strings.Join(sets, " ")
}

// GateSuite is the gate suite p's record is gated under: GateSuite, and
// the opt-in gates p runs with what they check (the invariance gate's
// contexts), so that a resumed sweep gates again a record of the variant
// before it asked for them.
func (p *Point) GateSuite() string {
	if p.Invariance == nil {
		return GateSuite
	}
	return GateSuite + "; " + string(results.GateInvariance) + " " + p.Invariance.String()
}
