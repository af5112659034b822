package variants

import (
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/kernels"
)

// h200Shape is the problem the frontier kernels were written for.
var h200Shape = abi.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768}

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
		if k.Class != catalog.Tolerance {
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
		shape   abi.Shape
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
		{"mma", f32, nil, "takes f16, bf16 or fp8e4m3 K/V"},
		{"mma", withKV(h200Shape, "bf16"), nil, ""},
		{"mma", withKV(h200Shape, "fp8e4m3"), nil, ""},
		{"mmaf", withKV(h200Shape, "fp8e4m3"), nil, ""},
		{"gqa", withKV(h200Shape, "bf16"), nil, "its own f16/f32 loads"},
		{"gqa", withKV(h200Shape, "fp8e4m3"), nil, "takes no kv_scale"},
		{"mma", withDim(h200Shape, 256), map[string]string{"WARPS": "4"}, ""},
		{"mma", withDim(h200Shape, 256), map[string]string{"WARPS": "8"}, "HEAD_DIM 256 with WARPS 8, GN 1, WN 1: 64 KiB merge area exceeds 48 KiB static shared memory: use WARPS<=5"},
		// Several warps per tile: the merge area has WARPS/WN rows, so
		// GN 4 fits 8 warps at WN 4 (32 KiB) but not at WN 2 (64 KiB).
		{"mma", h200Shape, map[string]string{"GN": "4", "WN": "4", "WARPS": "8"}, ""},
		{"mma", h200Shape, map[string]string{"GN": "4", "WN": "2", "WARPS": "8"}, "GN 4, WN 2: 65 KiB merge area exceeds 48 KiB static shared memory: use WARPS<=4"},
		{"mma", h200Shape, map[string]string{"GN": "4", "WN": "3", "WARPS": "6"}, "WN=3 must divide GN=4"},
		{"mma", h200Shape, map[string]string{"GN": "2", "WN": "2", "WARPS": "3"}, "and WARPS=3"},
		{"mma", h200Shape, map[string]string{"GN": "9"}, "maximum 8"},
		{"mma", h200Shape, map[string]string{"FIXCHUNK": "1024", "WARPS": "8"}, ""},
		{"mma", h200Shape, map[string]string{"FIXCHUNK": "64", "WARPS": "8"}, "FIXCHUNK=64: must be a multiple of a step of the block's warps, 16*NR*WARPS/WN = 128 rows"},
		{"mma", h200Shape, map[string]string{"FIXCHUNK": "64", "WARPS": "8", "WN": "2", "GN": "2"}, ""},
		{"mma", h200Shape, map[string]string{"PAGE_SIZE": "16", "PTW": "1"}, ""},
		{"mma", h200Shape, map[string]string{"SPLITS": "128", "SPLITSIZE": "256"}, ""},
		{"mma", h200Shape, map[string]string{"SPLITS": "128", "SPLITSIZE": "256", "PAGE_SIZE": "16"}, ""},
		{"mma", h200Shape, map[string]string{"SPLITS": "64", "SPLITSIZE": "256"}, "SPLITS=64 x SPLITSIZE=256 = 16384 rows < capacity 32768: the rows past them would be left out (SPLITS >= 128)"},
		{"mma", h200Shape, map[string]string{"SPLITS": "128", "SPLITSIZE": "24"}, "SPLITSIZE=24: must be a multiple of a step, 16*NR = 16 rows"},
		{"mma", h200Shape, map[string]string{"SPLITS": "128", "SPLITSIZE": "256", "FIXCHUNK": "256"}, "both fix a split's rows"},
		{"mmaf", h200Shape, map[string]string{"SPLITS": "1", "PAGE_SIZE": "64", "PF": "1", "PTW": "0"}, ""},
		{"mma", h200Shape, map[string]string{"PTW": "1"}, "PTW=1 reads a block table: it needs PAGE_SIZE"},
		{"mma", h200Shape, map[string]string{"PAGE_SIZE": "16", "PTW": "2"}, "maximum 1"},
		{"mmaf", h200Shape, map[string]string{"SPLITS": "1", "GN": "8", "WN": "8", "WARPS": "8"}, ""},
		// PTE guesses first entries one tile at a time: paged, without the
		// window, which PF turns on unless PTW is set.
		{"mma", h200Shape, map[string]string{"PAGE_SIZE": "16", "PTE": "1"}, ""},
		{"mma", h200Shape, map[string]string{"PAGE_SIZE": "64", "PTE": "1", "SPLITS": "128", "SPLITSIZE": "256"}, ""},
		{"mma", h200Shape, map[string]string{"PTE": "1"}, "PTE=1 guesses a warp's first block-table entries one at a time: it needs PAGE_SIZE"},
		{"mma", h200Shape, map[string]string{"PAGE_SIZE": "16", "PTE": "1", "PTW": "1"}, "needs PAGE_SIZE and PTW=0"},
		{"mmaf", h200Shape, map[string]string{"SPLITS": "1", "PAGE_SIZE": "16", "PTE": "1", "PF": "1"}, "PTW is 1 with PF=1 unless set"},
		{"mmaf", h200Shape, map[string]string{"SPLITS": "1", "PAGE_SIZE": "16", "PTE": "1", "PF": "1", "PTW": "0"}, ""},
		{"mma", h200Shape, map[string]string{"PAGE_SIZE": "16", "PTE": "2"}, "maximum 1"},
		// KVSM: 16-bit K/V, no register prefetch, and the merge area
		// unioned with two steps of staging a row of warps within 48 KiB.
		{"mma", h200Shape, map[string]string{"GN": "4", "WN": "4", "WARPS": "8", "KVSM": "1"}, ""},
		{"mma", withKV(h200Shape, "bf16"), map[string]string{"KVSM": "1", "WARPS": "2", "PAGE_SIZE": "16", "PTE": "1"}, ""},
		{"mmaf", h200Shape, map[string]string{"SPLITS": "1", "GN": "2", "WN": "2", "WARPS": "4", "KVSM": "1"}, ""},
		{"mma", withKV(h200Shape, "fp8e4m3"), map[string]string{"KVSM": "1", "WARPS": "2"}, "kv_dtype fp8e4m3 is not staged"},
		{"mma", h200Shape, map[string]string{"KVSM": "1", "WARPS": "2", "PF": "1"}, "it takes PF=0"},
		{"mma", h200Shape, map[string]string{"KVSM": "1", "WARPS": "2", "FIXCHUNK": "256"}, "KVSM=1 with FIXCHUNK=256"},
		{"mma", h200Shape, map[string]string{"KVSM": "1", "GN": "3", "WN": "3", "WARPS": "3"}, "WN must divide head_dim/8 = 16"},
		{"mma", h200Shape, map[string]string{"KVSM": "1", "GN": "2", "WN": "2", "WARPS": "8"}, "HEAD_DIM 128 with WARPS 8, GN 2, WN 2: 64 KiB merge and staging area (NR 1) exceeds 48 KiB static shared memory: use WARPS<=6"},
		{"mma", h200Shape, map[string]string{"KVSM": "1", "GN": "4", "WN": "4", "WARPS": "8", "NR": "2"}, "merge and staging area (NR 2)"},
		{"mma", h200Shape, map[string]string{"GN": "2", "WN": "2", "WARPS": "8"}, ""},
		{"mma", withDim(h200Shape, 96), nil, "needs head_dim 64, 128 or 256"},
		{"mmaf", hd64, nil, "needs head_dim 128 (the merge's lanes"},
		{"mmaf", hd64, map[string]string{"SPLITS": "1"}, ""},
		{"mmaf", withDim(h200Shape, 256), map[string]string{"SPLITS": "1", "WARPS": "4"}, ""},
		{"mmaf", withDim(h200Shape, 96), map[string]string{"SPLITS": "1"}, "needs head_dim 64, 128 or 256"},
		{"mma", g16, nil, "set GN=2"},
		{"mma", g16, map[string]string{"GN": "2"}, ""},
		{"mma", g16, map[string]string{"GN": "2", "WARPS": "8"}, "65 KiB merge area exceeds 48 KiB"},
		{"mma", hd64, nil, ""},
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
	core, err := kernels.Read("mma_core.cuh")
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
			if m == nil && strings.Contains(src, `#include "mma_core.cuh"`) {
				m = re.FindStringSubmatch(core)
			}
			if m == nil {
				t.Errorf("%s: define %s has no #ifndef default in %s, gqa_block.cuh, combine_wide.cuh or mma_core.cuh", name, d.Name, k.File)
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

// TestFusedWRegistry: mmafw takes mmaf's tuning defines (its SPLITS bound
// by the counter's 8-bit fields) and refuses what its merge cannot do.
func TestFusedWRegistry(t *testing.T) {
	w, ok := Lookup("mmafw")
	if !ok {
		t.Fatal("mmafw is not registered")
	}
	f, _ := Lookup("mmaf")
	if w.Combine != "" || w.Grid != f.Grid || w.Block != f.Block || len(w.Defines) != len(f.Defines)+1 || w.Defines[len(f.Defines)].Name != "MWW" {
		t.Errorf("mmafw: combine %q geometry %v %v, %d defines; want mmaf's %v %v, %d and MWW", w.Combine, w.Grid, w.Block, len(w.Defines), f.Grid, f.Block, len(f.Defines))
	}
	for i := range f.Defines {
		if f.Defines[i].Name != w.Defines[i].Name {
			t.Errorf("mmafw define %d: %s, mmaf's %s", i, w.Defines[i].Name, f.Defines[i].Name)
		}
	}
	for _, c := range []struct {
		shape   abi.Shape
		defines map[string]string
		reject  string
	}{
		{h200Shape, nil, ""},
		{h200Shape, map[string]string{"SPLITS": "64", "WARPS": "8"}, ""},
		{h200Shape, map[string]string{"SPLITS": "16", "WARPS": "2"}, "at least 4 warps"},
		{h200Shape, map[string]string{"SPLITS": "129"}, "SPLITS"},
		{h200Shape, map[string]string{"SPLITS": "1"}, "SPLITS"},
		{h200Shape, map[string]string{"MWW": "0"}, ""},
		{h200Shape, map[string]string{"MWW": "2"}, "MWW"},
		{withDim(h200Shape, 64), nil, "head_dim 128"},
	} {
		err := w.Accepts(c.shape, c.defines)
		switch {
		case c.reject == "" && err != nil:
			t.Errorf("mmafw %v: %v", c.defines, err)
		case c.reject != "" && (err == nil || !strings.Contains(err.Error(), c.reject)):
			t.Errorf("mmafw %v at head_dim %d: %v, want a refusal naming %q", c.defines, c.shape.HeadDim, err, c.reject)
		}
	}
}

// TestFusedRegistry: mmaf, mmafw and mmac are the fused built-ins, with no
// combine entry; mmaf takes mma's defines but CW, PDLEND, FIXCHUNK (a
// batch-1 tuning of the two-launch kernel) and SPLITSIZE (the fused
// merge is not built for it), and refuses what its
// merge cannot hold.
func TestFusedRegistry(t *testing.T) {
	for _, k := range All() {
		if k.Fused != (k.Name == "mmaf" || k.Name == "mmafw" || k.Name == "mmac") {
			t.Errorf("%s: Fused %v", k.Name, k.Fused)
		}
		if k.Fused && k.Combine != "" {
			t.Errorf("%s: fused with a combine entry %q", k.Name, k.Combine)
		}
	}
	f, ok := Lookup("mmaf")
	if !ok {
		t.Fatal("mmaf is not registered")
	}
	m, _ := Lookup("mma")
	if f.Combine != "" || f.Partial != "attn_partial" || f.Class != catalog.Tolerance || f.Twin != "" {
		t.Errorf("mmaf: partial %q combine %q class %s twin %q", f.Partial, f.Combine, f.Class, f.Twin)
	}
	if f.Grid != m.Grid || f.Block != m.Block || f.Shared != m.Shared {
		t.Errorf("mmaf geometry %v %v %q differs from mma's %v %v %q", f.Grid, f.Block, f.Shared, m.Grid, m.Block, m.Shared)
	}
	var want []catalog.DefineSpec
	for _, d := range m.Defines {
		// No combine to choose or to let launch early.
		if d.Name != "CW" && d.Name != "PDLEND" && d.Name != "FIXCHUNK" && d.Name != "SPLITSIZE" {
			want = append(want, d)
		}
	}
	if len(f.Defines) != len(want) {
		t.Fatalf("mmaf defines %d, want mma's without CW, PDLEND, FIXCHUNK and SPLITSIZE (%d)", len(f.Defines), len(want))
	}
	for i := range want {
		if f.Defines[i] != want[i] {
			t.Errorf("mmaf define %d: %+v, want %+v", i, f.Defines[i], want[i])
		}
	}
	for _, c := range []struct {
		defines map[string]string
		reject  string
	}{
		{nil, ""},
		{map[string]string{"SPLITS": "256", "WARPS": "2"}, ""},
		{map[string]string{"SPLITS": "129", "WARPS": "1"}, "128*WARPS/WN = 128"},
		{map[string]string{"SPLITS": "256", "WARPS": "4", "WN": "2", "GN": "2"}, ""},
		{map[string]string{"SPLITS": "129", "WARPS": "2", "WN": "2", "GN": "2"}, "128*WARPS/WN = 128"},
		{map[string]string{"CW": "2"}, ""}, // not a define of mmaf: the spec layer reports it, not Check
		{map[string]string{"WARPS": "8", "GN": "2"}, "use WARPS<=5"},
	} {
		err := f.Accepts(h200Shape, c.defines)
		switch {
		case c.reject == "" && err != nil:
			t.Errorf("%v: rejected: %v", c.defines, err)
		case c.reject != "" && (err == nil || !strings.Contains(err.Error(), c.reject)):
			t.Errorf("%v: got %v, want a rejection mentioning %q", c.defines, err, c.reject)
		}
	}
	f32 := h200Shape
	f32.KVDtype = "f32"
	if err := f.Accepts(f32, nil); err == nil {
		t.Error("mmaf accepted f32 K/V")
	}
}

// TestFusedSource ties mma_fused.cu to the fused ABI and to mma: the
// extended attn_partial signature, no attn_combine anywhere it includes, an
// #ifndef default matching the registry for each define, and mma.cu running
// the same mma_core.cuh (the claim that mmaf's partial slots are mma's
// rests on it).
func TestFusedSource(t *testing.T) {
	src, err := kernels.Read("mma_fused.cu")
	if err != nil {
		t.Fatal(err)
	}
	core, err := kernels.Read("mma_core.cuh")
	if err != nil {
		t.Fatal(err)
	}
	mma, err := kernels.Read("mma.cu")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := kernels.Read("gqa_block.cuh")
	if err != nil {
		t.Fatal(err)
	}
	sig := regexp.MustCompile(`(?s)extern "C" __global__ void __launch_bounds__\(WARPS \* 32\)\s+attn_partial\(const float\* __restrict__ q, const KV_T\* __restrict__ k, const KV_T\* __restrict__ v,\s+const int\* __restrict__ positions, float\* __restrict__ partial, int heads, int kv_heads,\s+int capacity, float scale, float\* __restrict__ out, unsigned int\* __restrict__ scratch\s+MMA_TAIL_PARAMS\)`)
	if !sig.MatchString(src) {
		t.Error("mma_fused.cu: attn_partial does not have the fused ABI's signature")
	}
	if cl, err := kernels.Read("mma_cluster.cu"); err != nil || !sig.MatchString(cl) || !strings.Contains(cl, `#include "mma_core.cuh"`) {
		t.Errorf("mma_cluster.cu: unreadable (%v), or not the fused ABI's signature over mma_core.cuh", err)
	}
	for name, text := range map[string]string{"mma_fused.cu": src, "mma_core.cuh": core} {
		if strings.Contains(text, "attn_combine(") || strings.Contains(text, `#include "combine`) {
			t.Errorf("%s defines or includes a combine", name)
		}
	}
	if !strings.Contains(src, `#include "mma_core.cuh"`) {
		t.Error(`mma_fused.cu does not include "mma_core.cuh"`)
	}
	f, _ := Lookup("mmaf")
	for _, d := range f.Defines {
		if d.Name == "SPLITS" {
			continue
		}
		re := regexp.MustCompile(`(?m)^#ifndef ` + d.Name + `\n#define ` + d.Name + ` (\S+)`)
		var m []string
		for _, text := range []string{src, core, shared} {
			if m = re.FindStringSubmatch(text); m != nil {
				break
			}
		}
		if m == nil {
			t.Errorf("define %s has no #ifndef default in mma_fused.cu, mma_core.cuh or gqa_block.cuh", d.Name)
		} else if m[1] != d.Default {
			t.Errorf("define %s defaults to %s in the source but %s in the registry", d.Name, m[1], d.Default)
		}
	}
	// mma.cu runs the same per-split code: it includes mma_core.cuh and its
	// kernel is mma_block.
	if !strings.Contains(mma, `#include "mma_core.cuh"`) || !strings.Contains(mma, "mma_block(") {
		t.Error("mma.cu does not run mma_core.cuh's mma_block")
	}
}

func withKV(s abi.Shape, kv string) abi.Shape {
	s.KVDtype = abi.Dtype(kv)
	return s
}

func withDim(s abi.Shape, d int) abi.Shape {
	s.HeadDim = d
	return s
}

// TestFrontierOptions: the tensor-core kernels compute soft-cap, sinks and
// up to 8 query tokens, whose columns (group × q_len) must fit 8·GN; any
// other option, and any option for the kernels that compute none, is
// refused with the reason.
func TestFrontierOptions(t *testing.T) {
	opt := func(a abi.Attention) abi.Shape {
		s := h200Shape
		s.Attention = a
		return s
	}
	q4 := abi.Attention{QLen: 4}
	all := abi.Attention{QLen: 4, Softcap: 50, Sinks: true}
	cases := []struct {
		kernel  string
		shape   abi.Shape
		defines map[string]string
		reject  string
	}{
		{"mma", opt(abi.Attention{Softcap: 30}), nil, ""},
		{"mma", opt(abi.Attention{Sinks: true}), nil, ""},
		{"mma", opt(all), map[string]string{"GN": "4", "WN": "4", "WARPS": "8"}, ""},
		{"mmaf", opt(all), map[string]string{"SPLITS": "1", "GN": "4", "WN": "4", "WARPS": "8"}, ""},
		{"mma", opt(q4), nil, "group 7 x q_len 4 = 28 columns exceed 8*GN = 8: set GN=4"},
		{"mma", opt(q4), map[string]string{"GN": "4", "WN": "4", "WARPS": "8", "CW": "0"}, "CW=0"},
		{"mma", opt(abi.Attention{QLen: 9}), map[string]string{"GN": "8", "WN": "8", "WARPS": "8"}, "q_len 9: at most 8"},
		{"mma", opt(abi.Attention{ALiBi: abi.ALiBiStandard}), nil, "computes no alibi"},
		{"mma", opt(abi.Attention{Window: 256}), nil, "computes no window"},
		{"mma", opt(abi.Attention{LSE: abi.LSENatural}), nil, "computes no lse"},
		{"mmac", opt(abi.Attention{Softcap: 30}), map[string]string{"SPLITS": "8"}, ""},
		{"mmac", opt(abi.Attention{QLen: 2}), map[string]string{"SPLITS": "8", "GN": "2"}, "q_len 2: at most 1"},
		{"gqa", opt(abi.Attention{Softcap: 30}), nil, "computes plain attention"},
	}
	for _, c := range cases {
		k, _ := Lookup(c.kernel)
		err := k.Accepts(c.shape, c.defines)
		switch {
		case c.reject == "" && err != nil:
			t.Errorf("%s %+v %v: rejected: %v", c.kernel, c.shape.Attention, c.defines, err)
		case c.reject != "" && err == nil:
			t.Errorf("%s %+v %v: accepted, want a rejection mentioning %q", c.kernel, c.shape.Attention, c.defines, c.reject)
		case c.reject != "" && !strings.Contains(err.Error(), c.reject):
			t.Errorf("%s %+v %v: reason %q does not mention %q", c.kernel, c.shape.Attention, c.defines, err, c.reject)
		}
	}
	// The kernels read the options through the shape's defines, which
	// mma_core.cuh must know by those names.
	core, err := kernels.Read("mma_core.cuh")
	if err != nil {
		t.Fatal(err)
	}
	for name := range abi.ShapeDefines(opt(all)) {
		if name == abi.DefineQLen || name == abi.DefineSoftcap || name == abi.DefineSinks {
			if !strings.Contains(core, "#if "+name) && !strings.Contains(core, "#if "+name+" ") {
				t.Errorf("mma_core.cuh does not test %s", name)
			}
		}
	}
}

// TestBuiltinsRefuseOptionsTheyDoNotTake: for every built-in and every
// attention option set alone, the kernel refuses the shape unless the
// option is one it says it computes (Takes). Options come from the
// fields of abi.Attention, so an option added there is refused by every
// built-in until a kernel takes it.
func TestBuiltinsRefuseOptionsTheyDoNotTake(t *testing.T) {
	singles := []abi.Attention{
		{Softcap: 30}, {ALiBi: abi.ALiBiStandard}, {Sinks: true}, {Window: 256}, {QLen: 2},
		{MLA: abi.MLA{DV: 64, Layout: abi.MLASplit}}, {LSE: abi.LSENatural},
	}
	seen := map[abi.Option]bool{}
	for _, a := range singles {
		for _, o := range a.Options() {
			seen[o] = true
		}
	}
	if want := reflect.TypeOf(abi.Attention{}).NumField(); len(seen) != want {
		t.Fatalf("the cases set %d options, abi.Attention has %d fields: add a case", len(seen), want)
	}
	for _, k := range All() {
		for _, a := range singles {
			s := h200Shape
			s.Attention = a
			err := k.Accepts(s, map[string]string{"GN": "2"})
			o := a.Options()[0]
			if !slices.Contains(k.Takes, o) && err == nil {
				t.Errorf("%s accepts %s, which it does not take", k.Name, o)
			}
			if slices.Contains(k.Takes, o) && err != nil && strings.Contains(err.Error(), "computes no") {
				t.Errorf("%s refuses %s, which it takes: %v", k.Name, o, err)
			}
		}
	}
}
