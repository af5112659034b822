package probe

import (
	"fmt"
	"strconv"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/dispatch"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

// tableRecord is a measured record of mma at the fake point's shape
// (batch 4): SPLITS splits, SPLITSIZE size when size > 0, cold samples
// about medianNS.
func tableRecord(name string, splits, size, nkv int, medianNS float64) results.Record {
	defs := abi.Defines{{Name: "SPLITS", Value: strconv.Itoa(splits)}, {Name: "MINROWS", Value: "16"}, {Name: "WARPS", Value: "8"}}
	if size > 0 {
		defs = append(defs, abi.Define{Name: "SPLITSIZE", Value: strconv.Itoa(size)})
	}
	shape := withBatch(fakePoint(name, nkv), 4).Config.Shape
	ns := make([]float64, 15)
	for i := range ns {
		ns[i] = medianNS * (1 + 0.001*float64(i-7))
	}
	return results.Record{
		Schema: results.SchemaVersion, Hash: fmt.Sprintf("%s-%d", name, nkv),
		Config: results.Config{Spec: "t", Variant: name, Kernel: "mma", Defines: defs.Sorted(), Shape: shape, NKV: nkv, Splits: splits,
			Grid: [3]int{splits, 2, 4}, Block: [3]int{256, 1, 1}},
		Env: results.Env{Device: "fake"}, Status: results.StatusOK,
		Gates:  []results.Gate{{Kind: results.GateTolerance, Pass: true}},
		Probes: []results.Measurement{{Probe: results.ProbeCold, SamplesNS: ns, Summary: results.Summary{N: 15, Median: ns[7], Min: ns[0], Max: ns[14]}}},
	}
}

// armsOf are fake points of a table's ranges at its one shape: the
// configuration each range launches, computed as the fake computes mma
// (fakeChunk: SPLITSIZE, else nkv over SPLITS).
func armsOf(t *testing.T, tab *dispatch.Table) []*plan.Point {
	t.Helper()
	if len(tab.Shapes) != 1 {
		t.Fatalf("%d shapes", len(tab.Shapes))
	}
	var out []*plan.Point
	for _, r := range tab.Shapes[0].Ranges {
		size := 0
		for _, d := range r.Defines {
			if d.Name == "SPLITSIZE" {
				size, _ = strconv.Atoi(d.Value)
			}
		}
		out = append(out, armPoint(r.Variant, r.Splits, size))
	}
	return out
}

// TestInvariantTablePasses: from records of mma split by count (fastest)
// and by a fixed size, the unconstrained table's arms (16 and 64 splits by
// count) fail the invariance gate across arms, and the table tune
// --invariant builds (one class: SPLITSIZE 16, 16 and 32 splits) passes.
func TestInvariantTablePasses(t *testing.T) {
	var recs []results.Record
	for _, nkv := range []int{32, 64, 128, 256} {
		short := nkv <= 64
		pick := func(a, b float64) float64 {
			if short {
				return a
			}
			return b
		}
		recs = append(recs,
			tableRecord("count16", 16, 0, nkv, pick(1000, 3000)),
			tableRecord("count64", 64, 0, nkv, pick(3000, 1000)),
			tableRecord("fixed16", 16, 16, nkv, pick(1100, 3300)),
			tableRecord("fixed32", 32, 16, nkv, pick(3300, 1100)))
	}
	class := func(r *results.Record) (string, bool) {
		defs := map[string]string{}
		for _, d := range r.Config.Defines {
			defs[d.Name] = d.Value
		}
		return variants.InvarianceClass(r.Config.Kernel, defs)
	}
	it, err := dispatch.BuildInvariant(recs, nil, dispatch.Options{}, class)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tab  *dispatch.Table
		want results.Status
	}{{"unconstrained", it.Free, results.StatusGateFailed}, {"invariant", it.Fixed, results.StatusOK}} {
		arms := armsOf(t, c.tab)
		if len(arms) != 2 || arms[0].Config.Splits == arms[1].Config.Splits {
			t.Fatalf("%s table: arms %d, want two of different SPLITS", c.name, len(arms))
		}
		own := arms[0]
		p := invariantPoint(own.Config.Variant, own.Config.Splits, splitSizeOf(own), []spec.Invariance{spec.InvariantArm}, arms[1])
		rec := run(t, fakeBackend(t, newFakeDevice()), p)
		if rec.Status != c.want {
			t.Errorf("%s table (%s against %s): %s, failed %v", c.name, own.Config.Variant, arms[1].Config.Variant, rec.Status, failedKinds(rec.Gates))
		}
	}
	if g, n := it.TableCost(); n != 4 || g < 1.09 || g > 1.11 {
		t.Errorf("invariant table costs %.3f over %d nkv, want 1.10 over 4", g, n)
	}
}

func splitSizeOf(p *plan.Point) int {
	v, _ := p.Config.Define("SPLITSIZE")
	n, _ := strconv.Atoi(v)
	return n
}
