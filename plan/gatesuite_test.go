package plan

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every gate kind of the results format is named by the gate suite: a new
// gate changes GateSuite, so resumed sweeps gate their records again.
func TestGateSuiteNamesEveryGate(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "../internal/results/record.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	ast.Inspect(f, func(x ast.Node) bool {
		vs, ok := x.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range vs.Names {
			if !strings.HasPrefix(name.Name, "Gate") || i >= len(vs.Values) {
				continue
			}
			lit, ok := vs.Values[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				continue
			}
			kind, _ := strconv.Unquote(lit.Value)
			n++
			if !slices.Contains(gateKinds, kind) {
				t.Errorf("results.%s (%q) is not in the gate suite (plan/gatesuite.go)", name.Name, kind)
			}
		}
		return true
	})
	if n < 6 {
		t.Fatalf("found %d gate kinds in record.go; the parse no longer sees them", n)
	}
	if !strings.Contains(GateSuite, "inputs uniform") {
		t.Errorf("GateSuite %q does not name the input sets", GateSuite)
	}
}
