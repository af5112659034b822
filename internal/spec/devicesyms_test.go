package spec

import (
	"slices"
	"testing"
)

// A planned array's expressions, a scratch size and integer arguments (a
// struct's field and a vector's component included) may read the
// device's SM count; testdata/errors/device_blocks_per_sm_outside_grid
// refuses blocks_per_sm in each of those places.
func TestPointSymbolSMs(t *testing.T) {
	s, err := Load("testdata/device_sms.yaml", testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	v := s.Variant("padded")
	if v == nil || len(v.Planned) != 2 || len(v.Scratch) != 1 || len(v.Launches) != 1 {
		t.Fatalf("the variant as read: %+v", v)
	}
	if got := v.Planned[1].Length; got != "8 * sms / kv_heads" {
		t.Errorf("planned tiles' length %q", got)
	}
	if got := v.Scratch[0].Bytes; got != "8 * sms / kv_heads * heads * head_dim * 2" {
		t.Errorf("scratch bytes %q", got)
	}
	if !slices.Contains(PointSymbols, SymSMs) || slices.Contains(PointSymbols, SymBlocksPerSM) {
		t.Errorf("PointSymbols %v: want sms and not blocks_per_sm", PointSymbols)
	}
}
