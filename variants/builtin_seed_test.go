package variants

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/kernels"
)

var seedNames = []string{"r4", "d2", "rows", "cpasync", "pair", "warp4"}

// TestSeedSources checks that each seed entry points at an embedded file
// that defines the ABI entry points and shares the family's combine.
func TestSeedSources(t *testing.T) {
	partial := regexp.MustCompile(`extern "C" __global__ void(\s+__launch_bounds__\([^)]*\))?\s+attn_partial\(`)
	for _, name := range seedNames {
		k, ok := Lookup(name)
		if !ok {
			t.Errorf("%s: not registered", name)
			continue
		}
		src, err := kernels.Read(k.File)
		if err != nil {
			t.Errorf("%s: reading %s: %v", name, k.File, err)
			continue
		}
		if !partial.MatchString(src) {
			t.Errorf("%s: %s does not define extern \"C\" attn_partial", name, k.File)
		}
		if !strings.Contains(src, `#include "combine.cuh"`) {
			t.Errorf("%s: %s does not include combine.cuh: twins must share one combine", name, k.File)
		}
		if k.Partial != "attn_partial" || k.Combine != "attn_combine" {
			t.Errorf("%s: entry points %q/%q, want the ABI's", name, k.Partial, k.Combine)
		}
		for _, d := range k.Defines {
			if d.Name != "SPLITS" && !strings.Contains(src, "#ifndef "+d.Name) {
				t.Errorf("%s: declares define %s that %s does not read", name, d.Name, k.File)
			}
			if def, err := strconv.Atoi(d.Default); err != nil || def < d.Min || (d.Max > 0 && def > d.Max) {
				t.Errorf("%s: define %s default %q outside [%d, %d]", name, d.Name, d.Default, d.Min, d.Max)
			}
		}
	}
}

// TestSeedTwins checks the numerics classes: a bitwise kernel names a
// registered twin of the same block shape, a tolerance kernel names none.
func TestSeedTwins(t *testing.T) {
	want := map[string]string{"d2": "r4", "cpasync": "d2", "pair": "d2"}
	for _, name := range seedNames {
		k, _ := Lookup(name)
		if k == nil {
			continue
		}
		if twin, bitwise := want[name]; bitwise {
			if k.Class != catalog.Bitwise || k.Twin != twin {
				t.Errorf("%s: class %s twin %q, want bitwise twin %q", name, k.Class, k.Twin, twin)
			}
			tk, ok := Lookup(k.Twin)
			if !ok {
				t.Errorf("%s: twin %q is not registered", name, k.Twin)
			} else if tk.Block != k.Block || tk.Grid != k.Grid {
				t.Errorf("%s: launch %v/%v differs from twin %s's %v/%v", name, k.Grid, k.Block, tk.Name, tk.Grid, tk.Block)
			}
		} else if k.Class != catalog.Tolerance || k.Twin != "" {
			t.Errorf("%s: class %s twin %q, want tolerance with no twin", name, k.Class, k.Twin)
		}
	}
}

func TestSeedChecks(t *testing.T) {
	shape := func(hd int, kv string) abi.Shape {
		return abi.Shape{Heads: 28, KVHeads: 4, HeadDim: hd, KVDtype: abi.Dtype(kv), Batch: 1, Capacity: 4096}
	}
	cases := []struct {
		kernel  string
		shape   abi.Shape
		defines map[string]string
		ok      bool
	}{
		{"r4", shape(128, "f16"), nil, true},
		{"d2", shape(64, "f32"), nil, true},
		{"d2", shape(256, "f16"), nil, false}, // more dims than 32 lanes x 4
		{"pair", shape(130, "f16"), nil, false},
		{"warp4", shape(160, "f16"), nil, false},
		{"rows", shape(256, "f16"), nil, true}, // lanes own rows: no lane limit
		{"rows", shape(126, "f16"), nil, false},
		{"r4", abi.Shape{Heads: 28, KVHeads: 5, HeadDim: 128, KVDtype: "f16"}, nil, false},
		// 4 x 8 x 2 x 128 x 2 B = 16 KiB of ring.
		{"cpasync", shape(128, "f16"), map[string]string{"RING": "4", "NR": "8"}, true},
		// 4 x 16 x 2 x 128 x 4 B = 64 KiB: over the 48 KiB static limit.
		{"cpasync", shape(128, "f32"), map[string]string{"RING": "4", "NR": "16"}, false},
		{"cpasync", shape(128, "f32"), map[string]string{"RING": "two"}, false},
	}
	for _, c := range cases {
		k, ok := Lookup(c.kernel)
		if !ok {
			t.Fatalf("%s: not registered", c.kernel)
		}
		err := k.Check(c.shape, c.defines)
		if (err == nil) != c.ok {
			t.Errorf("%s hd=%d %s %v: Check = %v, want ok=%v", c.kernel, c.shape.HeadDim, c.shape.KVDtype, c.defines, err, c.ok)
		}
	}
}

// TestCpasyncSharedBytes pins the ring size to what ptxas -v reported for
// cpasync.cu on sm_90 (HEAD_DIM 128, tools/kcheck/run.sh).
func TestCpasyncSharedBytes(t *testing.T) {
	cases := []struct {
		kv      string
		defines map[string]string
		want    int
	}{
		{"f16", map[string]string{"RING": "2", "NR": "4"}, 4096},
		{"f32", map[string]string{"RING": "2", "NR": "4"}, 8192},
		{"f16", map[string]string{"RING": "2", "NR": "8"}, 8192},
		{"f32", map[string]string{"RING": "2", "NR": "8"}, 16384},
		{"f16", nil, 4096}, // defaults RING 2, NR 4
	}
	for _, c := range cases {
		got, err := cpasyncSharedBytes(abi.Shape{HeadDim: 128, KVDtype: abi.Dtype(c.kv)}, c.defines)
		if err != nil || got != c.want {
			t.Errorf("%s %v: %d, %v; want %d", c.kv, c.defines, got, err, c.want)
		}
	}
}

// TestCpasyncDefaults checks that an unset RING or NR sizes the ring with
// the defaults the registry declares (and NVRTC therefore compiles).
func TestCpasyncDefaults(t *testing.T) {
	s := abi.Shape{HeadDim: 128, KVDtype: "f16"}
	unset, err1 := cpasyncSharedBytes(s, nil)
	explicit, err2 := cpasyncSharedBytes(s, map[string]string{"RING": ringDefine.Default, "NR": nrDefine.Default})
	if err1 != nil || err2 != nil || unset != explicit {
		t.Errorf("unset defines: %d (%v); declared defaults: %d (%v)", unset, err1, explicit, err2)
	}
}

// TestSeedKVTypes: the seeds that read K/V through kv_ld4/kv_ld2 take
// bf16; cpasync (its own shared-memory loader) does not; none takes
// fp8e4m3, which needs a kv_scale argument they do not have.
func TestSeedKVTypes(t *testing.T) {
	for _, name := range []string{"r4", "d2", "d2full", "pair", "warp4", "rows", "cpasync"} {
		k, _ := Lookup(name)
		for _, kv := range []string{"f32", "f16", "bf16", "fp8e4m3"} {
			s := abi.Shape{Name: "s", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: abi.Dtype(kv), Batch: 1, Capacity: 4096}
			err := k.Accepts(s, nil)
			want := kv != "fp8e4m3" && (kv != "bf16" || name != "cpasync")
			if (err == nil) != want {
				t.Errorf("%s kv_dtype %s: %v, want accepted %v", name, kv, err, want)
			}
			if kv == "fp8e4m3" && err != nil && !strings.Contains(err.Error(), "takes no kv_scale") {
				t.Errorf("%s fp8: %v", name, err)
			}
		}
	}
}
