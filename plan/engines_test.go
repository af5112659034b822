package plan

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// TestEngineSpecsPlan plans every spec of experiments/engines, each an
// engine's kernel form with its real argument list: a by-value struct
// passed as one parameter of its C size.
func TestEngineSpecsPlan(t *testing.T) {
	paths, err := filepath.Glob("../experiments/engines/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no engine specs: %v", err)
	}
	for _, path := range paths {
		s, err := spec.Load(path, variants.Builtins())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p, err := Build(s, "sm_90")
		if err != nil || len(p.Points) == 0 {
			t.Fatalf("%s: %d points, %v", path, len(p.Points), err)
		}
		if strings.HasSuffix(path, "byte-strides.yaml") {
			// five pointers, the uint3 at 40 (12 bytes), scale at 52, the
			// int byte strides at 56 and 60, the 64-bit one at 64.
			slots, err := abi.ParamSlots(p.Points[0].Launches[0].Args)
			want := []abi.ParamSlot{{Offset: 0, Size: 8}, {Offset: 8, Size: 8}, {Offset: 16, Size: 8}, {Offset: 24, Size: 8}, {Offset: 32, Size: 8},
				{Offset: 40, Size: 12}, {Offset: 52, Size: 4}, {Offset: 56, Size: 4}, {Offset: 60, Size: 4}, {Offset: 64, Size: 8}}
			if err != nil || !slices.Equal(slots, want) {
				t.Errorf("byte-strides parameters %v (%v), want %v", slots, err, want)
			}
		}
		if strings.HasSuffix(path, "params-struct.yaml") {
			slots, err := abi.ParamSlots(p.Points[0].Launches[0].Args)
			if err != nil || len(slots) != 1 || slots[0].Size != 96 {
				t.Errorf("the params struct is passed as %v (%v), want one 96-byte parameter", slots, err)
			}
		}
	}
}
