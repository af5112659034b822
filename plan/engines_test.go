package plan

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/variants"
)

// TestEngineSpecsPlan plans every spec of experiments/engines, each an
// engine's kernel form with its real argument list: no placeholder in the
// text, and every launch's arguments, laid out as parameters, where its
// kernel's source puts its parameters (count, offsets and sizes: what the
// probe checks against cuFuncGetParamInfo on a GPU); a by-value struct is
// passed as one parameter of its C size. The refused-*.yaml specs plan
// too, and must fail that comparison: they are declarations a kernel
// cannot match, which the probe refuses before any launch.
// engineRoot is the ${NAME} of an engine's tree in a spec.
var engineRoot = regexp.MustCompile(`\$\{([A-Z_][A-Z0-9_]*)\}`)

func TestEngineSpecsPlan(t *testing.T) {
	paths, err := filepath.Glob("../experiments/engines/*.yaml")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no engine specs: %v", err)
	}
	for _, path := range paths {
		text, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := placeholder.Find(text); m != nil {
			t.Errorf("%s: %q: an engine spec names what the kernel really takes", path, m)
		}
		// A spec of an engine's own tree (${VLLM_ROOT} …) plans where the
		// tree is given; ktune check checks its parameters against the
		// built kernel (cmd/ktune's tests do on kernels of the project's).
		if roots := engineRoot.FindAllSubmatch(text, -1); len(roots) > 0 {
			t.Logf("%s: an engine's own tree (${%s}): not planned here", path, roots[0][1])
			continue
		}
		s, err := spec.Load(path, variants.Builtins())
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		p, err := Build(s, "sm_90")
		if err != nil || len(p.Points) == 0 {
			t.Fatalf("%s: %d points, %v", path, len(p.Points), err)
		}
		refused := strings.HasPrefix(filepath.Base(path), "refused-")
		if mismatch := sourceParams(t, s, p); refused != (mismatch != "") {
			t.Errorf("%s: refused spec %v, but its arguments against the kernel's source: %q", path, refused, mismatch)
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

// placeholder matches the words a stand-in argument or a spec not yet
// written would carry.
var placeholder = regexp.MustCompile(`(?i)placeholder|\bTODO\b|\bFIXME\b|\bXXX\b|stand-in`)

// sourceParams compares every launch of every variant with its kernel's
// source (cParams) at the plan's first point of the variant, and returns
// the first mismatch, "" when all match. A launch loaded from a prebuilt
// file of its own is compared with the kernels/testdata source of the
// same name; one whose arguments come from Triton's metadata, or whose
// source is not in the tree, is skipped.
func sourceParams(t *testing.T, s *spec.Spec, p *Plan) string {
	for _, v := range s.Variants {
		i := slices.IndexFunc(p.Points, func(pt *Point) bool { return pt.Config.Variant == v.Name })
		if i < 0 || len(v.Launches) == 0 {
			continue
		}
		pt := p.Points[i]
		for j, l := range v.Launches {
			src := pt.Source.Text
			if l.Triton != "" {
				continue
			}
			if l.Kernel != "" || src == "" {
				k := l.Kernel
				if k == "" {
					k = v.Path
				}
				b, err := os.ReadFile(filepath.Join("../kernels/testdata", strings.TrimSuffix(filepath.Base(k), filepath.Ext(k))+".cu"))
				if err != nil {
					continue
				}
				src = string(b)
			}
			args := pt.Launches[j].Args
			want, err := abi.ParamSlots(args)
			if err != nil {
				t.Fatalf("%s: %v", v.Name, err)
			}
			got, decls, err := cParams(src, l.Entry)
			if err != nil {
				t.Fatalf("%s: %v", v.Name, err)
			}
			for k := range min(len(got), len(want)) {
				if got[k] != want[k] {
					return fmt.Sprintf("%s.%s: parameter %d (%s) is %d bytes at %d in the source, the launch declares %s, %d bytes at %d",
						v.Name, l.Entry, k, decls[k], got[k].Size, got[k].Offset, args[k], want[k].Size, want[k].Offset)
				}
			}
			if len(got) != len(want) {
				return fmt.Sprintf("%s.%s: the source takes %d parameters, the launch declares %d", v.Name, l.Entry, len(got), len(want))
			}
		}
	}
	return ""
}
