package gate

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

func poisoned(words int) []byte {
	b := make([]byte, 4*words)
	for i := 0; i < words; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], Poison)
	}
	return b
}

func put(b []byte, word int, v float32) {
	binary.LittleEndian.PutUint32(b[4*word:], math.Float32bits(v))
}

func TestWritten(t *testing.T) {
	const slots, hd = 3, 4
	pstr := abi.PartialStride(hd)
	partial := poisoned(slots * pstr)
	out := poisoned(5)
	// Write everything the ABI requires; leave the padding p[2..3] alone.
	for s := 0; s < slots; s++ {
		put(partial, s*pstr, float32(math.Inf(-1))) // an idle split's max
		put(partial, s*pstr+1, 0)
		for i := 0; i < hd; i++ {
			put(partial, s*pstr+4+i, 0)
		}
	}
	for i := 0; i < 5; i++ {
		put(out, i, 1)
	}
	g := Written(7, 9, Outputs{Partial: partial, Out: out}, slots, hd)
	if !g.Pass || g.DiffBytes != 0 || g.FirstDiff != -1 || g.NKV != 7 || g.Seed != 9 {
		t.Fatalf("fully written: %+v", g)
	}

	// Slot 1 forgot dim 2 of its accumulator; out[4] unwritten.
	binary.LittleEndian.PutUint32(partial[4*(1*pstr+4+2):], Poison)
	binary.LittleEndian.PutUint32(out[4*4:], Poison)
	g = Written(7, 9, Outputs{Partial: partial, Out: out}, slots, hd)
	if g.Pass {
		t.Fatal("holes passed")
	}
	if g.Buffer != "partial" || g.FirstDiff != 4*(pstr+6) || g.DiffBytes != 8 {
		t.Errorf("evidence %+v: want partial, first byte %d, 8 bytes", g, 4*(pstr+6))
	}
	if !strings.Contains(g.Detail, "slot 1 word 6") {
		t.Errorf("detail %q does not locate the hole", g.Detail)
	}
	// With partial complete, out's hole is reported.
	put(partial, pstr+6, 0)
	g = Written(7, 9, Outputs{Partial: partial, Out: out}, slots, hd)
	if g.Pass || g.Buffer != "out" || g.FirstDiff != 16 || g.DiffBytes != 4 {
		t.Errorf("out hole: %+v", g)
	}
	// A declared lse is part of what a launch writes: with partial and
	// out complete, its one unwritten row fails the gate.
	put(out, 4, 1)
	lse := poisoned(3)
	put(lse, 0, 1)
	put(lse, 2, 1)
	g = Written(7, 9, Outputs{Partial: partial, Out: out, LSE: lse}, slots, hd)
	if g.Pass || g.Buffer != "lse" || g.FirstDiff != 4 || g.DiffBytes != 4 || !strings.Contains(g.Detail, "1 lse") {
		t.Errorf("lse hole: %+v", g)
	}
	put(lse, 1, 1)
	if g = Written(7, 9, Outputs{Partial: partial, Out: out, LSE: lse}, slots, hd); !g.Pass {
		t.Errorf("lse written: %+v", g)
	}
}

// TestSame: the byte gates compare lse after partial and out, and
// name the first buffer that differs.
func TestSame(t *testing.T) {
	a := Outputs{Partial: []byte{1, 2}, Out: []byte{3, 4}, LSE: []byte{5, 6, 7, 8}}
	b := Outputs{Partial: []byte{1, 2}, Out: []byte{3, 4}, LSE: []byte{5, 6, 7, 9}}
	g := Same(results.GateDeterminism, 9, 1, a, b, "why")
	if g.Pass || g.Buffer != "lse" || g.FirstDiff != 3 || !strings.HasPrefix(g.Detail, "why: ") {
		t.Errorf("lse differs: %+v", g)
	}
	b.LSE[3], b.Out[0] = 8, 0
	if g = Same(results.GateDeterminism, 9, 1, a, b, "why"); g.Pass || g.Buffer != "out" {
		t.Errorf("out differs: %+v", g)
	}
	b.Out[0] = 3
	if g = Same(results.GateDeterminism, 9, 1, a, b, "why"); !g.Pass {
		t.Errorf("equal: %+v", g)
	}
	// A run that read no lse where the other did differs.
	b.LSE = nil
	if g = Same(results.GateDeterminism, 9, 1, a, b, "why"); g.Pass || g.Buffer != "lse" {
		t.Errorf("one lse missing: %+v", g)
	}
}

func TestDiffBytes(t *testing.T) {
	cases := []struct {
		a, b         []byte
		n, firstDiff int
	}{
		{[]byte{1, 2, 3}, []byte{1, 2, 3}, 0, -1},
		{[]byte{1, 2, 3}, []byte{1, 9, 8}, 2, 1},
		{[]byte{1, 2}, []byte{1, 2, 3, 4}, 2, 2},
		{nil, nil, 0, -1},
	}
	for _, c := range cases {
		n, first := diffBytes(c.a, c.b)
		if n != c.n || first != c.firstDiff {
			t.Errorf("diffBytes(%v, %v) = %d, %d, want %d, %d", c.a, c.b, n, first, c.n, c.firstDiff)
		}
	}
	g := diffGate(results.GateBitwise, 52, 1, "out", []byte{0, 0, 0, 0}, []byte{0, 0, 1, 0})
	if g.Pass || g.DiffBytes != 1 || g.FirstDiff != 2 || g.Buffer != "out" || g.Kind != results.GateBitwise {
		t.Errorf("diffGate: %+v", g)
	}
	// The byte gates report partial first, since out derives from it, and
	// lse after out.
	why := "graph captured at nkv 100, replayed at 5"
	pair := func(p, o, l byte) Outputs { return Outputs{Partial: []byte{p}, Out: []byte{o}, LSE: []byte{l}} }
	g = Same(results.GateReplay, 5, 1, pair(1, 3, 5), pair(2, 4, 6), why)
	if g.Pass || g.Buffer != "partial" || !strings.HasPrefix(g.Detail, why+": ") {
		t.Errorf("Same: %+v", g)
	}
	g = Same(results.GateReplay, 5, 1, pair(1, 3, 5), pair(1, 4, 6), why)
	if g.Pass || g.Buffer != "out" {
		t.Errorf("Same out: %+v", g)
	}
	g = Same(results.GateReplay, 5, 1, pair(1, 3, 5), pair(1, 3, 6), why)
	if g.Pass || g.Buffer != "lse" {
		t.Errorf("Same lse: %+v", g)
	}
	if g = Same(results.GateReplay, 5, 1, pair(1, 3, 5), pair(1, 3, 5), why); !g.Pass || g.Buffer != "out" {
		t.Errorf("identical: %+v", g)
	}
}

func TestTolerance(t *testing.T) {
	b := oracle.Bounds{MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6}
	g := Tolerance(29, 1, oracle.Metrics{MaxAbs: 1e-4, MaxRel: 1e-3, NMSE: 1e-9}, b)
	if !g.Pass || g.Detail != "" || g.MaxAbs != 1e-4 {
		t.Errorf("within bounds: %+v", g)
	}
	g = Tolerance(29, 1, oracle.Metrics{MaxAbs: 3e-3, MaxRel: 1e-3, NMSE: 1e-9, NaNs: 2, Outside: 3, Worst: 1.5}, b)
	if g.Pass || !strings.Contains(g.Detail, "2 NaN/Inf outputs, 3 outputs outside |err| <= 0.002 + 0.02*|ref| (worst 1.5x") {
		t.Errorf("failing: %+v", g)
	}
}

func TestGateAndReplayLengths(t *testing.T) {
	got := NKVs([]int{1, 29, 52, 512, 1641, 29, 0}, 600)
	want := []int{1, 29, 52, 512}
	if len(got) != len(want) {
		t.Fatalf("NKVs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("NKVs = %v, want %v", got, want)
		}
	}
	if got := NKVs([]int{512}, 64); len(got) != 1 || got[0] != 64 {
		t.Errorf("nothing fits: %v, want [64]", got)
	}
}

func TestGateOrder(t *testing.T) {
	n := []int{9, 1, 100, 8}
	if got := order(n, 0, 1); !slices.Equal(got, []int{1, 8, 9, 100}) {
		t.Errorf("ascending: %v", got)
	}
	if got := order(n, 1, 1); !slices.Equal(got, []int{100, 9, 8, 1}) {
		t.Errorf("descending: %v", got)
	}
	a, b2 := order(n, 2, 1), order(n, 2, 1)
	if !slices.Equal(a, b2) {
		t.Errorf("shuffle not seeded: %v %v", a, b2)
	}
	sorted := slices.Clone(a)
	slices.Sort(sorted)
	if !slices.Equal(sorted, []int{1, 8, 9, 100}) {
		t.Errorf("shuffle lost lengths: %v", a)
	}
	if !slices.Equal(n, []int{9, 1, 100, 8}) {
		t.Error("order changed its argument")
	}
}

func TestGateLog(t *testing.T) {
	var l Log
	l.Add(results.Gate{Kind: "tolerance", Inputs: "uniform", Pass: true, NKV: 1})
	l.Add(results.Gate{Kind: "tolerance", Inputs: "uniform", Pass: true, NKV: 2})
	l.Add(results.Gate{Kind: "tolerance", Inputs: "peaked", Pass: true, NKV: 1, NMSE: 1e-9})
	l.Add(results.Gate{Kind: "tolerance", Inputs: "peaked", Pass: true, NKV: 2, NMSE: 1e-8})
	l.Add(results.Gate{Kind: "tolerance", Inputs: "peaked", Pass: true, NKV: 3, NMSE: 1e-10})
	l.Add(results.Gate{Kind: "tolerance", Inputs: "peaked", Pass: false, NKV: 4})
	var got []string
	for _, g := range l.Gates {
		got = append(got, g.Inputs+string(rune('0'+g.NKV)))
	}
	if want := []string{"uniform1", "uniform2", "peaked2", "peaked4"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
}

func TestLengths(t *testing.T) {
	// Sequence 0 keeps the exact gate length; later ones shrink, never
	// below 1 nor below q_len; batch 1 is just nkv.
	shape := func(batch, qlen int) abi.Shape {
		s := abi.Shape{Batch: batch}
		s.Attention.QLen = qlen
		return s
	}
	for _, c := range []struct {
		nkv, batch, qlen int
		want             []int
	}{
		{100, 4, 0, []int{100, 88, 75, 63}},
		{1, 3, 0, []int{1, 1, 1}},
		{29, 1, 0, []int{29}},
		{100, 4, 80, []int{100, 88, 80, 80}},
	} {
		if got := Lengths(c.nkv, shape(c.batch, c.qlen)); !slices.Equal(got, c.want) {
			t.Errorf("Lengths(%d, batch %d, q_len %d) = %v, want %v", c.nkv, c.batch, c.qlen, got, c.want)
		}
	}
}

// TestLSEBaseHint: an lse off from the reference by log2(e) everywhere
// (a base-2 kernel under lse: ln) or by ln 2 (the converse) is named; a
// factor held by all but one output, other errors, the declared base's
// own factor and references near zero alone are not; the gate still
// fails with the hint.
func TestLSEBaseHint(t *testing.T) {
	ref := []float64{3.5, -2.25, 0.0001, 10.75, 7}
	scaled := func(f float64) []float32 {
		out := make([]float32, len(ref))
		for i, r := range ref {
			out[i] = float32(r * f)
		}
		out[2] = 5 // near zero in the reference: not compared
		return out
	}
	for _, c := range []struct {
		name     string
		got      []float32
		declared abi.LSEBase
		want     string
	}{
		{"base 2 declared ln", scaled(math.Log2E), abi.LSENatural, "the kernel writes lse in base 2, the spec declares lse: ln"},
		{"base e declared log2", scaled(math.Ln2), abi.LSELog2, "the kernel writes lse in base e, the spec declares lse: log2"},
		{"base 2 declared log2", scaled(math.Log2E), abi.LSELog2, ""},
		{"another factor", scaled(1.3), abi.LSENatural, ""},
		{"one output off", func() []float32 { g := scaled(math.Log2E); g[4] = 7; return g }(), abi.LSENatural, ""},
		{"a NaN", func() []float32 { g := scaled(math.Log2E); g[0] = float32(math.NaN()); return g }(), abi.LSENatural, ""},
		{"only near-zero references", []float32{1, 2}, abi.LSENatural, ""},
	} {
		r := ref
		if c.name == "only near-zero references" {
			r = []float64{0, 0.0005}
		}
		got := lseBaseHint(c.got, r, c.declared)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: hint %q, want %q", c.name, got, c.want)
		}
	}
	p := &plan.Point{Tol: plan.Tolerance{MaxAbs: 2e-3, MaxRel: 0.02, NMSE: 1e-6}}
	p.Config.Shape.Attention.LSE = abi.LSENatural
	raw := make([]byte, 4*len(ref))
	for i, v := range scaled(math.Log2E) {
		put(raw, i, v)
	}
	g, err := lseTolerance(p, 5, raw, ref)
	if err != nil || g.Pass || !strings.Contains(g.Detail, "base 2") {
		t.Errorf("a base-2 lse under lse: ln: %+v (%v), want a failed gate naming the base", g, err)
	}
}
