package variants

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/kernels"
)

// h200Shape is the problem the frontier kernels were written for.
var h200Shape = results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768}

func TestFrontierGeometry(t *testing.T) {
	for _, name := range []string{"gqa", "mma"} {
		k, ok := Lookup(name)
		if !ok {
			t.Fatalf("%s is not registered", name)
		}
		env := expr.Env{"heads": 28, "kv_heads": 4, "head_dim": 128, "batch": 16, "group": 7}
		for _, d := range k.Defines {
			var v int64
			for _, c := range d.Default {
				v = v*10 + int64(c-'0')
			}
			env[d.Name] = v
		}
		env["SPLITS"], env["WARPS"] = 96, 8
		var got [6]int64
		for i, src := range append(k.Grid[:], k.Block[:]...) {
			e, err := expr.Parse(src)
			if err != nil {
				t.Fatalf("%s: geometry %q: %v", name, src, err)
			}
			if got[i], err = e.Eval(env); err != nil {
				t.Fatalf("%s: geometry %q: %v", name, src, err)
			}
		}
		// One block per (split, KV head, sequence); 32 threads per warp.
		if want := [6]int64{96, 4, 16, 256, 1, 1}; got != want {
			t.Errorf("%s: grid+block = %v, want %v", name, got, want)
		}
		if k.Class != Tolerance {
			t.Errorf("%s: class %s, want tolerance (they reorder the summation)", name, k.Class)
		}
	}
}

func TestFrontierChecks(t *testing.T) {
	f32 := h200Shape
	f32.KVDtype = "f32"
	g16 := h200Shape
	g16.Heads = 64 // group 16
	hd64 := h200Shape
	hd64.HeadDim = 64
	ragged := h200Shape
	ragged.Heads = 30 // not a multiple of kv_heads
	cases := []struct {
		kernel  string
		shape   results.Shape
		defines map[string]string
		reject  string // substring of the reason; "" accepts
	}{
		{"gqa", h200Shape, nil, ""},
		{"gqa", f32, map[string]string{"NR": "2", "WARPS": "8"}, ""},
		{"gqa", h200Shape, map[string]string{"NR": "3"}, "NR=3"},
		{"gqa", g16, nil, "group 16"},
		{"gqa", hd64, nil, "head_dim 64"},
		{"gqa", ragged, nil, "not a multiple"},
		{"gqa", h200Shape, map[string]string{"SPLITS": "257"}, "maximum 256"},
		{"mma", h200Shape, nil, ""},
		{"mma", f32, nil, "f16 K/V only"},
		{"mma", g16, nil, "set GN=2"},
		{"mma", g16, map[string]string{"GN": "2"}, ""},
		{"mma", g16, map[string]string{"GN": "2", "WARPS": "8"}, "WARPS*GN = 16"},
		{"mma", hd64, nil, "head_dim 64"},
		{"mma", h200Shape, map[string]string{"CW": "0", "LDH": "1"}, ""},
		{"mma", h200Shape, map[string]string{"CW": "3"}, "maximum 2"},
		{"gqa", h200Shape, map[string]string{"LDH": "2"}, "maximum 1"},
	}
	for _, c := range cases {
		k, _ := Lookup(c.kernel)
		err := k.Accepts(c.shape, c.defines)
		switch {
		case c.reject == "" && err != nil:
			t.Errorf("%s %+v %v: rejected: %v", c.kernel, c.shape, c.defines, err)
		case c.reject != "" && err == nil:
			t.Errorf("%s %+v %v: accepted, want a rejection mentioning %q", c.kernel, c.shape, c.defines, c.reject)
		case c.reject != "" && !strings.Contains(err.Error(), c.reject):
			t.Errorf("%s %+v %v: reason %q does not mention %q", c.kernel, c.shape, c.defines, err, c.reject)
		}
	}
}

// TestFrontierSources ties the registry to the sources: the file exists,
// uses the shared ABI and both combines (CW picks one), and every define the
// registry offers
// (other than SPLITS, always passed) has a default in the source, so a
// spec that leaves it unset still compiles to what Default documents.
func TestFrontierSources(t *testing.T) {
	shared, err := kernels.Read("gqa_block.cuh")
	if err != nil {
		t.Fatal(err)
	}
	wide, err := kernels.Read("combine_wide.cuh")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"gqa", "mma"} {
		k, _ := Lookup(name)
		src, err := kernels.Read(k.File)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, inc := range []string{`#include "abi.cuh"`, `#include "combine.cuh"`, `#include "combine_wide.cuh"`, `#include "gqa_block.cuh"`} {
			if !strings.Contains(src, inc) {
				t.Errorf("%s: %s lacks %s", name, k.File, inc)
			}
		}
		if !strings.Contains(src, "attn_partial(") {
			t.Errorf("%s: %s defines no %s", name, k.File, k.Partial)
		}
		for _, d := range k.Defines {
			if d.Name == "SPLITS" {
				continue
			}
			re := regexp.MustCompile(`(?m)^#ifndef ` + d.Name + `\n#define ` + d.Name + ` (\S+)`)
			m := re.FindStringSubmatch(src)
			if m == nil {
				m = re.FindStringSubmatch(shared)
			}
			if m == nil {
				m = re.FindStringSubmatch(wide)
			}
			if m == nil {
				t.Errorf("%s: define %s has no #ifndef default in %s, gqa_block.cuh or combine_wide.cuh", name, d.Name, k.File)
				continue
			}
			if m[1] != d.Default {
				t.Errorf("%s: define %s defaults to %s in the source but %s in the registry", name, d.Name, m[1], d.Default)
			}
		}
	}
}

// TestFrontierCombineSelection checks that CW's values select what its
// documentation says: 0 the shared serial combine, 1 and 2 the parallel one
// (2 with its early loads), so a spec sweeping CW compares what it names.
func TestFrontierCombineSelection(t *testing.T) {
	want := regexp.MustCompile(`(?s)#if CW\n#define CW_EARLY \(CW == 2\)\n#include "combine_wide.cuh"\n#else\n#include "combine.cuh"\n#endif`)
	for _, name := range []string{"gqa", "mma"} {
		k, _ := Lookup(name)
		src, err := kernels.Read(k.File)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !want.MatchString(src) {
			t.Errorf("%s: %s does not select the combine by CW as documented", name, k.File)
		}
	}
	wide, err := kernels.Read("combine_wide.cuh")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"attn_combine(", "#if CW_EARLY", "griddepcontrol.wait"} {
		if !strings.Contains(wide, s) {
			t.Errorf("combine_wide.cuh lacks %q", s)
		}
	}
}
