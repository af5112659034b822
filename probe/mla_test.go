package probe

import (
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/plan"
)

// mlaPoint is fakePoint with K rows 24 wide and V 16 wide: V the first
// 16 channels of K (latent) or a buffer of its own (split), in bshd or
// bhsd.
func mlaPoint(variant string, layout abi.MLALayout, kv abi.KVLayout) *plan.Point {
	p := fakePoint(variant, 100)
	p.Config.Shape.HeadDim = 24
	p.Config.Shape.Attention = abi.Attention{MLA: abi.MLA{DV: 16, Layout: layout}, QLen: 2}
	p.IO = abi.IO{Q: abi.F32, Out: abi.F32, KVLayout: kv, Partial: abi.PartialOpaque}
	p.GateNKV = append(p.GateNKV, 2, 3)
	p.Hash += "-mla-" + string(layout) + string(kv)
	p.GateKey += "-mla-" + string(layout) + string(kv)
	return p
}

// TestFakeMLA: a kernel computing MLA right passes every gate with K
// uploaded head_dim wide and V dv wide (latent: none, read from K), in
// both contiguous layouts; one whose score stops at dv fails tolerance.
func TestFakeMLA(t *testing.T) {
	t.Parallel()
	for _, layout := range []abi.MLALayout{abi.MLALatent, abi.MLASplit} {
		for _, kv := range []abi.KVLayout{abi.BSHD, abi.BHSD} {
			name := string(layout) + "/" + string(kv)
			f := newFakeDevice()
			f.models["good"] = fakeModel{options: &fakeOptions{}}
			f.models["dot-dv"] = fakeModel{options: &fakeOptions{mlaDotDV: true}}
			b := fakeBackend(t, f)
			rec := run(t, b, mlaPoint("good", layout, kv))
			if rec.Status != "ok" {
				t.Fatalf("%s: good mla kernel: %s %s, failed %v", name, rec.Status, rec.Error, failedKinds(rec.Gates))
			}
			kinds := map[string]bool{}
			for _, g := range rec.Gates {
				kinds[string(g.Kind)] = true
			}
			for _, k := range []string{"tolerance", "stale", "readonly"} {
				if !kinds[k] {
					t.Errorf("%s: no %s gate ran (%v)", name, k, kinds)
				}
			}
			bad := run(t, b, mlaPoint("dot-dv", layout, kv))
			if got := strings.Join(failedKinds(bad.Gates), " "); !strings.Contains(got, "tolerance/") {
				t.Errorf("%s: score over dv only: failed %q, want a tolerance gate", name, got)
			}
		}
	}
}
