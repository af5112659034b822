package probe

import (
	"math"
	"reflect"
	"testing"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/plan"
)

// testWorkspace has distinct fake device addresses, so that a test can
// tell which buffer went into which argument.
func testWorkspace() *workspace {
	return &workspace{q: 0x1000, k: 0x2000, v: 0x3000, positions: 0x4000, partial: 0x5000, out: 0x6000, scratch: 0x7000}
}

func TestLaunchesPlainAndFused(t *testing.T) {
	c := sevenB(16, 4096, 8)
	g := geometry{grid: [3]int{8, 4, 16}, block: [3]int{256, 1, 1}, cgrid: [3]int{28, 16, 1}, cblock: [3]int{128, 1, 1}, shared: 0}
	w := testWorkspace()
	partial, combine := &cuda.Function{}, &cuda.Function{}
	scale := float32(1 / math.Sqrt(128))
	abi := []any{w.q, w.k, w.v, w.positions, w.partial, int32(28), int32(4), int32(4096), scale}

	plain := launches(&kernelPair{partial: partial, combine: combine}, &c, g, w)
	if len(plain) != 2 {
		t.Fatalf("plain pair: %d launches, want partial and combine", len(plain))
	}
	if p := plain[0]; p.fn != partial || p.grid != g.grid || p.block != g.block || !reflect.DeepEqual(p.args, abi) {
		t.Errorf("plain partial: fn %p grid %v block %v args %v, want %p %v %v %v", p.fn, p.grid, p.block, p.args, partial, g.grid, g.block, abi)
	}
	if cb := plain[1]; cb.fn != combine || cb.grid != g.cgrid || cb.block != g.cblock || cb.shared != 0 ||
		!reflect.DeepEqual(cb.args, []any{w.partial, w.out, int32(28)}) {
		t.Errorf("plain combine: fn %p grid %v block %v args %v", cb.fn, cb.grid, cb.block, cb.args)
	}

	fused := launches(&kernelPair{partial: partial, fused: true}, &c, g, w)
	if len(fused) != 1 {
		t.Fatalf("fused kernel: %d launches, want the partial alone", len(fused))
	}
	want := append(append([]any(nil), abi...), w.out, w.scratch)
	if p := fused[0]; p.fn != partial || p.name != "attn_partial" || p.grid != g.grid || p.block != g.block || !reflect.DeepEqual(p.args, want) {
		t.Errorf("fused partial: fn %p grid %v block %v args %v, want args %v", p.fn, p.grid, p.block, p.args, want)
	}
	// The fused list must not have grown the plain one's argument slice.
	if again := launches(&kernelPair{partial: partial, combine: combine}, &c, g, w); len(again[0].args) != len(abi) {
		t.Errorf("plain partial after a fused list: %d arguments", len(again[0].args))
	}
}

func TestEntryPoints(t *testing.T) {
	for _, c := range []struct {
		src  plan.Source
		want []string
	}{
		{plan.Source{}, []string{"attn_partial", "attn_combine"}},
		{plan.Source{Partial: "p", Combine: "c"}, []string{"p", "c"}},
		{plan.Source{Fused: true}, []string{"attn_partial"}},
		{plan.Source{Partial: "p", Combine: "c", Fused: true}, []string{"p"}},
	} {
		if got := entryPoints(c.src); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%+v: %v, want %v", c.src, got, c.want)
		}
	}
}

// TestLayoutScratch: one 4-byte counter per (sequence, KV head), 16-byte
// aligned, counted in the total, the same for every kernel of a shape.
func TestLayoutScratch(t *testing.T) {
	c := sevenB(16, 4096, 8)
	l, err := layoutOf(&c)
	if err != nil {
		t.Fatal(err)
	}
	if l.Scratch != 16*4*4 {
		t.Errorf("scratch %d bytes, want 16 sequences × 4 KV heads × 4", l.Scratch)
	}
	if l.Total() != l.Q+l.K+l.V+l.Positions+l.Partial+l.Out+l.Scratch {
		t.Errorf("total %d leaves the scratch out", l.Total())
	}
	c = sevenB(1, 4096, 8)
	c.Shape.KVHeads = 1
	if l, _ = layoutOf(&c); l.Scratch != 16 {
		t.Errorf("one counter: %d bytes, want 16 (aligned)", l.Scratch)
	}
}
