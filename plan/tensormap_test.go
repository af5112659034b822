package plan

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

const tensorMapYAML = `name: tm
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 128}]
axes: {nkv: [50], SPLITS: [4], TILE: [64, TILES]}
variants:
  - name: eng
    kernel: k.cu
    launches:
      - entry: k
        grid: [SPLITS]
        block: [32]
        args:
          - out
          - tensor_map: {buffer: k, dtype: kv, dims: [head_dim, kv_heads, "capacity * batch"], box: [head_dim, 1, TILE], swizzle: 128b}
`

func planTensorMap(t *testing.T, tiles string, swizzle ...string) (*Plan, error) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "k.cu"), []byte("// k\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(strings.Replace(strings.Replace(tensorMapYAML, "TILES", tiles, 1), "128b", append(swizzle, "128b")[0], 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := spec.Load(path, variants.Builtins())
	if err != nil {
		t.Fatal(err)
	}
	return Build(s, "sm_90")
}

// TestTensorMapPlan: a box that an expression makes too large at one
// point of the axes is the plan's error at the tensor map's line and
// column; within the limits, the tensor map's modes are in the hash.
func TestTensorMapPlan(t *testing.T) {
	_, err := planTensorMap(t, "512")
	if err == nil || !strings.Contains(err.Error(), "spec.yaml:13:25: ") || !strings.Contains(err.Error(), "box[2] = 512") {
		t.Fatalf("box of 512: %v", err)
	}
	p, err := planTensorMap(t, "256")
	if err != nil {
		t.Fatal(err)
	}
	q, err := planTensorMap(t, "256", "none")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Points) != 2 || p.Points[0].Hash == q.Points[0].Hash {
		t.Fatalf("%d points; swizzle 128b and none hash alike", len(p.Points))
	}
}
