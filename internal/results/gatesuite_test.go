package results

import "testing"

// TestGateSuiteKey: the order a suite lists its kinds and input sets in
// does not change its key; a kind, an input set, an opt-in part or the
// revision more or less does; a text of another form is its own key.
func TestGateSuiteKey(t *testing.T) {
	base := "r1: written tolerance bitwise replay; inputs uniform peaked"
	same := []string{
		"r1: replay bitwise tolerance written; inputs peaked uniform",
		"r1: tolerance written replay bitwise; inputs uniform peaked",
	}
	for _, s := range same {
		if GateSuiteKey(s) != GateSuiteKey(base) {
			t.Errorf("%q and %q: keys differ", s, base)
		}
	}
	other := []string{
		"r2: written tolerance bitwise replay; inputs uniform peaked",
		"r1: written tolerance bitwise; inputs uniform peaked",
		"r1: written tolerance bitwise replay stale; inputs uniform peaked",
		"r1: written tolerance bitwise replay; inputs uniform",
		"r1: written tolerance bitwise replay; inputs uniform peaked; invariance batch 1 4",
		"",
		"r1 written tolerance",
	}
	for _, s := range other {
		if GateSuiteKey(s) == GateSuiteKey(base) {
			t.Errorf("%q has the key of %q", s, base)
		}
	}
	withOptIn := "r1: a b; inputs x; invariance batch 1 4"
	if GateSuiteKey("r1: b a; inputs x; invariance batch 1 4") != GateSuiteKey(withOptIn) {
		t.Error("an opt-in part's suite: order of kinds changed its key")
	}
	if GateSuiteKey("r1: a b; inputs x; invariance batch 1 8") == GateSuiteKey(withOptIn) {
		t.Error("another opt-in context: same key")
	}
	if got := GateSuiteKey("not a suite"); got != "not a suite" {
		t.Errorf("a text of another form: key %q", got)
	}
}
