package spec

import (
	"reflect"
	"testing"
)

// invariant decodes in spec.Invariances' vocabulary, in the file's order,
// on a variant and on a dispatch variant (arm).
func TestInvariantKey(t *testing.T) {
	s, err := Parse("testdata/inline.yaml", []byte(`
name: t
shapes:
  - {name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16, batch: 4}
axes: {nkv: [64], SPLITS: [8]}
variants:
  - {name: a, kernel: r4, invariant: [position, batch]}
  - {name: b, kernel: r4}
  - name: h
    invariant: arm
    dispatch:
      - {below: 32, kernel: r4}
      - {kernel: d2}
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range [][]Invariance{{InvariantPosition, InvariantBatch}, nil, {InvariantArm}} {
		if got := s.Variants[i].Invariant; !reflect.DeepEqual(got, want) {
			t.Errorf("variant %d: invariant %v, want %v", i, got, want)
		}
	}
}
