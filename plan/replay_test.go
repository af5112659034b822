package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
)

func TestReplayNKV(t *testing.T) {
	for _, c := range []struct {
		gates            []int
		splits, capacity int
		want             []int
	}{
		// Up across the boundaries, past the longest gate length to the
		// capacity, then back below the longest gate length.
		{[]int{1, 29, 1641}, 32, 32768, []int{31, 33, 65, 1641, 32768, 33}},
		{[]int{1, 29, 1641}, 32, 1641, []int{31, 33, 65, 1641, 33}},
		{[]int{100}, 64, 100, []int{63, 65, 100, 65}},
		{[]int{1}, 1, 1, []int{1}},
	} {
		capture, got := replayNKV(c.gates, c.splits, c.capacity)
		if capture != 1 || !slices.Equal(got, c.want) {
			t.Errorf("replayNKV(%v, %d, %d) = %d, %v; want 1, %v", c.gates, c.splits, c.capacity, capture, got, c.want)
		}
		for _, n := range got {
			if n < 1 || n > c.capacity {
				t.Errorf("replay length %d outside 1..%d", n, c.capacity)
			}
		}
	}
}

// TestGridReadingNKVSharesOneGateKey: the points of a kernel whose grid
// reads nkv are one compiled kernel, so they share one gate verdict — the
// replay gate's failure at one length is the failure of every length.
// graph: never reaches the point and its key.
func TestGridReadingNKVSharesOneGateKey(t *testing.T) {
	text := `
name: g
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16, capacity: 40000}]
axes: {nkv: [1, 29, 1641, 32768], SPLITS: [32]}
variants:
  - {name: grid, kernel: user.cu, grid: ["cdiv(nkv, 256)", heads, batch]}
  - {name: never, kernel: user.cu, grid: ["cdiv(nkv, 256)", heads, batch], graph: never}
  - {name: plain, kernel: user.cu}
`
	s, err := spec.Parse("testdata/inline.yaml", []byte(text), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]map[string]bool{}
	hashes := map[string]bool{}
	for _, pt := range p.Points {
		v := pt.Config.Variant
		if keys[v] == nil {
			keys[v] = map[string]bool{}
		}
		keys[v][pt.GateKey] = true
		hashes[pt.Hash] = true
		if pt.NeverCaptured != (v == "never") {
			t.Errorf("%s nkv %d: NeverCaptured %v", v, pt.Config.NKV, pt.NeverCaptured)
		}
		// The record says the replay gate did not run, and why.
		if slices.Contains(pt.WaiverTexts(), NeverCapturedText) != (v == "never") {
			t.Errorf("%s nkv %d: waivers %q", v, pt.Config.NKV, pt.WaiverTexts())
		}
		if pt.CaptureNKV != 1 || len(pt.ReplayNKV) == 0 || slices.Max(pt.ReplayNKV) != 40000 {
			t.Errorf("%s nkv %d: capture %d, replays %v", v, pt.Config.NKV, pt.CaptureNKV, pt.ReplayNKV)
		}
	}
	for v, k := range keys {
		if len(k) != 1 {
			t.Errorf("%s: %d gate keys over its nkv axis, want 1", v, len(k))
		}
	}
	if len(hashes) != len(p.Points) {
		t.Errorf("%d hashes for %d points", len(hashes), len(p.Points))
	}
	for k := range keys["grid"] {
		if keys["never"][k] {
			t.Error("graph: never does not change the gate key")
		}
	}
}

// eagerLaunches is a step launched fresh every step whose second launch's
// shared memory and argument read nkv, as vLLM's eager v2 path sizes its
// reduce from the step's longest sequence.
const eagerLaunches = `
name: e
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16, batch: 2, capacity: 8192}]
axes: {nkv: [512, 8192], P: [512], SPLITS: [1]}
gates: {nkv: [1, 513, 4000]}
variants:
  - name: eager
    kernel: user.cu
    graph: never
    io: {q: f16, out: f16, partial: opaque}
    launches:
      - {entry: part, grid: [heads, batch, "cdiv(nkv, P)"], block: [128], args: [q, k, v, seqlens]}
      - {entry: reduce, grid: [heads, batch], block: [128], shared: "2 * cdiv(nkv, P) * 4", args: [out, seqlens, "i32:ARG"]}
`

// TestEagerArgumentsReadTheLength: under graph: never an argument may read
// nkv; the points of such a kernel share one gate verdict; and the
// argument is evaluated at every length the gates launch it at, so one
// that cannot be (a division by zero at gate length 513) is refused at
// plan time, naming the length, not found on the device. Without graph:
// never the spec refuses it.
func TestEagerArgumentsReadTheLength(t *testing.T) {
	p := buildInline(t, strings.Replace(eagerLaunches, "ARG", "cdiv(nkv, P)", 1))
	if len(p.Points) != 2 || p.Points[0].GateKey != p.Points[1].GateKey {
		t.Errorf("%d points; an eager kernel's lengths share one gate key", len(p.Points))
	}
	g := p.Points[0].Geometry
	if g == nil || !g.Args || len(g.Steps) != 2 {
		t.Fatalf("geometry %+v, want both launches and the arguments", g)
	}
	steps, err := g.StepsAt(4000, p.Points[0].Launches)
	if err != nil || steps[0].Grid != [3]int{8, 2, 8} || steps[1].Shared != 64 || p.Points[0].Launches[1].Shared != 8 {
		t.Errorf("at nkv 4000: %+v (%v); the planned launches must stay the point's own", steps, err)
	}
	_, err = buildInlineErr(t, strings.Replace(eagerLaunches, "ARG", "4096 / (nkv - 513)", 1))
	if err == nil || !strings.Contains(err.Error(), "at nkv 513") {
		t.Errorf("an argument dividing by zero at gate length 513: %v", err)
	}
	_, err = spec.Parse("testdata/inline.yaml", []byte(strings.Replace(strings.Replace(eagerLaunches, "ARG", "cdiv(nkv, P)", 1), "    graph: never\n", "", 1)), testKernels(t))
	if err == nil || !strings.Contains(err.Error(), "reads nkv") {
		t.Errorf("a captured kernel's argument reading nkv: %v", err)
	}
}
