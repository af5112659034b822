package spec

import (
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// TestKVTypes: the new KV types parse, fp8e4m3's kv_scale defaults to
// tensor, and gates overrides apply to their type only, field by field.
func TestKVTypes(t *testing.T) {
	s, err := Parse("kv.yaml", []byte(`
name: m
shapes:
  - {name: a, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: bf16}
  - {name: b, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: fp8e4m3}
  - {name: c, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: fp8e4m3, kv_scale: head}
axes: {SPLITS: [4], nkv: [100]}
variants: [{name: u, kernel: testdata/kernels/mine.cu}]
gates: {max_abs: 5e-3, max_rel: 5e-2, nmse: 1e-4, bf16: {max_abs: 2e-2, nmse: 1e-3}, fp8e4m3: {max_rel: 0.2}}
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := []string{s.Shapes[0].KVScale, s.Shapes[1].KVScale, s.Shapes[2].KVScale}; got[0] != "" || got[1] != "tensor" || got[2] != "head" {
		t.Errorf("kv_scale %q", got)
	}
	if r := s.Shapes[2].Shape; r.KVScale != "head" {
		t.Errorf("results shape %+v", r)
	}
	if b := s.Shapes[1].KVBytes(); b != 2*1*100*2*64 && b != 2*float64(s.Shapes[1].Capacity)*2*64 {
		t.Errorf("fp8 KVBytes %v: want one byte an element", b)
	}
	for _, c := range []struct {
		kv   string
		want Bounds
	}{
		{"f16", Bounds{5e-3, 5e-2, 1e-4}},
		{"bf16", Bounds{2e-2, 5e-2, 1e-3}},
		{"fp8e4m3", Bounds{5e-3, 0.2, 1e-4}},
	} {
		if got := s.Gates.For(abi.Dtype(c.kv)); got != c.want {
			t.Errorf("gates for %s: %+v, want %+v", c.kv, got, c.want)
		}
	}
}
