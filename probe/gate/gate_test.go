package gate

import (
	"reflect"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// recordedElsewhere are the kinds of results.GateKinds no gate of the
// Registry records: the probe's timing records the timed and launch-count
// verdicts after its probes, the sweep the sanitizer's.
var recordedElsewhere = []results.GateKind{results.GateTimed, results.GateLaunches, results.GateSanitizer}

// TestRegistryKinds holds the Registry and the kinds' list the gate suite
// is derived from (results.GateKinds, plan.GateSuite) together: every
// kind a gate records is listed, and every listed kind is recorded by a
// gate or named where it is recorded, and every opt-in kind by a gate.
func TestRegistryKinds(t *testing.T) {
	recorded := map[results.GateKind]bool{}
	names := map[string]bool{}
	for _, g := range Registry {
		if g.Name == "" || names[g.Name] || g.Run == nil || len(g.Kinds) == 0 {
			t.Errorf("gate %q: a gate has a name of its own, a Run and the kinds it records", g.Name)
		}
		names[g.Name] = true
		for _, k := range g.Kinds {
			recorded[k] = true
			if !slices.Contains(results.GateKinds, k) && !slices.Contains(results.OptInGateKinds, k) {
				t.Errorf("gate %s records %s, which neither results.GateKinds nor results.OptInGateKinds lists", g.Name, k)
			}
		}
	}
	for _, k := range results.GateKinds {
		if recorded[k] == slices.Contains(recordedElsewhere, k) {
			t.Errorf("%s: recorded by a gate %v, named as recorded elsewhere %v", k, recorded[k], !recorded[k])
		}
	}
	for _, k := range results.OptInGateKinds {
		if !recorded[k] {
			t.Errorf("the opt-in %s is recorded by no gate of the Registry", k)
		}
	}
	if Registry[len(Registry)-1].Name != memory.Name {
		t.Errorf("the memory gate runs last, so that it reports every gate's launches")
	}
}

// TestSettingsArePointFields: the settings a gate says it reads are
// fields of plan.Point.
func TestSettingsArePointFields(t *testing.T) {
	pt := reflect.TypeFor[plan.Point]()
	for _, g := range Registry {
		for _, f := range g.Settings {
			if _, ok := pt.FieldByName(f); !ok {
				t.Errorf("gate %s reads %s, which is not a field of plan.Point", g.Name, f)
			}
		}
	}
}
