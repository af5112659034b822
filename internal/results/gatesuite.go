package results

import (
	"slices"
	"strings"
)

// GateSuiteKey is the identity of a gate suite text (Record.GateSuite):
// the checks a record's gates ran, whatever order the text lists them in.
// A suite is "rN: KIND...; inputs SET...[; OPT-IN CONTEXTS]...": two texts
// with the same revision, the same kinds, the same input sets and the same
// opt-in parts name one suite, so that listing the checks in another order
// neither makes a resumed sweep gate its records again nor makes gate warn
// that two sides rest on different gates. A text not of that form is its
// own key.
func GateSuiteKey(s string) string {
	parts := strings.Split(s, "; ")
	rev, kinds, ok := strings.Cut(parts[0], ": ")
	if !ok || !strings.HasPrefix(rev, "r") || len(parts) < 2 || !strings.HasPrefix(parts[1], "inputs ") {
		return s
	}
	sorted := func(text string) string {
		f := strings.Fields(text)
		slices.Sort(f)
		return strings.Join(f, " ")
	}
	rest := slices.Clone(parts[2:])
	slices.Sort(rest)
	return strings.Join(append([]string{rev + ": " + sorted(kinds), "inputs " + sorted(strings.TrimPrefix(parts[1], "inputs "))}, rest...), "; ")
}
