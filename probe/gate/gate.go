// Package gate owns the gates a compiled point passes before it is timed:
// what each checks, the settings of the point it reads, the order a point
// runs them in (Registry) and the verdicts they record (results.Gate).
//
// A gate is a value: its name, the verdict kinds it records, the fields of
// plan.Point it reads, and a Run over a Session. The Session is the state
// of one point that the probe lends to the gates and its timing probes
// alike (the workspace and its uploads, the one launch path, the input
// cache and the oracle, what the checks after every launch found): a gate
// launches, uploads and reads through it and owns none of it. What a gate
// leaves for what follows it (its verdicts, the fresh gate's reference
// launch that the probe runs again after timing) is in the Log it writes.
//
// The package does not import the probe: Session (three small
// interfaces, Info, Inputs and Launcher, and the Findings) is what the
// probe implements. Adding a gate is one file that declares its Gate and
// one line in Registry. The checks of what the timed launches computed
// (results.GateTimed, results.GateLaunches) are the probe's: they read the
// timing probes' own launches.
package gate

import (
	"context"

	"github.com/ktune/ktune/internal/results"
)

// A Gate is one check of a compiled point.
type Gate struct {
	// Name names the gate in logs and errors.
	Name string
	// Kinds are the verdict kinds the gate records (results.GateKinds,
	// or results.OptInGateKinds for a gate a spec asks for).
	Kinds []results.GateKind
	// Settings are the fields of plan.Point the gate reads, besides the
	// configuration and the seed every gate reads.
	Settings []string
	// Run runs the gate on the point of s and adds its verdicts to log.
	// An error ends the point (a fault, a cancelled context); a failed
	// check is a verdict, not an error.
	Run func(ctx context.Context, s Session, log *Log) error
}

// Registry lists the gates in the order a point runs them. The gate
// suite a record names (plan.GateSuite) is derived from the kinds'
// list, results.GateKinds; TestRegistryKinds holds the two together.
var Registry = []Gate{
	numeric,
	long,
	fresh,
	replay,
	invariance, // opt-in: plan.Point.Invariance
	bounds,
	memory, // last: it reports what the checks after every gate's launches found
}
