package dispatch

import (
	"path/filepath"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// Over every committed H200 results file, as `ktune tune --from
// experiments/results/h200/*.jsonl` reads them, no range may name a
// reference measurement (PyTorch SDPA: no launch geometry) or a fault
// fixture: the header would tell an engine to launch what it cannot.
func TestCommittedResultsPickOnlyLaunchableKernels(t *testing.T) {
	files, err := filepath.Glob("../../experiments/results/h200/*.jsonl")
	if err != nil || len(files) == 0 {
		t.Fatalf("no committed results: %v", err)
	}
	in, err := Load(files...)
	if err != nil {
		t.Fatal(err)
	}
	// The variants that only the fault fixtures hold (d2 appears there
	// too, under its own name, and elsewhere as the real kernel).
	fixture, real := map[string]bool{}, map[string]bool{}
	refs := 0
	for _, r := range in.Records {
		if r.Config.Spec == "faults" {
			fixture[r.Config.Variant] = true
		} else {
			real[r.Config.Variant] = true
		}
		if r.Config.Kernel == results.ReferenceKernel {
			refs++
		}
	}
	if refs == 0 || len(fixture) == 0 {
		t.Fatalf("%d reference records and %d fixture variants: the test needs both", refs, len(fixture))
	}
	tab, err := Build(in.Records, in.Sources, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tab.Shapes {
		for _, r := range s.Ranges {
			if r.Kernel == results.ReferenceKernel || r.Grid == [3]int{} || r.Block == [3]int{} {
				t.Errorf("%s [%d, %d): %s (kernel %s, grid %v) is a reference measurement", s.Shape.Name, r.MinNKV, r.MaxNKV, r.Variant, r.Kernel, r.Grid)
			}
			if fixture[r.Variant] && !real[r.Variant] {
				t.Errorf("%s [%d, %d): %s is a fault fixture", s.Shape.Name, r.MinNKV, r.MaxNKV, r.Variant)
			}
		}
	}
}

// A configuration that failed a gate in one record is not chosen on the
// strength of another record of it that passed.
func TestOnceFailedNeverChosen(t *testing.T) {
	recs, _, err := results.ReadFile("../../experiments/results/h200/slice.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	tab, err := Build(recs, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	winner := tab.Shapes[0].Ranges[len(tab.Shapes[0].Ranges)-1]
	// The same configuration at another nkv, recorded as gate_failed.
	var bad results.Record
	for _, r := range recs {
		if r.Config.Variant == winner.Variant && r.Config.Grid == winner.Grid && r.Config.NKV != winner.Picks[0].NKV {
			bad = r
			break
		}
	}
	if bad.Hash == "" {
		t.Fatal("no other record of the winning configuration")
	}
	bad.Hash, bad.Status, bad.Probes = "failed-"+bad.Hash, results.StatusGateFailed, nil
	bad.Gates = append([]results.Gate{{Kind: results.GateBitwise, NKV: bad.Config.NKV, Pass: false}}, bad.Gates...)
	tab2, err := Build(append(recs, bad), nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range tab2.Shapes[0].Ranges {
		if r.Variant == winner.Variant && r.Grid == winner.Grid && equalDefines(r.Defines, winner.Defines) {
			t.Errorf("[%d, %d) still picks %s, which failed a gate at nkv %d", r.MinNKV, r.MaxNKV, r.Variant, bad.Config.NKV)
		}
	}
}

func equalDefines(a, b []results.Define) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
