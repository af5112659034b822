package probe

import (
	"reflect"
	"testing"
)

// eagerSpec is an engine's step launched fresh every step (graph: never)
// as vLLM's eager v2 path launches it: the partition grid, the reduce's
// shared memory and its partition-count argument all from the step's
// longest sequence.
const eagerSpec = `name: t
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 2, capacity: 8192}]
axes: {nkv: [512, 8192], P: [512], SPLITS: [1]}
gates: {nkv: [1, 513, 4000]}
variants:
  - name: eager
    kernel: src/eng.cu
    graph: never
    io: {q: f16, out: f16, partial: opaque}
    scratch:
      sums: {bytes: "batch * heads * cdiv(capacity, P) * 4"}
    launches:
      - entry: part
        grid: [heads, batch, "cdiv(nkv, P)"]
        block: [128]
        args: [q, k, v, seqlens, "scratch:sums", "i32:cdiv(capacity, P)"]
      - entry: reduce
        grid: [heads, batch]
        block: [128]
        shared: "2 * cdiv(nkv, P) * 4"
        args: [out, "scratch:sums", seqlens, "i32:cdiv(nkv, P)"]
`

// TestEagerLaunchesFollowTheLength: for a kernel launched fresh every
// step, every launch's grid, shared memory and arguments that read nkv
// are those of the length it is launched at, the timed launch's and each
// gate length's alike, and every length shares one gate verdict.
func TestEagerLaunchesFollowTheLength(t *testing.T) {
	p := planned(t, eagerSpec, map[string]string{"src/eng.cu": "// kernel\n"})
	if len(p.Points) != 2 {
		t.Fatalf("%d points, want 2", len(p.Points))
	}
	if p.Points[0].GateKey != p.Points[1].GateKey {
		t.Errorf("gate keys %s and %s: the lengths of one eager kernel share its gates", p.Points[0].GateKey, p.Points[1].GateKey)
	}
	pt := p.Points[0]
	if pt.Geometry == nil || !pt.Geometry.Args || len(pt.Geometry.Steps) != 2 {
		t.Fatalf("geometry %+v, want both launches' expressions and the arguments", pt.Geometry)
	}
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	w := testWorkspace()
	w.l = l
	r := &pointRun{session: session{p: pt}}
	check := func(what string, g geometry, nkv int) {
		t.Helper()
		ls, err := launches(fakeFns(pt), &pt.Config, g, w, nil)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		parts := (nkv + 511) / 512
		if ls[0].grid != [3]int{28, 2, parts} || ls[1].grid != [3]int{28, 2, 1} || ls[1].shared != 2*parts*4 {
			t.Errorf("%s at nkv %d: grids %v %v, reduce shared %d; want %d partitions", what, nkv, ls[0].grid, ls[1].grid, ls[1].shared, parts)
		}
		if got := ls[1].args[3]; !reflect.DeepEqual(got, int32(parts)) {
			t.Errorf("%s at nkv %d: the reduce's partition count %v, want %d", what, nkv, got, parts)
		}
		if got := ls[0].args[5]; !reflect.DeepEqual(got, int32(16)) {
			t.Errorf("%s at nkv %d: an argument of the capacity %v, want 16", what, nkv, got)
		}
	}
	check("the timed launch", pointGeometry(pt), 512)
	for _, n := range []int{1, 513, 4000, 8192} {
		check("a gate's launch", r.geometryAt(pointGeometry(pt), n), n)
	}
}
