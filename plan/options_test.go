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
	if got := optionGateNKV(base, s, 8); !slices.Equal(got, base) {
		t.Errorf("plain shape: %v", got)
	}
	s.Attention = abi.Attention{Window: 100, QLen: 4}
	got := optionGateNKV(base, s, 8)
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
