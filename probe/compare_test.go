package probe

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

func poisoned(words int) []byte {
	b := make([]byte, 4*words)
	for i := 0; i < words; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], poison)
	}
	return b
}

func put(b []byte, word int, v float32) {
	binary.LittleEndian.PutUint32(b[4*word:], math.Float32bits(v))
}

func TestWrittenGate(t *testing.T) {
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
	g := writtenGate(7, 9, outputs{partial: partial, out: out}, slots, hd)
	if !g.Pass || g.DiffBytes != 0 || g.FirstDiff != -1 || g.NKV != 7 || g.Seed != 9 {
		t.Fatalf("fully written: %+v", g)
	}

	// Slot 1 forgot dim 2 of its accumulator; out[4] unwritten.
	binary.LittleEndian.PutUint32(partial[4*(1*pstr+4+2):], poison)
	binary.LittleEndian.PutUint32(out[4*4:], poison)
	g = writtenGate(7, 9, outputs{partial: partial, out: out}, slots, hd)
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
	g = writtenGate(7, 9, outputs{partial: partial, out: out}, slots, hd)
	if g.Pass || g.Buffer != "out" || g.FirstDiff != 16 || g.DiffBytes != 4 {
		t.Errorf("out hole: %+v", g)
	}
	// A declared lse is part of what a launch writes: with partial and
	// out complete, its one unwritten row fails the gate.
	put(out, 4, 1)
	lse := poisoned(3)
	put(lse, 0, 1)
	put(lse, 2, 1)
	g = writtenGate(7, 9, outputs{partial: partial, out: out, lse: lse}, slots, hd)
	if g.Pass || g.Buffer != "lse" || g.FirstDiff != 4 || g.DiffBytes != 4 || !strings.Contains(g.Detail, "1 lse") {
		t.Errorf("lse hole: %+v", g)
	}
	put(lse, 1, 1)
	if g = writtenGate(7, 9, outputs{partial: partial, out: out, lse: lse}, slots, hd); !g.Pass {
		t.Errorf("lse written: %+v", g)
	}
}

// TestOutputsGate: the byte gates compare lse after partial and out, and
// name the first buffer that differs.
func TestOutputsGate(t *testing.T) {
	a := outputs{partial: []byte{1, 2}, out: []byte{3, 4}, lse: []byte{5, 6, 7, 8}}
	b := outputs{partial: []byte{1, 2}, out: []byte{3, 4}, lse: []byte{5, 6, 7, 9}}
	g := outputsGate(results.GateDeterminism, 9, 1, a, b, "why")
	if g.Pass || g.Buffer != "lse" || g.FirstDiff != 3 || !strings.HasPrefix(g.Detail, "why: ") {
		t.Errorf("lse differs: %+v", g)
	}
	b.lse[3], b.out[0] = 8, 0
	if g = outputsGate(results.GateDeterminism, 9, 1, a, b, "why"); g.Pass || g.Buffer != "out" {
		t.Errorf("out differs: %+v", g)
	}
	b.out[0] = 3
	if g = outputsGate(results.GateDeterminism, 9, 1, a, b, "why"); !g.Pass {
		t.Errorf("equal: %+v", g)
	}
	// A run that read no lse where the other did differs.
	b.lse = nil
	if g = outputsGate(results.GateDeterminism, 9, 1, a, b, "why"); g.Pass || g.Buffer != "lse" {
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
	pair := func(p, o, l byte) outputs { return outputs{partial: []byte{p}, out: []byte{o}, lse: []byte{l}} }
	g = outputsGate(results.GateReplay, 5, 1, pair(1, 3, 5), pair(2, 4, 6), why)
	if g.Pass || g.Buffer != "partial" || !strings.HasPrefix(g.Detail, why+": ") {
		t.Errorf("outputsGate: %+v", g)
	}
	g = outputsGate(results.GateReplay, 5, 1, pair(1, 3, 5), pair(1, 4, 6), why)
	if g.Pass || g.Buffer != "out" {
		t.Errorf("outputsGate out: %+v", g)
	}
	g = outputsGate(results.GateReplay, 5, 1, pair(1, 3, 5), pair(1, 3, 6), why)
	if g.Pass || g.Buffer != "lse" {
		t.Errorf("outputsGate lse: %+v", g)
	}
	if g = outputsGate(results.GateReplay, 5, 1, pair(1, 3, 5), pair(1, 3, 5), why); !g.Pass || g.Buffer != "out" {
		t.Errorf("identical: %+v", g)
	}
}

func TestToleranceGate(t *testing.T) {
	b := oracle.Bounds{MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6}
	g := toleranceGate(29, 1, oracle.Metrics{MaxAbs: 1e-4, MaxRel: 1e-3, NMSE: 1e-9}, b)
	if !g.Pass || g.Detail != "" || g.MaxAbs != 1e-4 {
		t.Errorf("within bounds: %+v", g)
	}
	g = toleranceGate(29, 1, oracle.Metrics{MaxAbs: 3e-3, MaxRel: 1e-3, NMSE: 1e-9, NaNs: 2, Outside: 3, Worst: 1.5}, b)
	if g.Pass || !strings.Contains(g.Detail, "2 NaN/Inf outputs, 3 outputs outside |err| <= 0.002 + 0.02*|ref| (worst 1.5x") {
		t.Errorf("failing: %+v", g)
	}
}

func TestGateAndReplayLengths(t *testing.T) {
	got := gateNKVs([]int{1, 29, 52, 512, 1641, 29, 0}, 600)
	want := []int{1, 29, 52, 512}
	if len(got) != len(want) {
		t.Fatalf("gateNKVs = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("gateNKVs = %v, want %v", got, want)
		}
	}
	if got := gateNKVs([]int{512}, 64); len(got) != 1 || got[0] != 64 {
		t.Errorf("nothing fits: %v, want [64]", got)
	}
}

func TestClockArithmetic(t *testing.T) {
	if got := clockMHz(1_980_000, 1_000_000); got != 1980 {
		t.Errorf("clockMHz = %v", got)
	}
	if clockMHz(5, 0) != 0 {
		t.Error("zero time")
	}
	// 75% of 1980 is 1485.
	if got := throttled([]float64{1980, 1500, 1484, 900}, 1980); got != 2 {
		t.Errorf("throttled = %d, want 2", got)
	}
	if got := occupancy(8, 256, 2048); got != 1 {
		t.Errorf("occupancy = %v", got)
	}
	if got := occupancy(16, 32, 2048); got != 0.25 {
		t.Errorf("occupancy = %v", got)
	}
}

// TestPointGeometry: the probe launches what the plan resolved, the ABI's
// default included (the plan is its one home).
func TestPointGeometry(t *testing.T) {
	p := planned(t, abiSpec, nil)
	g := pointGeometry(p.Points[0])
	if g.grid != [3]int{8, 28, 16} || g.block != [3]int{32, 1, 1} || g.cgrid != [3]int{28, 16, 1} || g.cblock != [3]int{128, 1, 1} || len(g.steps) != 2 {
		t.Errorf("d2: %+v", g)
	}
}

func TestFailedGates(t *testing.T) {
	gs := []results.Gate{
		{Kind: "written", NKV: 1, Pass: true},
		{Kind: "tolerance", NKV: 29, Detail: "max_abs 1 > 0.002"},
		{Kind: "bitwise", NKV: 29}, {Kind: "bitwise", NKV: 52}, {Kind: "replay", NKV: 1},
	}
	got := failedGates(gs)
	want := "4 gate(s) failed: tolerance at nkv 29: max_abs 1 > 0.002; bitwise at nkv 29; bitwise at nkv 52; 1 more"
	if got != want {
		t.Errorf("failedGates = %q\nwant %q", got, want)
	}
}
