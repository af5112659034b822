package plan

import (
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// TestKVTypePoints: bf16 and fp8e4m3 shapes get their own defines and
// tolerance; the ABI's attn_partial takes kv_scale last for fp8e4m3 only
// (after out and counters when fused); kv_scale moves the hash.
func TestKVTypePoints(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: kv
shapes:
  - {name: h, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}
  - {name: b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: bf16}
  - {name: f, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: fp8e4m3}
  - {name: g, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: fp8e4m3, kv_scale: head}
axes: {nkv: [512], SPLITS: [16]}
variants: [{name: m, kernel: mma}, {name: mf, kernel: mmaf}]
gates: {max_abs: 5e-3, fp8e4m3: {max_abs: 5e-2, max_rel: 0.2}}
`), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 8 {
		t.Fatalf("%d points, skips %+v", len(p.Points), p.Skipped)
	}
	hashes := map[string]bool{}
	for _, pt := range p.Points {
		c := pt.Config
		hashes[pt.Hash] = true
		def := func(n string) string { v, _ := c.Define(n); return v }
		_, bf := c.Define("KV_BF16")
		_, f8 := c.Define("KV_FP8")
		fp8 := c.Shape.KVDtype == "fp8e4m3"
		if def("KV_F16") != map[bool]string{true: "1", false: "0"}[c.Shape.KVDtype == "f16"] || bf != (c.Shape.KVDtype == "bf16") || f8 != fp8 {
			t.Errorf("%s %s: defines %v", c.Variant, c.Shape.Name, c.Defines)
		}
		if bf && def("KV_BF16") != "1" || f8 && def("KV_FP8") != "1" {
			t.Errorf("%s %s: defines %v", c.Variant, c.Shape.Name, c.Defines)
		}
		args := pt.Launches[0].Args
		last := args[len(args)-1].String()
		if fp8 != (last == "kv_scale") {
			t.Errorf("%s %s: partial args %v", c.Variant, c.Shape.Name, args)
		}
		if fp8 && pt.Source.Fused && args[len(args)-2].String() != "counters" {
			t.Errorf("%s %s: fused args %v: kv_scale must follow out, counters", c.Variant, c.Shape.Name, args)
		}
		for _, l := range pt.Launches[1:] {
			if slices.ContainsFunc(l.Args, func(a abi.Arg) bool { return a.Name == "kv_scale" }) {
				t.Errorf("%s: the combine takes kv_scale", c.Variant)
			}
		}
		want := Tolerance{MaxAbs: 5e-3, MaxRel: 2e-2, NMSE: 1e-6}
		if fp8 {
			want = Tolerance{MaxAbs: 5e-2, MaxRel: 0.2, NMSE: 1e-6}
		}
		if pt.Tol != want {
			t.Errorf("%s %s: tolerance %+v, want %+v", c.Variant, c.Shape.Name, pt.Tol, want)
		}
		if fp8 && c.Shape.KVScale == "" {
			t.Errorf("%s %s: no kv_scale in the shape", c.Variant, c.Shape.Name)
		}
	}
	if len(hashes) != 8 {
		t.Errorf("%d distinct hashes for 8 points", len(hashes))
	}
	// Complete gives a hand-built fp8 point the same signature.
	i := slices.IndexFunc(p.Points, func(pt *Point) bool { return pt.Config.Shape.KVDtype == "fp8e4m3" && !pt.Source.Fused })
	q := &Point{Config: p.Points[i].Config}
	if err := Complete(q); err != nil {
		t.Fatal(err)
	}
	if got := q.Launches[0].Args; got[len(got)-1].Name != "kv_scale" {
		t.Errorf("Complete: %v", got)
	}
}
