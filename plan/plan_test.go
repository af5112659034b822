package plan

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
	"github.com/ktune/ktune/internal/golden"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/kernels"
	"github.com/ktune/ktune/variants"
)

// fixedFS stands in for package kernels: the golden tables must not change
// whenever a kernel's text does (TestBuildReadsKernels covers the real
// files; TestHashSensitivity covers source changes).
var fixedFS = fstest.MapFS{
	"r4.cu":       {Data: []byte("// r4\n#include \"abi.cuh\"\n")},
	"d2.cu":       {Data: []byte("// d2\n#include \"abi.cuh\"\n")},
	"abi.cuh":     {Data: []byte("#pragma once\n#include \"combine.cuh\"\n")},
	"combine.cuh": {Data: []byte("#pragma once\n")},
}

// testKernels are two kernels shaped like the seed's R4 and D2, under
// names of their own, with bounds that make skips easy to provoke.
func testKernels(t testing.TB) catalog.Set {
	t.Helper()
	only128 := func(s abi.Shape, _ map[string]string) error {
		if s.HeadDim != 128 {
			return fmt.Errorf("head_dim %d: 32 lanes × 4 dims need head_dim 128", s.HeadDim)
		}
		return nil
	}
	grid, block := [3]string{"SPLITS", "heads", "batch"}, [3]string{"32", "1", "1"}
	tr4 := &catalog.Kernel{Name: "tr4", File: "r4.cu",
		Defines: []catalog.DefineSpec{{Name: "NR", Default: "4", Min: 1, Max: 8}},
		Grid:    grid, Block: block, Shared: "0", Class: catalog.Tolerance, Check: only128}
	td2 := &catalog.Kernel{Name: "td2", File: "d2.cu",
		Defines: []catalog.DefineSpec{{Name: "NR", Default: "4", Min: 1, Max: 4}},
		Grid:    grid, Block: block, Shared: "0", Class: catalog.Bitwise, Twin: "tr4", Check: only128}
	set, err := catalog.NewSet(tr4, td2)
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func load(t *testing.T, path string, kernels catalog.Set) *spec.Spec {
	t.Helper()
	s, err := spec.Load(path, kernels)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func build(t *testing.T, path string) *Plan {
	t.Helper()
	p, err := BuildFrom(load(t, path, testKernels(t)), "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func planTable(t *testing.T, p *Plan) string {
	t.Helper()
	var buf bytes.Buffer
	if err := p.WriteTable(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// TestSliceGolden plans experiments/slice.yaml against the registered
// built-ins r4 and d2.
func TestSliceGolden(t *testing.T) {
	for _, name := range []string{"r4", "d2"} {
		if _, ok := variants.Lookup(name); !ok {
			t.Fatalf("built-in %s is not registered", name)
		}
	}
	s := load(t, "../experiments/slice.yaml", variants.Builtins())
	p, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	// 4 SPLITS × 8 nkv for each of the two variants.
	if len(p.Points) != 64 || len(p.Skipped) != 0 {
		t.Errorf("%d points, %d skipped; want 64 and 0", len(p.Points), len(p.Skipped))
	}
	golden.Check(t, "testdata/slice.golden", []byte(planTable(t, p)))
}

func TestMixedGolden(t *testing.T) {
	golden.Check(t, "testdata/mixed.golden", []byte(planTable(t, build(t, "testdata/mixed.yaml"))))
}

// TestBuildReadsKernels checks Build against package kernels: the source
// of a built-in is its file, and every header is offered.
func TestBuildReadsKernels(t *testing.T) {
	p, err := Build(load(t, "../experiments/slice.yaml", variants.Builtins()), "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range p.Points[:1] {
		want, err := kernels.Read(pt.Source.Name)
		if err != nil || pt.Source.Text != want {
			t.Errorf("source of %s is not %s (%v)", pt.Config.Variant, pt.Source.Name, err)
		}
		for _, h := range []string{"abi.cuh", "combine.cuh"} {
			if want, err := kernels.Read(h); err == nil && pt.Source.Headers[h] != want {
				t.Errorf("header %s missing or different", h)
			}
		}
	}
}

func TestOrder(t *testing.T) {
	p := build(t, "testdata/mixed.yaml")
	var got []string
	for i, pt := range p.Points {
		if pt.Index != i {
			t.Errorf("point %d has Index %d", i, pt.Index)
		}
		c := pt.Config
		nr, _ := c.Define("NR")
		got = append(got, fmt.Sprintf("%s/%s/S%d/NR%s/%d", c.Shape.Name, c.Variant, c.Splits, nr, c.NKV))
	}
	// Shape, then variant, then SPLITS then NR (axis file order), then nkv
	// ascending although the file lists 2048 first. td2 takes no NR=8 (its
	// bound is 4); at shape small, only the user kernel runs (head_dim 64).
	want := []string{
		"big/tr4/S16/NR4/5", "big/tr4/S16/NR4/2048", "big/tr4/S16/NR8/5", "big/tr4/S16/NR8/2048",
		"big/tr4/S32/NR4/5", "big/tr4/S32/NR4/2048", "big/tr4/S32/NR8/5", "big/tr4/S32/NR8/2048",
		"big/td2/S16/NR4/5", "big/td2/S16/NR4/2048", "big/td2/S32/NR4/5", "big/td2/S32/NR4/2048",
		"big/user/S8/NR4/5", "big/user/S8/NR4/2048", "big/user/S8/NR8/5", "big/user/S8/NR8/2048",
		"small/user/S8/NR4/5", "small/user/S8/NR4/2048", "small/user/S8/NR8/5", "small/user/S8/NR8/2048",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestDeterminism(t *testing.T) {
	a, b := build(t, "testdata/mixed.yaml"), build(t, "testdata/mixed.yaml")
	if len(a.Points) != len(b.Points) {
		t.Fatalf("%d points, then %d", len(a.Points), len(b.Points))
	}
	seen := map[string]int{}
	for i := range a.Points {
		if a.Points[i].Hash != b.Points[i].Hash || a.Points[i].GateKey != b.Points[i].GateKey {
			t.Errorf("point %d: hash %s then %s", i, a.Points[i].Hash, b.Points[i].Hash)
		}
		if j, dup := seen[a.Points[i].Hash]; dup {
			t.Errorf("points %d and %d share hash %s", j, i, a.Points[i].Hash)
		}
		seen[a.Points[i].Hash] = i
	}
}

func TestGateNKV(t *testing.T) {
	gates := []int{1, 29, 52, 512, 1641}
	for _, c := range []struct {
		splits, capacity int
		want             []int
	}{
		// Boundaries of SPLITS 32: 31 32 33 and 63 64 65 (k = 1, 2);
		// c = ceil(1641/32) = 52, so 1663 and 1665; below SPLITS, 16 and 31.
		{32, 32768, []int{1, 16, 29, 31, 32, 33, 52, 63, 64, 65, 512, 1641, 1663, 1665}},
		// The same, cut at the capacity.
		{32, 40, []int{1, 16, 29, 31, 32, 33}},
		// SPLITS 1: 0 is dropped; c = 1641, so 1640 and 1642.
		{1, 32768, []int{1, 2, 3, 29, 52, 512, 1640, 1641, 1642}},
		// SPLITS 64: 1641 → c = 26, 1663 and 1665 again; below: 32 and 63.
		{64, 32768, []int{1, 29, 32, 52, 63, 64, 65, 127, 128, 129, 512, 1641, 1663, 1665}},
	} {
		if got := gateNKV(gates, c.splits, c.capacity); !reflect.DeepEqual(got, c.want) {
			t.Errorf("gateNKV(SPLITS %d, capacity %d) = %v, want %v", c.splits, c.capacity, got, c.want)
		}
	}
}

func TestPointFields(t *testing.T) {
	p := build(t, "testdata/mixed.yaml")
	pt := p.Points[0] // big/tr4/S16/NR4/5
	c := pt.Config
	wantDefs := abi.Defines{{Name: "HEAD_DIM", Value: "128"}, {Name: "KV_F16", Value: "1"}, {Name: "NR", Value: "4"}, {Name: "SPLITS", Value: "16"}}
	if !reflect.DeepEqual(c.Defines, wantDefs) {
		t.Errorf("defines %v, want %v", c.Defines, wantDefs)
	}
	if c.Grid != [3]int{16, 28, 1} || c.Block != [3]int{32, 1, 1} || c.CombineGrid != [3]int{28, 1, 1} || c.CombineBlock != [3]int{128, 1, 1} {
		t.Errorf("geometry %v %v %v %v", c.Grid, c.Block, c.CombineGrid, c.CombineBlock)
	}
	if c.Spec != "mixed" || c.Kernel != "tr4" || c.Splits != 16 || c.Shape.Capacity != 2048 || c.NKV != 5 {
		t.Errorf("config %+v", c)
	}
	if pt.Source.Name != "r4.cu" || pt.Source.Partial != "attn_partial" || pt.Source.Combine != "attn_combine" || len(pt.Source.Headers) != 2 {
		t.Errorf("source %+v", pt.Source)
	}
	if !reflect.DeepEqual(pt.Probes, []results.Probe{results.ProbeCold, results.ProbeGraph}) || pt.Seed != 1 || pt.Tol.MaxAbs != 2e-3 {
		t.Errorf("probes %v seed %d tol %+v", pt.Probes, pt.Seed, pt.Tol)
	}
	if !reflect.DeepEqual(pt.Flags, []string{"-lineinfo", "--std=c++17"}) {
		t.Errorf("flags %v", pt.Flags)
	}
	// The user kernel: grid [cdiv(nkv, 64), group, batch], block [32 *
	// WARPS], shared WARPS * (head_dim + 4) * 4, at small (group 1, batch 2,
	// head_dim 64, f32) and nkv 2048.
	u := p.Points[17].Config
	if u.Variant != "user" || u.Shape.Name != "small" || u.NKV != 2048 {
		t.Fatalf("point 17 is %s/%s/%d", u.Variant, u.Shape.Name, u.NKV)
	}
	if u.Grid != [3]int{32, 1, 2} || u.Block != [3]int{64, 1, 1} || u.SharedBytes != 2*68*4 {
		t.Errorf("user geometry %v %v %d", u.Grid, u.Block, u.SharedBytes)
	}
	if v, _ := u.Define("KV_F16"); v != "0" {
		t.Errorf("f32 shape: KV_F16=%s", v)
	}
	if v, _ := u.Define("WARPS"); v != "2" {
		t.Errorf("user kernel: WARPS=%s", v)
	}
}

func TestLanded(t *testing.T) {
	p := build(t, "testdata/mixed.yaml")
	n := 0
	for _, pt := range p.Points {
		want := pt.Config.Variant == "td2" && pt.Config.Splits == 16
		if pt.Landed != want {
			t.Errorf("point %d (%s SPLITS=%d): landed %v", pt.Index, pt.Config.Variant, pt.Config.Splits, pt.Landed)
		}
		if pt.Landed {
			n++
		}
	}
	if n != 2 { // SPLITS 16, NR 4, nkv 5 and 2048
		t.Errorf("%d landed points, want 2", n)
	}
}

func TestTwins(t *testing.T) {
	p := build(t, "testdata/mixed.yaml")
	byKey := map[string]*Point{}
	for _, pt := range p.Points {
		c := pt.Config
		nr, _ := c.Define("NR")
		byKey[fmt.Sprintf("%s/%s/%d/%s/%d", c.Variant, c.Shape.Name, c.Splits, nr, c.NKV)] = pt
	}
	for _, pt := range p.Points {
		if pt.Config.BitwiseWith == "" {
			if pt.Twin != nil {
				t.Errorf("tolerance point %d has a twin", pt.Index)
			}
			continue
		}
		c := pt.Config
		nr, _ := c.Define("NR")
		want := byKey[fmt.Sprintf("tr4/%s/%d/%s/%d", c.Shape.Name, c.Splits, nr, c.NKV)]
		if want == nil || pt.Twin != want {
			t.Errorf("point %d: twin %v, want the plan's own point %v", pt.Index, pt.Twin, want)
		}
	}

	// A twin outside the plan: tr4 sweeps only NR=8, td2 only NR=4, so the
	// twin of td2 is tr4 at NR=4 (tr4 takes NR: the candidate's value).
	s := load(t, "testdata/mixed.yaml", testKernels(t))
	s.Variants = s.Variants[:2]
	s.Variants[0].Defines = map[string][]string{"NR": {"8"}}
	s.Variants[0].DefineOrder = []string{"NR"}
	s.Variants[1].Defines = map[string][]string{"NR": {"4"}}
	s.Variants[1].DefineOrder = []string{"NR"}
	q, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pt := range q.Points {
		if pt.Config.Variant != "td2" {
			continue
		}
		tw := pt.Twin
		if tw == nil || tw.Index != -1 || tw.Config.Variant != "tr4" {
			t.Fatalf("td2 point %d: twin %+v, want tr4 outside the plan", pt.Index, tw)
		}
		nr, _ := tw.Config.Define("NR")
		if nr != "4" || tw.Config.Splits != pt.Config.Splits || tw.Config.NKV != pt.Config.NKV || tw.Config.Shape != pt.Config.Shape {
			t.Errorf("twin %+v of %+v", tw.Config, pt.Config)
		}
	}
}

// TestTwinFirstValue: a define the twin takes but the candidate lacks is
// the twin's first value.
func TestTwinFirstValue(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: tw
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [100], SPLITS: [8]}
variants:
  - {name: u, kernel: user.cu, defines: {WARPS: [4, 2]}}
  - {name: c, kernel: tr4, bitwise_with: u}
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	pt := p.Points[len(p.Points)-1]
	if pt.Config.Variant != "c" || pt.Twin == nil {
		t.Fatalf("last point %+v", pt.Config)
	}
	if w, _ := pt.Twin.Config.Define("WARPS"); w != "4" || pt.Twin != p.Points[0] {
		t.Errorf("twin WARPS=%s (index %d), want 4 and the plan's point 0", w, pt.Twin.Index)
	}
}

func TestSkipReasons(t *testing.T) {
	p := build(t, "testdata/mixed.yaml")
	var got []string
	for _, s := range p.Skipped {
		got = append(got, fmt.Sprintf("%s@%s[%s]: %s", s.Variant, s.Shape, s.Defines.String(), s.Reason))
	}
	want := []string{
		"td2@big[NR=8 SPLITS=16]: td2: NR=8 is above the maximum 4",
		"td2@big[NR=8 SPLITS=32]: td2: NR=8 is above the maximum 4",
		// SPLITS varies slowest (file order of the axes), then NR.
		"tr4@small[NR=4 SPLITS=16]: tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"tr4@small[NR=8 SPLITS=16]: tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"tr4@small[NR=4 SPLITS=32]: tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"tr4@small[NR=8 SPLITS=32]: tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		// The bound is checked before the kernel's own Check.
		"td2@small[NR=4 SPLITS=16]: td2: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"td2@small[NR=8 SPLITS=16]: td2: NR=8 is above the maximum 4",
		"td2@small[NR=4 SPLITS=32]: td2: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"td2@small[NR=8 SPLITS=32]: td2: NR=8 is above the maximum 4",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// A candidate whose twin refuses the combination is skipped with the
	// twin's reason: the user kernel takes NR=16, its twin tr4 stops at 8.
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: tw
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [100], SPLITS: [8], NR: [4, 16]}
variants:
  - {name: r, kernel: tr4, defines: {NR: [4]}}
  - {name: u, kernel: user.cu, bitwise_with: r}
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	q, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	if len(q.Skipped) != 1 || q.Skipped[0].Reason != "bitwise twin r (NR=16 SPLITS=8) cannot run: tr4: NR=16 is above the maximum 8" {
		t.Errorf("skipped %+v", q.Skipped)
	}
}

func TestWarnings(t *testing.T) {
	p := build(t, "testdata/mixed.yaml")
	want := []string{
		// The spec's own warnings come first, as file:line:col.
		"testdata/mixed.yaml:17:15: warning: variants[2] (user): its own SPLITS [8] replaces the axis SPLITS [16 32]",
		"variant user: geometry reads nkv (cdiv(nkv, 64)): a captured CUDA graph cannot replay it, so its replay gate will fail",
	}
	if !reflect.DeepEqual(p.Warnings, want) {
		t.Errorf("warnings %q, want %q", p.Warnings, want)
	}
}

func TestGeometryError(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: g
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [100], SPLITS: [8]}
variants:
  - {name: u, kernel: user.cu, defines: {WARPS: [3, 2]}, block: [64 / (WARPS - 3)]}
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	_, err = BuildFrom(s, "sm_90", fixedFS, Override{})
	want := `testdata/inline.yaml:6:5: variant u, shape s, SPLITS=8 WARPS=3, nkv 100: block[0] "64 / (WARPS - 3)": col 4: division by zero`
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant    %s", err, want)
	}
	s.Variants[0].Block = []string{"WARPS - 2"} // 0 at WARPS=2
	_, err = BuildFrom(s, "sm_90", fixedFS, Override{})
	if err == nil || !strings.Contains(err.Error(), `block[0] "WARPS - 2": 0 is outside 1..2147483647`) {
		t.Errorf("error %v, want a launch dimension below 1 refused", err)
	}
}

// TestHashSensitivity changes one input at a time and checks which keys
// move: every input moves Hash; nkv, the measure settings and the probes
// leave GateKey alone.
func TestHashSensitivity(t *testing.T) {
	base := build(t, "testdata/mixed.yaml").Points[8] // td2, with a twin
	if base.Twin == nil {
		t.Fatal("point 8 has no twin")
	}
	b := &builder{arch: "sm_90"}
	clone := func() *Point {
		c := *base
		c.Config.Defines = append([]abi.Define(nil), base.Config.Defines...)
		c.Source.Headers = map[string]string{}
		for k, v := range base.Source.Headers {
			c.Source.Headers[k] = v
		}
		c.Flags = append([]string(nil), base.Flags...)
		c.GateNKV = append([]int(nil), base.GateNKV...)
		c.Probes = append([]results.Probe(nil), base.Probes...)
		tw := *base.Twin
		c.Twin = &tw
		return &c
	}
	g0, h0 := b.keys(base)
	if g0 != base.GateKey || h0 != base.Hash {
		t.Fatalf("keys not reproducible: %s %s vs %s %s", g0, h0, base.GateKey, base.Hash)
	}
	for _, c := range []struct {
		name     string
		change   func(p *Point, b *builder)
		gateMove bool
	}{
		{"source byte", func(p *Point, _ *builder) { p.Source.Text += " " }, true},
		{"header byte", func(p *Point, _ *builder) { p.Source.Headers["abi.cuh"] += " " }, true},
		{"source name", func(p *Point, _ *builder) { p.Source.Name = "r5.cu" }, true},
		{"define", func(p *Point, _ *builder) { p.Config.Defines[2].Value = "2" }, true},
		{"flag", func(p *Point, _ *builder) { p.Flags[0] = "-G" }, true},
		{"arch", func(_ *Point, b *builder) { b.arch = "sm_100" }, true},
		{"capacity", func(p *Point, _ *builder) { p.Config.Shape.Capacity++ }, true},
		{"grid", func(p *Point, _ *builder) { p.Config.Grid[0]++ }, true},
		{"block", func(p *Point, _ *builder) { p.Config.Block[0] = 64 }, true},
		{"shared", func(p *Point, _ *builder) { p.Config.SharedBytes = 16 }, true},
		{"gate nkv", func(p *Point, _ *builder) { p.GateNKV = append(p.GateNKV, 7) }, true},
		{"seed", func(p *Point, _ *builder) { p.Seed++ }, true},
		{"tolerance", func(p *Point, _ *builder) { p.Tol.NMSE = 1e-7 }, true},
		{"numerics class", func(p *Point, _ *builder) { p.Config.BitwiseWith = "" }, true},
		{"twin", func(p *Point, _ *builder) { p.Twin.GateKey = "0000000000000000" }, true},
		{"replay nkv", func(p *Point, _ *builder) { p.ReplayNKV = append(slices.Clone(p.ReplayNKV), 3) }, true},
		{"capture nkv", func(p *Point, _ *builder) { p.CaptureNKV++ }, true},
		{"graph never", func(p *Point, _ *builder) { p.NeverCaptured = true }, true},
		{"nkv", func(p *Point, _ *builder) { p.Config.NKV++ }, false},
		{"measure", func(p *Point, _ *builder) { p.Measure.MaxNoise = 0.05 }, false},
		{"budget", func(p *Point, _ *builder) { p.Measure.BudgetSec = 3 }, false},
		{"probes", func(p *Point, _ *builder) { p.Probes = p.Probes[:1] }, false},
		{"lengths", func(p *Point, _ *builder) { p.Config.Lengths = []int{p.Config.NKV, 7} }, false},
	} {
		p, bb := clone(), *b
		c.change(p, &bb)
		g, h := bb.keys(p)
		if h == h0 {
			t.Errorf("%s: hash unchanged", c.name)
		}
		if (g != g0) != c.gateMove {
			t.Errorf("%s: gate key moved %v, want %v", c.name, g != g0, c.gateMove)
		}
	}
}

// TestDispatchGolden plans a dispatch variant: the table shows the arm
// each nkv runs, switching at 512 and 2048.
func TestDispatchGolden(t *testing.T) {
	golden.Check(t, "testdata/dispatch.golden", []byte(planTable(t, build(t, "testdata/dispatch.yaml"))))
}

// TestDispatch checks the points of a dispatch variant against the arms
// worked out by hand from testdata/dispatch.yaml: td2 (NR fixed at 2)
// below 512, the user kernel below 2048, tr4 from 2048 on.
func TestDispatch(t *testing.T) {
	p := build(t, "testdata/dispatch.yaml")
	var got []string
	byKey := map[string]*Point{}
	for _, pt := range p.Points {
		c := pt.Config
		nr, _ := c.Define("NR")
		key := fmt.Sprintf("%s/%s/%s/S%d/NR%s/%d", c.Shape.Name, c.Variant, c.Kernel, c.Splits, nr, c.NKV)
		byKey[key] = pt
		if c.Variant == "hybrid" && c.Shape.Name == "big" && c.Splits == 16 {
			got = append(got, key)
		}
	}
	// NR varies slower than nkv; at NR=8 the td2 arm's points (NR fixed at
	// 2) repeat those of NR=4 and are not planned twice.
	want := []string{
		"big/hybrid/td2/S16/NR2/5", "big/hybrid/td2/S16/NR2/511", "big/hybrid/user.cu/S16/NR4/512",
		"big/hybrid/user.cu/S16/NR4/2047", "big/hybrid/tr4/S16/NR4/2048",
		"big/hybrid/user.cu/S16/NR8/512", "big/hybrid/user.cu/S16/NR8/2047", "big/hybrid/tr4/S16/NR8/2048",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("hybrid points at big, SPLITS 16:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// 5 of the plain tr4; per SPLITS 8 hybrid points at big and 4 at small
	// (only the user arm takes head_dim 64).
	if len(p.Points) != 5+2*8+2*4 {
		t.Errorf("%d points, want %d", len(p.Points), 5+2*8+2*4)
	}
	for i, pt := range p.Points {
		if pt.Index != i {
			t.Errorf("point %d has Index %d", i, pt.Index)
		}
		c := pt.Config
		if want := c.Variant == "hybrid" && c.Splits == 32; pt.Landed != want {
			t.Errorf("point %d (%s SPLITS=%d): landed %v", i, c.Variant, c.Splits, pt.Landed)
		}
		if c.BitwiseWith != "" || pt.Twin != nil {
			t.Errorf("point %d: numerics %q twin %v, want the tolerance class", i, c.BitwiseWith, pt.Twin)
		}
	}

	below, above := byKey["big/hybrid/td2/S16/NR2/511"], byKey["big/hybrid/user.cu/S16/NR4/512"]
	if below == nil || above == nil {
		t.Fatal("points at the threshold missing")
	}
	// Each arm is its own compiled kernel: its source, its gates.
	if below.Source.Name != "d2.cu" || above.Source.Name != "user.cu" {
		t.Errorf("sources %s and %s, want d2.cu and user.cu", below.Source.Name, above.Source.Name)
	}
	if below.GateKey == above.GateKey || below.Hash == above.Hash {
		t.Errorf("arms share a key: gate %s/%s hash %s/%s", below.GateKey, above.GateKey, below.Hash, above.Hash)
	}
	// Within an arm, the points share their gates; the gate lengths are the
	// standard ones for SPLITS 16, beyond the threshold included.
	if first := byKey["big/hybrid/td2/S16/NR2/5"]; first.GateKey != below.GateKey || first.Hash == below.Hash {
		t.Errorf("td2 arm at nkv 5 and 511: gate keys %s %s, hashes %s %s", first.GateKey, below.GateKey, first.Hash, below.Hash)
	}
	if want := gateNKV([]int{1, 29}, 16, 2048); !reflect.DeepEqual(below.GateNKV, want) {
		t.Errorf("gate lengths %v, want %v", below.GateNKV, want)
	}
	// The record names the arm's kernel and defines; the variant stays.
	wantDefs := abi.Defines{{Name: "HEAD_DIM", Value: "128"}, {Name: "KV_F16", Value: "1"}, {Name: "NR", Value: "2"}, {Name: "SPLITS", Value: "16"}}
	if c := below.Config; c.Variant != "hybrid" || c.Kernel != "td2" || !reflect.DeepEqual(c.Defines, wantDefs) {
		t.Errorf("config %s/%s %v, want hybrid/td2 %v", c.Variant, c.Kernel, c.Defines, wantDefs)
	}
	// The tr4 arm compiles what the plain tr4 variant compiles, but the
	// records differ by variant, so their hashes do too.
	arm, plain := byKey["big/hybrid/tr4/S32/NR4/2048"], byKey["big/tr4/tr4/S32/NR4/2048"]
	if arm == nil || plain == nil {
		t.Fatal("tr4 points missing")
	}
	if arm.Source.Text != plain.Source.Text || arm.Config.Grid != plain.Config.Grid || arm.Hash == plain.Hash {
		t.Errorf("hybrid tr4 arm %+v vs plain tr4 %+v", arm.Config, plain.Config)
	}

	var skips []string
	for _, s := range p.Skipped {
		skips = append(skips, fmt.Sprintf("%s@%s[%s]: %s", s.Variant, s.Shape, s.Defines.String(), s.Reason))
	}
	wantSkips := []string{
		"tr4@small[NR=4 SPLITS=32]: tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"hybrid@small[NR=2 SPLITS=16]: arm td2 (nkv < 512): td2: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"hybrid@small[NR=4 SPLITS=16]: arm tr4 (nkv ≥ 2048): tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"hybrid@small[NR=8 SPLITS=16]: arm tr4 (nkv ≥ 2048): tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"hybrid@small[NR=2 SPLITS=32]: arm td2 (nkv < 512): td2: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"hybrid@small[NR=4 SPLITS=32]: arm tr4 (nkv ≥ 2048): tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
		"hybrid@small[NR=8 SPLITS=32]: arm tr4 (nkv ≥ 2048): tr4: head_dim 64: 32 lanes × 4 dims need head_dim 128",
	}
	if !reflect.DeepEqual(skips, wantSkips) {
		t.Errorf("skipped:\n%s\nwant:\n%s", strings.Join(skips, "\n"), strings.Join(wantSkips, "\n"))
	}
}

// TestDispatchArmWithoutPoints: an arm whose range holds no nkv of the
// axes is planned nowhere, and the plan says so.
func TestDispatchArmWithoutPoints(t *testing.T) {
	s, err := spec.Parse("testdata/inline.yaml", []byte(`
name: d
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [100, 8192], SPLITS: [8]}
variants:
  - name: h
    dispatch: [{below: 512, kernel: td2}, {below: 4096, kernel: user.cu}, {kernel: tr4}]
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	p, err := BuildFrom(s, "sm_90", fixedFS, Override{})
	if err != nil {
		t.Fatal(err)
	}
	var kernels []string
	for _, pt := range p.Points {
		kernels = append(kernels, fmt.Sprintf("%s@%d", pt.Config.Kernel, pt.Config.NKV))
	}
	if want := []string{"td2@100", "tr4@8192"}; !reflect.DeepEqual(kernels, want) {
		t.Errorf("points %v, want %v", kernels, want)
	}
	want := []string{"variant h: arm user.cu (512 ≤ nkv < 4096) has no point: no nkv of the axes falls in its range"}
	if !reflect.DeepEqual(p.Warnings, want) {
		t.Errorf("warnings %q, want %q", p.Warnings, want)
	}
}

// TestMultiwarpHybrid plans experiments/multiwarp.yaml against the
// built-ins: its hybrid runs d2 below nkv 512 and warp4 from 512 on, each
// arm compiled as the plain variant of that kernel would be.
func TestMultiwarpHybrid(t *testing.T) {
	s := load(t, "../experiments/multiwarp.yaml", variants.Builtins())
	p, err := Build(s, "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	plain := map[string]*Point{}
	for _, pt := range p.Points {
		if c := pt.Config; c.Variant != "hybrid" {
			plain[fmt.Sprintf("%s/%d/%d", c.Variant, c.Splits, c.NKV)] = pt
		}
	}
	n := 0
	for _, pt := range p.Points {
		c := pt.Config
		if c.Variant != "hybrid" {
			continue
		}
		n++
		want := "warp4"
		if c.NKV < 512 {
			want = "d2"
		}
		twin := plain[fmt.Sprintf("%s/%d/%d", want, c.Splits, c.NKV)]
		if c.Kernel != want || c.Splits != 32 || twin == nil {
			t.Errorf("hybrid at nkv %d: kernel %s SPLITS %d, want %s at SPLITS 32", c.NKV, c.Kernel, c.Splits, want)
			continue
		}
		if pt.Source.Name != twin.Source.Name || !reflect.DeepEqual(c.Defines, twin.Config.Defines) || c.Grid != twin.Config.Grid || c.Block != twin.Config.Block {
			t.Errorf("hybrid at nkv %d compiles %s %v %v, variant %s compiles %s %v %v",
				c.NKV, pt.Source.Name, c.Defines, c.Block, want, twin.Source.Name, twin.Config.Defines, twin.Config.Block)
		}
	}
	if n != len(s.NKVs()) {
		t.Errorf("%d hybrid points, want one per nkv (%d)", n, len(s.NKVs()))
	}
	for _, w := range p.Warnings {
		if strings.Contains(w, "hybrid") {
			t.Errorf("warning %q", w)
		}
	}
}

// TestHeadersFollowIncludes: a point carries, and hashes, the headers its
// kernel includes (through other headers too), and no other: editing a
// header that no kernel of the point includes keeps its recorded results.
func TestHeadersFollowIncludes(t *testing.T) {
	base := build(t, "testdata/mixed.yaml")
	pt := base.Points[0]
	if _, ok := pt.Source.Headers["combine.cuh"]; !ok || len(pt.Source.Headers) != 2 {
		t.Fatalf("headers %v: want abi.cuh and, through it, combine.cuh", keysOf(pt.Source.Headers))
	}
	extra := fstest.MapFS{"unrelated.cuh": {Data: []byte("#pragma once // v2\n")}}
	for k, v := range fixedFS {
		extra[k] = v
	}
	p, err := BuildFrom(load(t, "testdata/mixed.yaml", testKernels(t)), "sm_90", extra, Override{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Points[0].Hash != pt.Hash {
		t.Errorf("an unrelated header changed the hash: %s → %s", pt.Hash, p.Points[0].Hash)
	}
	if _, ok := p.Points[0].Source.Headers["unrelated.cuh"]; ok {
		t.Error("a header nothing includes was carried")
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestBitwiseWarningNeedsTwin: "add bitwise_with" is advice only where the
// spec runs the twin the kernel is byte-identical to; d2 alone has none to
// be gated against, and d2 declared bitwise_with r4 needs no advice.
func TestBitwiseWarningNeedsTwin(t *testing.T) {
	for _, tc := range []struct {
		name, variants string
		warn           bool
	}{
		{"twin in the spec", "  - {name: d2, kernel: d2}\n  - {name: r4, kernel: r4}\n", true},
		{"no twin", "  - {name: d2, kernel: d2}\n", false},
		{"declared", "  - {name: d2, kernel: d2, bitwise_with: r4}\n  - {name: r4, kernel: r4}\n", false},
	} {
		s, err := spec.Parse("testdata/inline.yaml", []byte(`name: tw
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [512], SPLITS: [8], NR: [2]}
variants:
`+tc.variants), variants.Builtins())
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		p, err := Build(s, "sm_90")
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := strings.Contains(strings.Join(p.Warnings, "\n"), "add bitwise_with")
		if got != tc.warn {
			t.Errorf("%s: warned %v, want %v: %q", tc.name, got, tc.warn, p.Warnings)
		}
	}
}
