package spec

import (
	"slices"
	"testing"
)

// A planned array's expressions, a scratch size, a launch's shared size
// and integer arguments (a struct's field and a vector's component
// included) may read the device's SM count;
// testdata/errors/device_blocks_per_sm_outside_grid refuses
// blocks_per_sm in each of those places.
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
	if got := v.Launches[0].Shared; got != "sms * 8" {
		t.Errorf("launch shared %q", got)
	}
	if !slices.Contains(PointSymbols, SymSMs) || slices.Contains(PointSymbols, SymBlocksPerSM) {
		t.Errorf("PointSymbols %v: want sms and not blocks_per_sm", PointSymbols)
	}
}

// A launch declares its kernel's blocks per SM, whether or not its grid
// reads blocks_per_sm; one that declares nothing reads 0.
func TestLaunchBlocksPerSM(t *testing.T) {
	s, err := Load("testdata/device_sms.yaml", testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	v := s.Variant("declared")
	if v == nil || len(v.Launches) != 3 {
		t.Fatalf("the variant as read: %+v", v)
	}
	for i, want := range []int{8, 12, 0} {
		if got := v.Launches[i].BlocksPerSM; got != want {
			t.Errorf("launches[%d].blocks_per_sm = %d, want %d", i, got, want)
		}
	}
}
