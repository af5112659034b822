package gate

import (
	"slices"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/plan"
)

// suiteRevision counts changes to what a gate checks that leave its kinds
// as they were (a tighter bound, another fill, one more length): raise it
// with such a change, so that resumed sweeps gate again. The order the
// text lists the kinds in is no change: suites compare by
// results.GateSuiteKey.
const suiteRevision = 1

// base is the suite of a point that asks for no opt-in gate.
var base = baseSuite()

func baseSuite() string {
	var kinds []string
	for _, g := range Registry {
		if g.OptIn != nil {
			continue
		}
		for _, k := range g.Kinds {
			if !slices.Contains(kinds, string(k)) {
				kinds = append(kinds, string(k))
			}
		}
	}
	sets := make([]string, len(oracle.Sets))
	for i, s := range oracle.Sets {
		sets[i] = string(s)
	}
	return "r" + strconv.Itoa(suiteRevision) + ": " + strings.Join(kinds, " ") + "; inputs " + strings.Join(sets, " ")
}

// Suite names the gate suite p's record is gated under: the revision, the
// kinds of every gate of Registry in its order, the oracle's input sets,
// and the opt-in gates p runs with what they check (the invariance gate's
// contexts). A sweep writes it into every record (results.Record.
// GateSuite) and, resuming, runs again every point recorded under another
// suite: a record from an older suite was never checked by the gates
// added since, and a variant that asks for an opt-in gate is gated again.
// It is a record field rather than part of the point hash so that the
// hashes of committed results, and everything matched by them, stay what
// they were.
func Suite(p *plan.Point) string {
	s := base
	for _, g := range Registry {
		if g.OptIn == nil {
			continue
		}
		if what := g.OptIn(p); what != "" {
			for _, k := range g.Kinds {
				s += "; " + string(k) + " " + what
			}
		}
	}
	return s
}
