package plan

import (
	"strings"
	"testing"

	"github.com/ktune/ktune/variants"
)

// TestFusedPlan: the planner marks exactly the points of fused built-ins
// (experiments/h200-fused.yaml: mmaf) as fused, without a combine entry,
// and Fused moves both the hash and the gate key.
func TestFusedPlan(t *testing.T) {
	p, err := Build(load(t, "../experiments/h200-fused.yaml", variants.Builtins()), "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Skipped) != 0 {
		t.Errorf("skips: %+v", p.Skipped)
	}
	fused := 0
	for _, pt := range p.Points {
		want := pt.Config.Kernel == "mmaf"
		if pt.Source.Fused != want {
			t.Errorf("point %d (%s, kernel %s): Fused %v", pt.Index, pt.Config.Variant, pt.Config.Kernel, pt.Source.Fused)
		}
		if want {
			fused++
			if pt.Source.Combine != "" || pt.Source.Partial != "attn_partial" || pt.Source.Name != "mma_fused.cu" {
				t.Errorf("point %d: source %s entries %q %q", pt.Index, pt.Source.Name, pt.Source.Partial, pt.Source.Combine)
			}
			if !strings.HasPrefix(pt.Config.Variant, "mmaf") {
				t.Errorf("point %d: variant %s", pt.Index, pt.Config.Variant)
			}
		} else if pt.Source.Combine != "attn_combine" {
			t.Errorf("point %d (%s): combine %q", pt.Index, pt.Config.Variant, pt.Source.Combine)
		}
	}
	if fused != 32 {
		t.Errorf("%d fused points, want 32 (2 + 1 + 1 tunings × 2 shapes × 4 lengths)", fused)
	}

	b := &builder{arch: "sm_90"}
	for _, pt := range []*Point{p.Points[0], p.Points[len(p.Points)-1]} {
		g0, h0 := b.keys(pt)
		if g0 != pt.GateKey || h0 != pt.Hash {
			t.Fatalf("point %d: keys not reproducible", pt.Index)
		}
		c := *pt
		c.Source.Fused = !pt.Source.Fused
		g, h := b.keys(&c)
		if g == g0 || h == h0 {
			t.Errorf("point %d: flipping Fused to %v keeps the gate key (%v) or the hash (%v)", pt.Index, c.Source.Fused, g == g0, h == h0)
		}
	}
}

// TestUserKernelNotFused: a user's .cu file is planned under the two-launch
// ABI.
func TestUserKernelNotFused(t *testing.T) {
	for _, pt := range build(t, "testdata/mixed.yaml").Points {
		if pt.Source.Fused {
			t.Errorf("point %d (%s): fused", pt.Index, pt.Config.Variant)
		}
	}
}
