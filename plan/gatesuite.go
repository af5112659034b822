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

// gateKinds are the gates a sweep may run (results.Gate.Kind). A test
// reads every Gate constant of the results format and fails when one is
// missing here.
var gateKinds = []string{
	results.GateWritten, results.GateTolerance, results.GateBitwise, results.GateReplay,
	results.GateDeterminism, results.GateFresh, results.GateReadOnly, results.GateGuard,
	results.GateBounds, results.GateStale, results.GateTimed, results.GateSanitizer,
}

// GateSuite names the gate suite a record's gates ran under: the revision,
// the gates and the oracle's input sets. A sweep writes it into every
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
	return "r" + strconv.Itoa(gateSuiteRevision) + ": " + strings.Join(gateKinds, " ") + "; inputs " + strings.Join(sets, " ")
}
