package variants

import "testing"

// TestInvarianceClass: mma's forms split alike and compute alike exactly
// when their classes are equal; a kernel that claims nothing is not
// invariant.
func TestInvarianceClass(t *testing.T) {
	base := map[string]string{"SPLITS": "128", "SPLITSIZE": "1024", "WARPS": "8", "MINROWS": "128", "PF": "0", "CW": "2", "HEAD_DIM": "128"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range base {
			m[a] = b
		}
		m[k] = v
		return m
	}
	c0, ok := InvarianceClass("mma", base)
	if !ok {
		t.Fatal("mma SPLITSIZE: not invariant")
	}
	for _, c := range []struct {
		k, v string
		same bool
	}{
		{"SPLITS", "256", true}, {"MINROWS", "1024", true}, {"PF", "1", true}, {"PDL", "1", true}, {"CW", "1", true},
		{"KVSM", "1", true}, {"PTE", "1", true},
		{"CW", "0", false}, {"WARPS", "4", false}, {"SPLITSIZE", "512", false}, {"NR", "2", false},
	} {
		got, ok := InvarianceClass("mma", with(c.k, c.v))
		if !ok || (got == c0) != c.same {
			t.Errorf("%s=%s: class %q (ok %v) against %q: want same %v", c.k, c.v, got, ok, c0, c.same)
		}
	}
	// Split by count: SPLITS and MINROWS decide the rows of each split.
	count := map[string]string{"SPLITS": "33", "MINROWS": "128", "WARPS": "8"}
	a, _ := InvarianceClass("mma", count)
	count["SPLITS"] = "64"
	if b, _ := InvarianceClass("mma", count); a == b {
		t.Errorf("split by count: SPLITS 33 and 64 share class %q", a)
	}
	for _, k := range []string{"mmaf", "d2", "nosuch"} {
		if c, ok := InvarianceClass(k, base); ok {
			t.Errorf("%s: class %q claimed", k, c)
		}
	}
}
