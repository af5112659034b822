package plan

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// TestInvariancePoints: a variant that asks for invariance gets the
// gate's contexts (its kernel at batches 1 and half the shape's, the
// dispatch's other arms at the point's shape), a GateKey and a gate suite
// of its own; a variant that does not keeps the plain ones.
func TestInvariancePoints(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: inv
shapes:
  - {name: b8, heads: 32, kv_heads: 8, head_dim: 128, kv_dtype: f16, batch: 8, capacity: 4096}
axes: {nkv: [512, 2048], SPLITS: [16]}
variants:
  - {name: plain, kernel: mma}
  - {name: fixed, kernel: mma, invariant: [batch, position], defines: {SPLITS: [16], SPLITSIZE: [256]}}
  - name: hybrid
    invariant: [arm, batch]
    dispatch:
      - {below: 1024, kernel: mma, defines: {SPLITS: 16, SPLITSIZE: 256}}
      - {kernel: mma, defines: {SPLITS: 32, SPLITSIZE: 256}}
`), variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]string{}
	for _, pt := range p.Points {
		iv := pt.Invariance
		switch pt.Config.Variant {
		case "plain":
			if iv != nil {
				t.Errorf("plain: invariance %+v", iv)
			}
			plain[pt.Config.Defines.String()] = pt.GateKey
			continue
		case "fixed":
			if iv == nil || len(iv.Arms) != 0 || !iv.Has(spec.InvariantPosition) || iv.Has(spec.InvariantArm) {
				t.Fatalf("fixed: %+v", iv)
			}
		case "hybrid":
			if iv == nil || len(iv.Arms) != 1 || iv.Arms[0].Config.Splits == pt.Config.Splits || !strings.Contains(iv.ArmNames[0], "nkv") {
				t.Fatalf("hybrid nkv %d: %+v", pt.Config.NKV, iv)
			}
			if iv.Kinds[0] != spec.InvariantBatch || iv.Kinds[1] != spec.InvariantArm {
				t.Errorf("kinds %v, want the gate's order", iv.Kinds)
			}
		}
		var batches []int
		for _, b := range iv.Batches {
			batches = append(batches, b.Config.Shape.Batch)
			if b.Source.Text != pt.Source.Text || b.Config.Defines.String() != pt.Config.Defines.String() || b.Launches[0].Grid[2] != b.Config.Shape.Batch {
				t.Errorf("%s: batch %d context: defines %s, grid %v", pt.Config.Variant, b.Config.Shape.Batch, b.Config.Defines, b.Launches[0].Grid)
			}
		}
		if len(batches) != 2 || batches[0] != 1 || batches[1] != 4 {
			t.Errorf("%s: batches %v, want 1 and 4", pt.Config.Variant, batches)
		}
		// A sweep's worker receives the point as JSON: the contexts too.
		b, err := json.Marshal(pt)
		if err != nil {
			t.Fatal(err)
		}
		var back Point
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Invariance == nil || back.Invariance.String() != iv.String() || !reflect.DeepEqual(back.Invariance.Batches[0].Launches, iv.Batches[0].Launches) {
			t.Errorf("%s: the invariance contexts do not survive JSON", pt.Config.Variant)
		}
		if !strings.Contains(iv.String(), "batch 1") || !strings.HasSuffix(pt.GateKey, "+invariance") {
			t.Errorf("%s: contexts %q, gate key %s", pt.Config.Variant, iv.String(), pt.GateKey)
		}
	}
	if len(plain) == 0 {
		t.Fatal("no plain points")
	}

	// A shape of batch 1 has no batch to compare with: refused, not passed.
	s.Shapes[0].Batch = 1
	if _, err := Build(s, "sm_90"); err == nil || !strings.Contains(err.Error(), "needs a shape of batch 2 or more") {
		t.Errorf("batch 1: %v", err)
	}
}
