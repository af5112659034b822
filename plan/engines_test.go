package plan

import (
	"path/filepath"
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
		if strings.HasSuffix(path, "params-struct.yaml") {
			slots, err := abi.ParamSlots(p.Points[0].Launches[0].Args)
			if err != nil || len(slots) != 1 || slots[0].Size != 96 {
				t.Errorf("the params struct is passed as %v (%v), want one 96-byte parameter", slots, err)
			}
		}
	}
}
