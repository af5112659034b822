package report

import (
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// With 3 samples a side, a change of 2x is not "~": the test could never
// have rejected equality, and compare says so with "?".
func TestCompareFewSamplesIsNotSame(t *testing.T) {
	var old []results.Record
	for _, r := range loadH200(t, "slice.jsonl") {
		if r.Landed {
			for i := range r.Probes {
				r.Probes[i].SamplesNS = r.Probes[i].SamplesNS[:3]
			}
			old = append(old, r)
		}
	}
	c, err := Compare(old, scaledVariant(old, "d2", 2))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rows) == 0 {
		t.Fatal("no rows")
	}
	for _, r := range c.Rows {
		if !r.Powerless || r.Delta() != "?" {
			t.Errorf("%s nkv=%d %s: delta %q, powerless %v; want \"?\"", r.Config, r.NKV, r.Probe, r.Delta(), r.Powerless)
		}
	}
}
