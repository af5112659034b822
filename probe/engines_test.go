package probe

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

// TestEngineSpecsMarshal marshals every launch of the first point of each
// variant of experiments/engines on the fake device, as the GPU path does
// before a launch: every buffer, scratch buffer and planned array the
// arguments name is allocated for the point, every pointer a declaration
// does not make null is a device address, and a tensor map is encoded
// over its buffer's address (the fake's encoding keeps it at byte 8).
func TestEngineSpecsMarshal(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("../experiments/engines/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no engine specs: %v", err)
	}
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// A spec of an engine's own tree (${VLLM_ROOT} …) loads where the
		// tree is given on the command line.
		unset := ""
		for _, m := range regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)\}`).FindAllSubmatch(text, -1) {
			if os.Getenv(string(m[1])) == "" {
				unset = string(m[1])
			}
		}
		if unset != "" {
			t.Logf("%s: %s is not set: an engine's own tree, not marshalled here", path, unset)
			continue
		}
		s, err := spec.Load(path, variants.Builtins())
		if err != nil {
			t.Fatal(err)
		}
		p, err := plan.Build(s, "sm_90")
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, pt := range p.Points {
			if seen[pt.Config.Variant] {
				continue
			}
			seen[pt.Config.Variant] = true
			t.Run(filepath.Base(path)+"/"+pt.Config.Variant, func(t *testing.T) { marshalPoint(t, pt) })
		}
	}
}

func marshalPoint(t *testing.T, pt *plan.Point) {
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeDevice()
	w, err := f.allocWorkspace(l)
	if err != nil {
		t.Fatal(err)
	}
	for _, ln := range pt.Launches {
		args, err := marshal(ln.Args, pt.Config.Shape, pt.Config.Defines, 0, w, f.encodeTensorMap)
		if err != nil {
			t.Fatalf("%s: %v", ln.Entry, err)
		}
		for i, a := range ln.Args {
			switch v := args[i].(type) {
			case cuda.DevPtr:
				if (v == 0) != (a.Name == "") {
					t.Errorf("%s argument %d (%s): pointer %#x", ln.Entry, i, a, uint64(v))
				}
			case cuda.TensorMap:
				want, err := bufferOrScratch(a.TensorMap.Buffer, pt, w)
				if err != nil || binary.LittleEndian.Uint64(v[8:]) != uint64(want) {
					t.Errorf("%s argument %d: a tensor map over %#x, want %#x (%v)", ln.Entry, i, binary.LittleEndian.Uint64(v[8:]), uint64(want), err)
				}
			case []byte:
				if a.Struct == nil {
					continue // a vector
				}
				// A struct: each pointer field at its offset is non-null
				// unless declared null.
				lay, err := a.Struct.Layout()
				if err != nil {
					t.Fatal(err)
				}
				for k, fl := range a.Struct.Fields {
					if fl.Arg.IsBuffer() && fl.Arg.Struct == nil {
						got := binary.LittleEndian.Uint64(v[lay.Offsets[k]:])
						if (got == 0) != (fl.Arg.Name == "") {
							t.Errorf("%s struct %s field %s (%s): pointer %#x", ln.Entry, a.Struct.Name, fl.Name, fl.Arg, got)
						}
					}
				}
			}
		}
	}
}

// bufferOrScratch is the device address a pointer argument passes.
func bufferOrScratch(a abi.Arg, pt *plan.Point, w *workspace) (cuda.DevPtr, error) {
	d := w.l.dims(pt.Config.Shape)
	switch {
	case a.IsScratch():
		return scratchArg(a.Name, d, w)
	case a.IsPlanned():
		return plannedArg(a.Name, d, w)
	}
	return bufferArg(a.Name, d, w)
}
