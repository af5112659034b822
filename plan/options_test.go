package plan

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// A shape with a window or q_len > 1 gates at the lengths that put the
// window's edge and the new tokens on split boundaries; a plain shape's
// lengths are untouched.
func TestOptionGateNKV(t *testing.T) {
	s := abi.Shape{Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: abi.F16, Batch: 1, Capacity: 4096}
	base := []int{1, 29, 512}
	if got := optionGateNKV(base, s, 8, 0); !slices.Equal(got, base) {
		t.Errorf("plain shape: %v", got)
	}
	s.Attention = abi.Attention{Window: 100, QLen: 4}
	got := optionGateNKV(base, s, 8, 0)
	if got[0] != 4 {
		t.Errorf("lengths %v: want none below q_len 4", got)
	}
	for _, n := range []int{115, 5} { // a window length and a causal one at 8 splits
		if !slices.Contains(got, n) {
			t.Errorf("lengths %v: want %d", got, n)
		}
	}
}

// TestOptionSpecsPlan plans every spec of experiments/options. The MLA
// specs' points keep the 576-wide K and 512-wide V of DeepSeek's cache,
// pass dv as 512, and read V from K's rows (latent: no v argument) or
// from a V buffer (split).
func TestOptionSpecsPlan(t *testing.T) {
	paths, err := filepath.Glob("../experiments/options/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no option specs: %v", err)
	}
	mla := 0
	for _, path := range paths {
		s, err := spec.Load(path, variants.Builtins())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p, err := Build(s, "sm_90")
		if err != nil || len(p.Points) == 0 {
			t.Fatalf("%s: %d points, %v", path, len(p.Points), err)
		}
		for _, pt := range p.Points {
			a := pt.Config.Shape.Attention
			if a.MLA.DV == 0 {
				continue
			}
			mla++
			if pt.Config.Shape.HeadDim != 576 || a.MLA.DV != 512 {
				t.Errorf("%s %s: head_dim %d, dv %d", path, pt.Config.Variant, pt.Config.Shape.HeadDim, a.MLA.DV)
			}
			var names []string
			for _, arg := range pt.Launches[0].Args {
				names = append(names, arg.Name)
			}
			if slices.Contains(names, "v") == a.Latent() {
				t.Errorf("%s %s (%s): arguments %v", path, pt.Config.Variant, a.MLA.Layout, names)
			}
			dv, err := abi.ScalarValue(abi.Arg{Name: "dv", Type: abi.ArgI32}, abi.Dims{Shape: pt.Config.Shape, Splits: pt.Config.Splits})
			if err != nil || dv != int32(512) {
				t.Errorf("%s: dv passed as %v (%v)", path, dv, err)
			}
		}
	}
	if mla == 0 {
		t.Error("no mla point among the option specs")
	}
}

// TestPagedCausalGateNKV: a paged q_len-4 point gates where the new tokens
// straddle a page boundary, and where they straddle a page and a split
// boundary at once; a contiguous point of the same shape, and one of
// one-row pages, gate at no such length beyond the split crossings.
func TestPagedCausalGateNKV(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: paged-causal
shapes:
  - {name: q4, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16, batch: 1, capacity: 8192, q_len: 4}
axes: {nkv: [1024], SPLITS: [8]}
variants:
  - name: paged
    kernel: ../../kernels/testdata/options.cu
    defines: {PAGE_SIZE: [1, 16]}
    io: {q: f32, out: f32, kv_layout: paged, page_size: PAGE_SIZE, partial: opaque}
    launches:
      - {entry: attn_options, grid: [heads, 4, batch], block: [32], args: [q, k, v, seqlens, out, block_table, max_pages, heads, kv_heads, q_len, scale]}
  - name: contiguous
    kernel: ../../kernels/testdata/options.cu
    io: {q: f32, out: f32, kv_layout: bshd, partial: opaque}
    launches:
      - {entry: attn_options, grid: [heads, 4, batch], block: [32], args: [q, k, v, seqlens, out, heads, kv_heads, capacity, q_len, scale]}
`), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	// Rows n−4 .. n−1 are the new tokens.
	crosses := func(n, every int) bool { return (n-4)/every != (n-1)/every }
	seen := map[int]bool{}
	for _, pt := range p.Points {
		seen[pt.PageSize] = true
		var page, both []int
		for _, n := range pt.GateNKV {
			chunk := (n + 7) / 8
			if crosses(n, 16) && !crosses(n, chunk) && (n-1)/chunk < 8 {
				page = append(page, n)
			}
			if crosses(n, 16) && crosses(n, chunk) && (n-1)/chunk < 8 {
				both = append(both, n)
			}
		}
		// 18 (new tokens 14..17: the page boundary at 16, the 3-row
		// chunks' at 15) and 513, 514 (from 64 rows per split on); 17
		// is a split boundary's length anyway.
		want := []int{18, 513, 514}
		for _, n := range want {
			if got := slices.Contains(pt.GateNKV, n); got != (pt.PageSize == 16) {
				t.Errorf("%s page size %d: gate length %d present %v (lengths %v)", pt.Config.Variant, pt.PageSize, n, got, pt.GateNKV)
			}
		}
		if pt.PageSize == 16 && (len(page) < 2 || len(both) < 1) {
			t.Errorf("page size 16: lengths %v cross a page alone at %v and a page and a split at %v", pt.GateNKV, page, both)
		}
	}
	if !seen[0] || !seen[1] || !seen[16] {
		t.Errorf("page sizes planned: %v", seen)
	}
}
