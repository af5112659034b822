package dispatch

import (
	"math"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// invRecord is a configuration of fixShape1 at nkv with samples about
// median, its class in the CLASS define ("" none).
func invRecord(variant, class string, splits, nkv int, median float64) results.Record {
	r := fixRecord(fixShape1, nkv, fixSamples{cfg: fixConfig{variant: variant, kernel: variant, splits: splits}, ns: noisy(median, uint64(nkv+splits))})
	if class != "" {
		r.Config.Defines = append(r.Config.Defines, results.Define{Name: "CLASS", Value: class})
	}
	return r
}

func classDefine(r *results.Record) (string, bool) {
	v, ok := r.Config.Define("CLASS")
	return v, ok
}

// TestBuildInvariant: the invariant table keeps, per shape, the arms of
// the cheapest class; the price rows set the fastest invariant
// configuration and the table's arm against the fastest overall.
func TestBuildInvariant(t *testing.T) {
	var recs []results.Record
	for _, n := range []int{1024, 8192} {
		short := n == 1024
		pick := func(a, b float64) float64 {
			if short {
				return a
			}
			return b
		}
		recs = append(recs,
			invRecord("u", "", 32, n, 900),
			invRecord("x1", "X", 16, n, pick(1000, 3000)),
			invRecord("x2", "X", 64, n, pick(3000, 1000)),
			invRecord("y", "Y", 32, n, 1200))
	}
	it, err := BuildInvariant(recs, nil, Options{}, classDefine)
	if err != nil {
		t.Fatal(err)
	}
	if got := it.Free.Shapes[0].Ranges; len(got) != 1 || got[0].Variant != "u" {
		t.Fatalf("unconstrained: %+v", got)
	}
	st := it.Fixed.Shapes[0]
	if len(st.Ranges) != 2 || st.Ranges[0].Variant != "x1" || st.Ranges[1].Variant != "x2" {
		t.Fatalf("invariant ranges %+v, want x1 then x2", st.Ranges)
	}
	if c := it.Class[shapeLabel(st.key())]; c != "X" {
		t.Errorf("class %q, want X", c)
	}
	if len(it.Price) != 2 {
		t.Fatalf("price rows %+v", it.Price)
	}
	for _, r := range it.Price {
		near := func(x, want float64) bool { return math.Abs(x-want) < 1e-6 }
		if !near(r.FastestNS, 900) || !near(r.InvariantNS, 1000) || !near(r.TableNS, 1000) || r.Fastest == "" || r.Invariant == "" || r.TableArm != r.Invariant {
			t.Errorf("nkv %d: %+v", r.NKV, r)
		}
	}
	if g, n := it.TableCost(); n != 2 || math.Abs(g-1000.0/900) > 1e-6 {
		t.Errorf("table cost %g over %d", g, n)
	}

	// No configuration classed: no invariant table, the price rows say so.
	it, err = BuildInvariant(recs, nil, Options{}, func(*results.Record) (string, bool) { return "", false })
	if err != nil || it.Fixed != nil || it.Price[0].InvariantNS != 0 || it.Price[0].Invariant != "" {
		t.Errorf("nothing classed: %v, %+v", err, it)
	}
}
