package plan

import (
	"slices"
	"testing"

	"github.com/ktune/ktune/variants"
)

// TestDefectsPlan plans experiments/defects.yaml: every planted defect and
// the control, at both lengths; the grid-reading kernel is one gate group
// over its lengths and carries its grid expressions; every point gets
// replay lengths although the spec asks for the cold probe only.
func TestDefectsPlan(t *testing.T) {
	p, err := Build(load(t, "../experiments/defects.yaml", variants.Builtins()), "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Skipped) != 0 {
		t.Errorf("skips: %+v", p.Skipped)
	}
	perVariant := map[string][]*Point{}
	for _, pt := range p.Points {
		perVariant[pt.Config.Variant] = append(perVariant[pt.Config.Variant], pt)
		if pt.CaptureNKV != 1 || len(pt.ReplayNKV) == 0 || slices.Max(pt.ReplayNKV) != 32768 {
			t.Errorf("%s nkv %d: capture %d, replays %v", pt.Config.Variant, pt.Config.NKV, pt.CaptureNKV, pt.ReplayNKV)
		}
		if len(pt.Probes) != 1 || pt.Probes[0] != "cold" {
			t.Errorf("%s: probes %v", pt.Config.Variant, pt.Probes)
		}
		if !slices.Contains(pt.GateNKV, 1641) {
			t.Errorf("%s: no gate length past 1024: %v", pt.Config.Variant, pt.GateNKV)
		}
	}
	for _, v := range []string{"d2", "nkvgrid", "state", "skipnewest", "ftz", "readpast", "race",
		"mmaf", "writeinput", "writepast", "stalenan", "memo", "readpastend", "longchunk", "warpsync"} {
		pts := perVariant[v]
		if len(pts) != 2 {
			t.Errorf("%s: %d points, want 2", v, len(pts))
			continue
		}
		if pts[0].GateKey != pts[1].GateKey {
			t.Errorf("%s: two gate keys over nkv", v)
		}
		if (pts[0].Geometry != nil) != (v == "nkvgrid") {
			t.Errorf("%s: geometry %v", v, pts[0].Geometry)
		}
		if pts[0].Config.NKV <= pts[0].Config.Splits {
			t.Errorf("%s: the nkv axis must start above SPLITS (%d ≤ %d)", v, pts[0].Config.NKV, pts[0].Config.Splits)
		}
	}
	if g := perVariant["nkvgrid"][0].Config.Grid; g[0] != 7 { // cdiv(1641, 256)
		t.Errorf("nkvgrid grid at 1641: %v", g)
	}
	if b := perVariant["race"][0].Config.Block; b[0] != 128 {
		t.Errorf("race block %v", b)
	}
}
