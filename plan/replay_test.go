package plan

import (
	"slices"
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
