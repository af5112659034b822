package spec

import (
	"strings"
	"testing"
)

// A global axis a variant's own values replace is read, with a warning at
// the variant's define: a user may mean it, but the plan should say so.
// Pinning a variant to some of the axis's values (d2 here) is no warning.
func TestWarnsOnReplacedAxis(t *testing.T) {
	s, err := Parse("w.yaml", []byte(`
name: t
shapes:
  - {name: 7b, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}
axes:
  nkv: [512]
  SPLITS: [8, 32]
variants:
  - {name: r4, kernel: r4, defines: {SPLITS: [64]}}
  - {name: d2, kernel: d2, bitwise_with: r4, defines: {SPLITS: [32]}}
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range s.Warnings {
		got = append(got, w.Error())
	}
	want := "w.yaml:7:3: warning: axes.SPLITS: every variant that takes it sets its own values, so the axis sweeps nothing\n" +
		"w.yaml:9:38: warning: variants[0] (r4): its own SPLITS [64] replaces the axis SPLITS [8 32]"
	if strings.Join(got, "\n") != want {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), want)
	}
}
