package plan

import (
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// TestOptionPoints: a built-in that computes a shape's options is built
// with their defines (QLEN, SOFTCAP, SINKS) and its attn_partial takes
// softcap, then sinks, after the ABI's arguments (and kv_scale); a plain
// shape's point keeps the plain signature and no option define.
func TestOptionPoints(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: opts
shapes:
  - {name: plain, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: f16}
  - {name: all, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: fp8e4m3, q_len: 4, softcap: 50, sinks: true}
axes: {nkv: [512], SPLITS: [16]}
variants: [{name: m, kernel: mma, defines: {GN: 2, WN: 2}}]
gates: {max_abs: 5e-3, fp8e4m3: {max_abs: 5e-2, max_rel: 0.2}}
`), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 2 {
		t.Fatalf("%d points, skips %+v", len(p.Points), p.Skipped)
	}
	for _, pt := range p.Points {
		c := pt.Config
		var args []string
		for _, a := range pt.Launches[0].Args {
			args = append(args, a.String())
		}
		got := strings.Join(args, ",")
		q, _ := c.Define("QLEN")
		sc, _ := c.Define("SOFTCAP")
		sk, _ := c.Define("SINKS")
		switch c.Shape.Name {
		case "plain":
			if got != "q,k,v,positions,partial,heads,kv_heads,capacity,scale" || q != "" || sc != "" || sk != "" {
				t.Errorf("plain: args %s, QLEN %q SOFTCAP %q SINKS %q", got, q, sc, sk)
			}
		case "all":
			if !strings.HasSuffix(got, ",scale,kv_scale,softcap,sinks") || q != "4" || sc != "1" || sk != "1" {
				t.Errorf("all: args %s, QLEN %q SOFTCAP %q SINKS %q", got, q, sc, sk)
			}
		}
		// The combine keeps the ABI's launch: its block merges each token.
		if l := pt.Launches[1]; l.Grid != [3]int{32, 1, 1} {
			t.Errorf("%s: combine grid %v, want the ABI's (heads, batch)", c.Shape.Name, l.Grid)
		}
	}
}
