package probe

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

// testWorkspace has distinct fake device addresses, so that a test can
// tell which buffer went into which argument.
func testWorkspace() *workspace {
	return &workspace{q: 0x1000, k: 0x2000, v: 0x3000, positions: 0x4000, partial: 0x5000, out: 0x6000, scratch: 0x7000,
		lse: 0x8000, workspace: 0x9000}
}

// planned plans a spec written into a temporary directory, with extra
// files beside it, for the sm_90 architecture.
func planned(t *testing.T, yaml string, files map[string]string) *plan.Plan {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan.Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakeFns gives each entry of a point a distinct fake function.
func fakeFns(p *plan.Point) *kernelPair {
	k := &kernelPair{fns: map[string]*cuda.Function{}}
	for _, e := range p.Source.Entries {
		k.fns[e] = &cuda.Function{}
	}
	return k
}

const abiSpec = `name: t
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 16, capacity: 4096}]
axes: {nkv: [4096], SPLITS: [8]}
variants:
  - {name: d2, kernel: d2, defines: {NR: 4}}
  - {name: mmaf, kernel: mmaf, defines: {SPLITS: [33], MINROWS: 128}}
`

// TestLaunchesABI: a built-in runs the ABI's signature, declared once in
// plan, through the one launch path: the plan's geometry, the arguments
// marshalled from the signature.
func TestLaunchesABI(t *testing.T) {
	p := planned(t, abiSpec, nil)
	w := testWorkspace()
	w.l = layout{splits: 8, kvLayout: abi.BSHD}
	scale := float32(1 / math.Sqrt(128))
	abi := []any{w.q, w.k, w.v, w.positions, w.partial, int32(28), int32(4), int32(4096), scale}

	d2 := p.Points[0]
	g := pointGeometry(d2)
	k := fakeFns(d2)
	plain, err := launches(k, &d2.Config, g, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != 2 {
		t.Fatalf("plain pair: %d launches, want partial and combine", len(plain))
	}
	if l := plain[0]; l.fn != k.fns["attn_partial"] || l.grid != [3]int{8, 28, 16} || l.block != [3]int{32, 1, 1} || !reflect.DeepEqual(l.args, abi) {
		t.Errorf("partial: grid %v block %v args %v, want args %v", l.grid, l.block, l.args, abi)
	}
	if l := plain[1]; l.fn != k.fns["attn_combine"] || l.grid != [3]int{28, 16, 1} || l.block != [3]int{128, 1, 1} || l.shared != 0 ||
		!reflect.DeepEqual(l.args, []any{w.partial, w.out, int32(28)}) {
		t.Errorf("combine: grid %v block %v args %v", l.grid, l.block, l.args)
	}
	// geometryAt's grid replaces the first launch's.
	g.grid = [3]int{1, 2, 3}
	if again, _ := launches(k, &d2.Config, g, w, nil); again[0].grid != g.grid {
		t.Errorf("first launch grid %v, want the geometry's %v", again[0].grid, g.grid)
	}

	mmaf := p.Points[1]
	w.l.splits = 33
	fused, err := launches(fakeFns(mmaf), &mmaf.Config, pointGeometry(mmaf), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(fused) != 1 {
		t.Fatalf("fused kernel: %d launches, want the partial alone", len(fused))
	}
	want := append(append([]any(nil), abi...), w.out, w.scratch)
	if l := fused[0]; l.name != "attn_partial" || !reflect.DeepEqual(l.args, want) {
		t.Errorf("fused partial: %s args %v, want %v", l.name, l.args, want)
	}
}

const declaredSpec = `name: t
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 2, capacity: 1000}]
axes: {nkv: [1000], SPLITS: [16]}
variants:
  - name: eng
    kernel: src/eng.cu
    include: [inc]
    flags: [-DENG=1]
    io: {q: f16, out: bf16, kv_layout: bhsd, partial: opaque, workspace: "batch * heads * 64"}
    launches:
      - entry: "part<__half, 4>"
        grid: [SPLITS, kv_heads, batch]
        block: [64]
        shared: 2 * head_dim * 4
        args: [q, k, v, seqlens, partial, lse, workspace, heads, kv_heads, head_dim, kv_row_stride,
               kv_head_stride, kv_batch_stride:i64, capacity:u64, scale, splits, group, "i32:-3", "u32:7", "f32:0.25", "i64:0x10"]
      - entry: fin<__half>
        grid: [heads, batch]
        block: [head_dim]
        args: [partial, lse, out, counters, positions]
`

// TestMarshalEngineSignature: every argument of a declared signature, in
// order, as the values (and so the bytes) cuLaunchKernel receives.
func TestMarshalEngineSignature(t *testing.T) {
	p := planned(t, declaredSpec, map[string]string{
		"src/eng.cu": "#include \"eng.cuh\"\n", "inc/eng.cuh": "// header\n",
	})
	pt := p.Points[0]
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	w := testWorkspace()
	w.l = l
	ls, err := launches(fakeFns(pt), &pt.Config, pointGeometry(pt), w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 2 || ls[0].name != "part<__half, 4>" || ls[1].name != "fin<__half>" {
		t.Fatalf("launches %+v", ls)
	}
	if ls[0].grid != [3]int{16, 4, 2} || ls[0].block != [3]int{64, 1, 1} || ls[0].shared != 1024 {
		t.Errorf("first launch: grid %v block %v shared %d", ls[0].grid, ls[0].block, ls[0].shared)
	}
	// bhsd: a row is head_dim elements apart, a head capacity rows.
	want := []any{w.q, w.k, w.v, w.positions + 8, w.partial, w.lse, w.workspace, int32(28), int32(4), int32(128), int32(128),
		int32(1000 * 128), int64(4 * 1000 * 128), uint64(1000), float32(1 / math.Sqrt(128)), int32(16), int32(7),
		int32(-3), uint32(7), float32(0.25), int64(16)}
	if !reflect.DeepEqual(ls[0].args, want) {
		t.Errorf("first launch args\n got %#v\nwant %#v", ls[0].args, want)
	}
	if want := []any{w.partial, w.lse, w.out, w.scratch, w.positions}; !reflect.DeepEqual(ls[1].args, want) {
		t.Errorf("second launch args %v, want %v", ls[1].args, want)
	}
	// The bytes of a few: what the kernel's parameters read.
	for _, c := range []struct {
		i    int
		want []byte
	}{
		{3, []byte{0x08, 0x40, 0, 0, 0, 0, 0, 0}},
		{12, []byte{0, 0xd0, 0x07, 0, 0, 0, 0, 0}},
		{13, []byte{0xe8, 0x03, 0, 0, 0, 0, 0, 0}},
		{17, []byte{0xfd, 0xff, 0xff, 0xff}},
		{19, []byte{0, 0, 0x80, 0x3e}},
	} {
		got, err := cuda.ArgBytes(ls[0].args[c.i])
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("argument %d bytes % x (%v), want % x", c.i, got, err, c.want)
		}
	}
	// The layout follows the io: f16 q, bf16 out, lse and workspace sized,
	// counters per query head, no partial slots for the gates.
	if l.Q != 2*28*128*2 || l.Out != 2*28*128*2 || l.Lse != 2*16*28*4 || l.Workspace != 2*28*64 || l.Scratch != 2*28*4 {
		t.Errorf("layout %+v", l)
	}
	if l.gatedSlots(pt.Config.Shape) != 0 || l.kvLayout != abi.BHSD {
		t.Errorf("opaque partial gated %d slots, kv layout %s", l.gatedSlots(pt.Config.Shape), l.kvLayout)
	}
	if w.workspace = 0; true {
		if _, err := launches(fakeFns(pt), &pt.Config, pointGeometry(pt), w, nil); err == nil {
			t.Error("a missing workspace marshalled")
		}
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
		{plan.Source{Entries: []string{"a<1>", "b", "c"}}, []string{"a<1>", "b", "c"}},
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
	// Two sets of q and outputs (the timed launches alternate), ten
	// buffers, each between two guard regions.
	if l.Total() != 2*(l.Q+l.Partial+l.Out)+l.K+l.V+l.Positions+l.Scratch+10*2*guardBytes {
		t.Errorf("total %d leaves the scratch out", l.Total())
	}
	c = sevenB(1, 4096, 8)
	c.Shape.KVHeads = 1
	if l, _ = layoutOf(&c); l.Scratch != 16 {
		t.Errorf("one counter: %d bytes, want 16 (aligned)", l.Scratch)
	}
}
