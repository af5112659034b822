package plan

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// The refused-*.yaml specs of experiments/engines declare the kernel of
// params-struct.yaml wrongly (a field out of order, a struct one field
// short). They plan, and the probe's parameter check, given the
// parameters the kernel really has (those of the right declaration, the
// layout the GPU run confirms against cuFuncGetParamInfo), refuses every
// launch of theirs, naming the parameter.
func TestRefusedEngineSpecs(t *testing.T) {
	first := func(path string) *Point {
		t.Helper()
		s, err := spec.Load(path, variants.Builtins())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p, err := Build(s, "sm_90")
		if err != nil || len(p.Points) == 0 {
			t.Fatalf("%s: %v", path, err)
		}
		return p.Points[0]
	}
	right := first("../experiments/engines/params-struct.yaml")
	paths, _ := filepath.Glob("../experiments/engines/refused-*.yaml")
	if len(paths) < 2 {
		t.Fatalf("refused specs %v, want the field out of order and the struct one field short", paths)
	}
	for _, path := range paths {
		wrong := first(path)
		for i, l := range wrong.Launches {
			kernel, err := abi.ParamSlots(right.Launches[i].Args)
			if err != nil {
				t.Fatal(err)
			}
			err = abi.CheckParams(l.Entry, l.Args, kernel)
			if err == nil || !strings.Contains(err.Error(), "parameter 0") {
				t.Errorf("%s, %s: %v; want the check to refuse parameter 0, the struct", filepath.Base(path), l.Entry, err)
			}
		}
	}
}
