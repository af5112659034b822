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
// probe implements. Adding a gate, a new kind of verdict included, is one
// file that declares its Gate (and its kind, a results.GateKind of its
// own) and one line in Registry, which the gate suite records name is
// derived from (Suite). The checks of what the timed launches computed
// (results.GateTimed, results.GateLaunches) are the probe's: they read the
// timing probes' own launches; Registry lists them with what records them.
package gate

import (
	"context"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A Gate is one check of a compiled point.
type Gate struct {
	// Name names the gate in logs and errors.
	Name string
	// Kinds are the verdict kinds the gate records.
	Kinds []results.GateKind
	// Settings are the fields of plan.Point the gate reads, besides the
	// configuration and the seed every gate reads.
	Settings []string
	// Run runs the gate on the point of s and adds its verdicts to log.
	// An error ends the point (a fault, a cancelled context); a failed
	// check is a verdict, not an error. Nil for the checks recorded
	// outside the gates' run (By says where).
	Run func(ctx context.Context, s Session, log *Log) error
	// OptIn, for a gate a spec asks for per variant, says what it checks
	// at p, "" where p does not ask for it (then it records nothing and is
	// not in p's suite).
	OptIn func(p *plan.Point) string
	// By, for a check with no Run, names what records it.
	By string
}

// Registry lists every check a record's gates carry, in the order a
// point runs them: the gates' run, then the checks of what the timed
// launches computed, which the probe makes after its timing probes, and
// the sanitizer's, which the sweep makes before a point's first run. The
// gate suite a record names (Suite) is derived from it, so a check added
// here gates resumed records again.
var Registry = []Gate{
	numeric,
	long,
	fresh,
	replay,
	invariance, // opt-in: plan.Point.Invariance
	bounds,
	memory, // the last run: it reports what the checks after every gate's launches found
	{Name: "timed", Kinds: []results.GateKind{results.GateTimed}, By: "the probe, after each timing probe (probe/timed.go)"},
	{Name: "launches", Kinds: []results.GateKind{results.GateLaunches}, By: "the probe, after the timing probes (probe/launchcount.go)"},
	{Name: "sanitizer", Kinds: []results.GateKind{results.GateSanitizer}, By: "the sweep's compute-sanitizer pass (sweep/sanitize.go)"},
}
