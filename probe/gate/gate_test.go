package gate

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/spec"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// TestRegistry: every check has a name of its own and the kinds it
// records, and either a Run or, recorded outside the gates' run, what
// records it; the memory gate is the last that runs, so that it reports
// every gate's launches; an opt-in gate says what it checks only where
// a point asks for it.
func TestRegistry(t *testing.T) {
	names := map[string]bool{}
	lastRun := ""
	for _, g := range Registry {
		if g.Name == "" || names[g.Name] || len(g.Kinds) == 0 || (g.Run == nil) == (g.By == "") {
			t.Errorf("check %q: a name of its own, its kinds, and a Run or a By (not both)", g.Name)
		}
		names[g.Name] = true
		if g.Run != nil {
			lastRun = g.Name
		}
		if g.OptIn != nil && g.OptIn(&plan.Point{}) != "" {
			t.Errorf("opt-in %s says it checks a point that asks for nothing", g.Name)
		}
	}
	if lastRun != memory.Name {
		t.Errorf("the last gate run is %s, want the memory gate, so that it reports every gate's launches", lastRun)
	}
}

// TestSuite: a point's suite names, once each and in the Registry's
// order, every kind of every check but the opt-in ones, and the oracle's
// input sets; a point that asks for the invariance gate adds it with its
// contexts. So a check added to the Registry changes every suite, and
// resumed sweeps gate their records again.
func TestSuite(t *testing.T) {
	plain := Suite(&plan.Point{})
	kinds, inputs, ok := strings.Cut(strings.TrimPrefix(plain, "r1: "), "; inputs ")
	if !ok || !strings.HasPrefix(plain, "r1: ") {
		t.Fatalf("suite %q: want \"r1: kinds; inputs sets\"", plain)
	}
	var want []string
	for _, g := range Registry {
		for _, k := range g.Kinds {
			if g.OptIn == nil && !slices.Contains(want, string(k)) {
				want = append(want, string(k))
			}
		}
	}
	if got := strings.Fields(kinds); !slices.Equal(got, want) {
		t.Errorf("suite names %v, want the Registry's %v", got, want)
	}
	for _, s := range oracle.Sets {
		if !slices.Contains(strings.Fields(inputs), string(s)) {
			t.Errorf("suite %q does not name the input set %s", plain, s)
		}
	}
	if strings.Contains(plain, string(results.GateInvariance)) {
		t.Errorf("a plain point's suite %q names the opt-in invariance gate", plain)
	}
	// The suite the records written before the Registry existed name
	// (the checks of today, listed in another order) is this one: their
	// sweeps resume without gating again, and gate compares them with
	// new records without a warning.
	const committed = "r1: written tolerance bitwise replay determinism fresh readonly guard bounds stale timed launches sanitizer; inputs uniform peaked large subnormal outliers"
	if results.GateSuiteKey(plain) != results.GateSuiteKey(committed) {
		t.Errorf("suite %q is not the committed records' %q", plain, committed)
	}
	iv := &plan.Invariance{Kinds: []spec.Invariance{spec.InvariantBatch}}
	if got := Suite(&plan.Point{Invariance: iv}); got != plain+"; invariance "+iv.String() {
		t.Errorf("an invariance point's suite %q", got)
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
