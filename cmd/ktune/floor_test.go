package main

import (
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/dispatch"
)

// impossibleSamples sets every sample of the named probe ("" for every probe) of
// the slice's records that match to 1e-300 ns: positive, finite, and a
// time no kernel can take.
func impossibleSamples(recs []jrec, match func(jrec) bool, probe string) int {
	n := 0
	for _, r := range recs {
		if !match(r) {
			continue
		}
		for _, p := range probesOf(r) {
			m := p.(jrec)
			if probe != "" && m["probe"] != probe {
				continue
			}
			s := m["samples_ns"].([]any)
			for k := range s {
				s[k] = 1e-300
			}
			n++
		}
	}
	return n
}

// TestGateBelowFloor: r4's hot samples at SPLITS=64, nkv 512 set to
// 1e-300 ns made the regressing candidate "faster by 100.0%" and the gate
// passed.
func TestGateBelowFloor(t *testing.T) {
	recs := readJRecs(t, h200Slice)
	if impossibleSamples(recs, func(r jrec) bool {
		return variantOf(r) == "r4" && splitsOf(r) == "64" && nkvOf(r) == "512"
	}, "hot") == 0 {
		t.Fatal("the slice has no r4 SPLITS=64 record at nkv 512")
	}
	f := writeJRecs(t, t.TempDir(), "x.jsonl", recs)
	stdout, stderr, code := runCmd("gate", "--candidate", "r4", f)
	if code == exitOK {
		t.Errorf("samples below the physical floor: exit 0\n%s%s", stdout, stderr)
	}
	if !strings.Contains(stderr, "below the physical floor") {
		t.Errorf("the exclusion is not said:\n%s", stderr)
	}
}

// TestTuneBelowFloor: r4 SPLITS=8, the slowest configuration at long
// contexts, was chosen for nkv ≥ 16384 once its cold samples read 1e-300
// ns.
func TestTuneBelowFloor(t *testing.T) {
	recs := readJRecs(t, h200Slice)
	long := func(r jrec) bool {
		n := nkvOf(r)
		return variantOf(r) == "r4" && splitsOf(r) == "8" && len(n) >= 5 && n >= "16384"
	}
	if impossibleSamples(recs, long, "cold") == 0 {
		t.Fatal("the slice has no r4 SPLITS=8 record at nkv ≥ 16384")
	}
	f := writeJRecs(t, t.TempDir(), "x.jsonl", recs)
	var stderr strings.Builder
	tab, err := tuneTable(&stderr, []string{f}, dispatch.Options{})
	if err == nil {
		for _, st := range tab.Shapes {
			for _, rg := range st.Ranges {
				for _, d := range rg.Defines {
					if d.Name == "SPLITS" && d.Value == "8" && (rg.MaxNKV == 0 || rg.MaxNKV > 16384) {
						t.Errorf("tune chose %s SPLITS=8 over [%d, %d) on impossible samples", rg.Variant, rg.MinNKV, rg.MaxNKV)
					}
				}
			}
		}
	}
	if !strings.Contains(stderr.String(), "below the physical floor") {
		t.Errorf("the exclusion is not said:\n%s", stderr.String())
	}
	// And the report's "what to ship" says so too.
	if _, serr, _ := runCmd("report", "--json", f); !strings.Contains(serr, "below the physical floor") {
		t.Errorf("report: the impossible record is not excluded:\n%s", serr)
	}
}
