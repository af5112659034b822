package plan

import (
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

const persistentYAML = `name: persistent
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [16]}
variants:
  - name: p
    kernel: k.ptx
    launches:
      - {entry: part, grid: ["sms * blocks_per_sm"], block: [128], args: [q, k, v, positions, partial, heads]}
      - {entry: comb, grid: [heads, batch], block: [head_dim], args: [partial, out, heads]}
`

func persistentPlan(t *testing.T, yaml, arch string, over Override) (*Plan, error) {
	t.Helper()
	s, err := spec.Load(engineTree(t, map[string]string{"spec.yaml": yaml, "k.ptx": ".version 8.0\n"}), variants.Builtins())
	if err != nil {
		return nil, err
	}
	return BuildWith(s, arch, over)
}

func TestDeviceSymbols(t *testing.T) {
	p, err := persistentPlan(t, persistentYAML, "sm_90", Override{})
	if err != nil {
		t.Fatal(err)
	}
	l := p.Points[0].Launches[0]
	if l.Grid != [3]int{132, 1, 1} || l.SMs != 132 || l.BlocksPerSM != DefaultBlocksPerSM {
		t.Errorf("sm_90 by default: grid %v, assumed sms %d blocks_per_sm %d; want 132 × 1", l.Grid, l.SMs, l.BlocksPerSM)
	}
	if c := p.Points[0].Launches[1]; c.SMs != 0 || c.BlocksPerSM != 0 {
		t.Errorf("the combine reads no device symbol, but records %d/%d", c.SMs, c.BlocksPerSM)
	}
	q, err := persistentPlan(t, persistentYAML, "sm_90", Override{SMs: 100, BlocksPerSM: 3})
	if err != nil {
		t.Fatal(err)
	}
	if l := q.Points[0].Launches[0]; l.Grid != [3]int{300, 1, 1} || l.SMs != 100 || l.BlocksPerSM != 3 {
		t.Errorf("--sms 100 --blocks-per-sm 3: grid %v, assumed %d/%d", l.Grid, l.SMs, l.BlocksPerSM)
	}
	if q.Points[0].Hash == p.Points[0].Hash {
		t.Error("the assumed device symbols are not hashed")
	}
	// Same grid, other assumptions: still another hash, since the probe
	// checks the assumption.
	r, err := persistentPlan(t, persistentYAML, "sm_90", Override{SMs: 66, BlocksPerSM: 2})
	if err != nil {
		t.Fatal(err)
	}
	if r.Points[0].Launches[0].Grid != [3]int{132, 1, 1} || r.Points[0].Hash == p.Points[0].Hash {
		t.Errorf("66 × 2: grid %v, hash %s (default plan's %s)", r.Points[0].Launches[0].Grid, r.Points[0].Hash, p.Points[0].Hash)
	}
	if _, err := persistentPlan(t, persistentYAML, "sm_75", Override{}); err == nil || !strings.Contains(err.Error(), "no default SM count for arch \"sm_75\"") {
		t.Errorf("an arch without a default SM count: %v", err)
	}
	if _, err := persistentPlan(t, persistentYAML, "sm_75", Override{SMs: 40}); err != nil {
		t.Errorf("an arch without a default, with --sms: %v", err)
	}
	bad := strings.Replace(persistentYAML, "block: [128]", "block: [blocks_per_sm]", 1)
	if _, err := persistentPlan(t, bad, "sm_90", Override{}); err == nil || !strings.Contains(err.Error(), `unknown symbol "blocks_per_sm"`) {
		t.Errorf("a block that reads the occupancy: %v", err)
	}
}
