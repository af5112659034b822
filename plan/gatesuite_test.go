package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// The gate suite is derived from the one registry of gate kinds: it names
// each kind once, in the registry's order, and the input sets, so that a
// kind added to the registry changes the suite and resumed sweeps gate
// their records again.
func TestGateSuiteNamesEveryGate(t *testing.T) {
	kinds, inputs, ok := strings.Cut(strings.TrimPrefix(GateSuite, "r1: "), "; inputs ")
	if !ok {
		t.Fatalf("GateSuite %q: want \"rN: kinds; inputs sets\"", GateSuite)
	}
	var want []string
	for _, k := range results.GateKinds {
		if slices.Contains(want, string(k)) {
			t.Errorf("results.GateKinds lists %s twice", k)
		}
		want = append(want, string(k))
	}
	if got := strings.Fields(kinds); !slices.Equal(got, want) {
		t.Errorf("GateSuite names the gates %v, want the registry's %v", got, want)
	}
	for _, s := range oracle.Sets {
		if !slices.Contains(strings.Fields(inputs), string(s)) {
			t.Errorf("GateSuite %q does not name the input set %s", GateSuite, s)
		}
	}
}

// An opt-in gate is in no plain point's suite and in the suite of every
// point that runs it; no kind is both always run and opt-in.
func TestGateSuiteOptIn(t *testing.T) {
	for _, k := range results.OptInGateKinds {
		if slices.Contains(results.GateKinds, k) {
			t.Errorf("%s is both in GateKinds and opt-in", k)
		}
		if strings.Contains(GateSuite, string(k)) {
			t.Errorf("GateSuite %q names the opt-in %s", GateSuite, k)
		}
	}
	p := &Point{Invariance: &Invariance{}}
	if !strings.HasPrefix(p.GateSuite(), GateSuite+"; "+string(results.GateInvariance)) {
		t.Errorf("an invariance point's suite %q", p.GateSuite())
	}
}
