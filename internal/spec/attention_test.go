package spec

import (
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// The attention options parse into the shape (and lse into the variant),
// reach the results shape, and leave a plain shape's zero.
func TestAttentionOptions(t *testing.T) {
	s, err := Parse("opt.yaml", []byte(`
name: m
shapes:
  - {name: plain, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16}
  - {name: all, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, softcap: 30, alibi: buffer, sinks: true, window: 256, q_len: 4}
  - {name: mla, heads: 16, kv_heads: 1, head_dim: 576, kv_dtype: fp8e4m3, kv_scale: shared, mla: {dv: 512, layout: latent}}
axes: {SPLITS: [4], nkv: [100]}
variants: [{name: u, kernel: testdata/kernels/mine.cu, lse: log2}]
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	if a := s.Shapes[0].Shape.Attention; !a.IsZero() {
		t.Errorf("plain shape: %+v", a)
	}
	want := abi.Attention{Softcap: 30, ALiBi: abi.ALiBiBuffer, Sinks: true, Window: 256, QLen: 4}
	if a := s.Shapes[1].Shape.Attention; a != want {
		t.Errorf("options %+v, want %+v", a, want)
	}
	if a := s.Shapes[2].Shape; a.Attention.MLA != (abi.MLA{DV: 512, Layout: abi.MLALatent}) || a.KVScale != "shared" {
		t.Errorf("mla shape %+v", a)
	}
	if s.Variants[0].LSE != abi.LSELog2 {
		t.Errorf("variant lse %q", s.Variants[0].LSE)
	}
}
