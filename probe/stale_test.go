package probe

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// largestFinite is the largest finite value of t, found by decoding every
// code of a type narrower than 32 bits.
func largestFinite(t *kvtype.Type) float64 {
	if t.Bytes == 4 {
		return math.MaxFloat32
	}
	var m float64
	for b := range uint32(1) << (8 * t.Bytes) {
		if v := t.Decode(b); !math.IsInf(v, 0) && !math.IsNaN(v) {
			m = max(m, v)
		}
	}
	return m
}

// TestStaleBitsFinite: under the declaration that the cache is finite
// past each length, every stale pattern of every KV type decodes to a
// finite value, ±the type's largest and ±half of it among them (fp8e4m3
// also ±240), and every finite pattern of the full set is kept: the
// declaration takes out the NaN and Inf, nothing else. Without it the
// patterns hold NaN, and Inf where the type has one.
func TestStaleBitsFinite(t *testing.T) {
	for _, kt := range kvtype.All {
		t.Run(kt.Name, func(t *testing.T) {
			finite := staleBits(kt, plan.StaleFinite)
			var values []float64
			for _, b := range finite {
				v := kt.Decode(b)
				if math.IsInf(v, 0) || math.IsNaN(v) {
					t.Errorf("finite pattern %#x decodes to %v", b, v)
				}
				values = append(values, v)
			}
			m := largestFinite(kt)
			want := []float64{m, -m, m / 2, -m / 2}
			if kt == kvtype.FP8E4M3 {
				want = append(want, 240, -240)
			}
			for _, w := range want {
				if !slices.Contains(values, w) {
					t.Errorf("finite patterns %v lack %v", values, w)
				}
			}
			var nan, inf bool
			for _, b := range staleBits(kt, "") {
				v := kt.Decode(b)
				nan = nan || math.IsNaN(v)
				inf = inf || math.IsInf(v, 0)
				if !math.IsNaN(v) && !math.IsInf(v, 0) && !slices.Contains(finite, b) {
					t.Errorf("the full set's finite pattern %#x (%v) is not among the finite ones", b, v)
				}
			}
			if !nan || !inf && kt != kvtype.FP8E4M3 {
				t.Errorf("the full set holds NaN %v, Inf %v", nan, inf)
			}
			// What the gate writes: each row of patternRows holds its
			// pattern in every element.
			rows := patternRows(kt, int64(4*kt.Bytes), plan.StaleFinite)
			if len(rows) != len(finite) {
				t.Fatalf("%d rows for %d patterns", len(rows), len(finite))
			}
			for i, row := range rows {
				for e := range 4 {
					if got := kt.Bits(row, e); got != finite[i] {
						t.Errorf("row %d element %d: %#x, want %#x", i, e, got, finite[i])
					}
				}
			}
		})
	}
}

// TestFakeStaleDeclared: a kernel that weights the rows past the length
// by zero fails the stale gate over NaN and Inf, and passes it where the
// spec declares the cache finite there, each stale verdict and the
// record naming the declaration; a kernel whose sums take rows past the
// length fails it under the declaration too.
func TestFakeStaleDeclared(t *testing.T) {
	declared := plan.StaleWaiver{Rows: plan.StaleFinite, Reason: "cleared at allocation"}
	f := newFakeDevice()
	f.models["zero"] = fakeModel{zeroTail: 16}
	f.models["past"] = fakeModel{pastLength: 3}
	b := fakeBackend(t, f)

	plain := run(t, b, fakePoint("zero", 100))
	if plain.Status != results.StatusGateFailed || !slices.Contains(failedKinds(plain.Gates), "stale/uniform") {
		t.Fatalf("zero weights over NaN: status %s, failed %v", plain.Status, failedKinds(plain.Gates))
	}
	for _, g := range plain.Gates {
		if g.Kind == results.GateStale && g.Waiver != "" {
			t.Errorf("a stale gate without a declaration names %q", g.Waiver)
		}
	}

	p := fakePoint("zero", 100)
	p.Hash, p.GateKey, p.Stale = "zero-declared", "gate-zero-declared", declared
	rec := run(t, b, p)
	if rec.Status != results.StatusOK {
		t.Fatalf("zero weights, finite rows: status %s, failed %v", rec.Status, failedKinds(rec.Gates))
	}
	n := 0
	for _, g := range rec.Gates {
		if g.Kind != results.GateStale {
			continue
		}
		n++
		if g.Waiver != declared.String() {
			t.Errorf("stale gate at nkv %d: waiver %q, want %q", g.NKV, g.Waiver, declared.String())
		}
	}
	if n == 0 {
		t.Fatal("no stale gate ran")
	}
	if !slices.Contains(rec.Waivers, declared.String()) {
		t.Errorf("record waivers %q lack the declaration", rec.Waivers)
	}

	p = fakePoint("past", 100)
	p.Stale = declared
	rec = run(t, b, p)
	found := false
	for _, g := range rec.Gates {
		if g.Kind == results.GateStale && !g.Pass {
			found = true
			if !strings.Contains(g.Detail, "large finite values") || g.Waiver != declared.String() {
				t.Errorf("failed stale gate: detail %q, waiver %q", g.Detail, g.Waiver)
			}
		}
	}
	if !found {
		t.Errorf("a kernel summing rows past the length passed the finite stale gate: failed %v", failedKinds(rec.Gates))
	}
}

// TestFakeStaleDeclarationTouchesStaleAlone: the declaration changes the
// stale gate and nothing else. For kernels with and without defects,
// each run on a device of its own, every other verdict of the gates' run
// is the same with and without it (the checks after the timing probes
// are left out: a point that passes only under the declaration is
// timed), the stale gate runs at the same lengths, and a stale gate that
// passed over NaN and Inf passes over finite rows too.
func TestFakeStaleDeclarationTouchesStaleAlone(t *testing.T) {
	type verdict struct {
		kind         results.GateKind
		nkv          int
		inputs       string
		pass         bool
		maxAbs, nmse float64
		diff         int
	}
	verdicts := func(rec results.Record) (others []verdict, stale map[int]bool) {
		stale = map[int]bool{}
		for _, g := range rec.Gates {
			switch g.Kind {
			case results.GateStale:
				stale[g.NKV] = g.Pass
				continue
			case results.GateTimed, results.GateLaunches:
				continue
			}
			others = append(others, verdict{g.Kind, g.NKV, g.Inputs, g.Pass, g.MaxAbs, g.NMSE, g.DiffBytes})
		}
		return others, stale
	}
	for _, c := range []struct {
		name string
		m    fakeModel
	}{
		{"good", fakeModel{}},
		{"zero", fakeModel{zeroTail: 16}},
		{"past", fakeModel{pastLength: 3}},
		{"readpast", fakeModel{readPast: true}},
		{"offset", fakeModel{offset: 0.01}},
	} {
		t.Run(c.name, func(t *testing.T) {
			backend := func() *Backend {
				f := newFakeDevice()
				f.models[c.name] = c.m
				return fakeBackend(t, f)
			}
			plain := run(t, backend(), fakePoint(c.name, 100))
			p := fakePoint(c.name, 100)
			p.Stale = plan.StaleWaiver{Rows: plan.StaleFinite, Reason: "test"}
			declared := run(t, backend(), p)
			po, ps := verdicts(plain)
			do, ds := verdicts(declared)
			if !slices.Equal(po, do) {
				t.Errorf("the declaration changed other verdicts:\n%v\n%v", po, do)
			}
			if len(ps) == 0 || len(ps) != len(ds) {
				t.Fatalf("stale gates at %v and %v", ps, ds)
			}
			for nkv, pass := range ps {
				if got, ok := ds[nkv]; !ok || pass && !got {
					t.Errorf("nkv %d: stale passed %v over NaN and Inf, %v (ran %v) over finite rows", nkv, pass, got, ok)
				}
			}
		})
	}
}
