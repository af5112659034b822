package spec

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/golden"
)

// TestDocExample keeps doc.go's complete example and testdata/full.yaml
// identical, so that the example a user reads is one the tests parse.
func TestDocExample(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start := strings.Index(text, "// # A complete example")
	end := strings.Index(text, "// # Keys")
	if start < 0 || end < start {
		t.Fatal("doc.go: example section not found")
	}
	var lines []string
	for _, l := range strings.Split(text[start:end], "\n") {
		switch {
		case strings.HasPrefix(l, "//\t"):
			lines = append(lines, l[3:])
		case l == "//" && len(lines) > 0:
			lines = append(lines, "")
		}
	}
	example := strings.TrimRight(strings.Join(lines, "\n"), "\n") + "\n"
	file, err := os.ReadFile("testdata/full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if string(file) != example {
		t.Errorf("testdata/full.yaml differs from doc.go's example (-file +doc):\n%s", golden.Diff(string(file), example))
	}
}

// TestFullExample decodes the documented example and compares it with the
// Spec written out by hand from the text.
func TestFullExample(t *testing.T) {
	kernels := testKernels(t)
	s, err := Load("testdata/full.yaml", kernels)
	if err != nil {
		t.Fatal(err)
	}
	if s.Variants[0].Builtin != kernels["r4"] || s.Variants[1].Builtin != kernels["d2"] || s.Variants[2].Builtin != nil {
		t.Errorf("kernels resolved to %v, %v, %v", s.Variants[0].Builtin, s.Variants[1].Builtin, s.Variants[2].Builtin)
	}
	if want := "testdata/kernels/mine.cu"; s.Variants[2].Path != want {
		t.Errorf("user kernel path %q, want %q", s.Variants[2].Path, want)
	}
	// Positions are checked once here, then cleared for the comparison.
	if p := s.Variants[1].Pos; p.Line != 38 || p.Col != 5 {
		t.Errorf("variants[1] at %d:%d, want 38:5", p.Line, p.Col)
	}
	if p := s.Axes[1].Pos; p.Line != 31 || p.Col != 3 {
		t.Errorf("axes.SPLITS at %d:%d, want 31:3", p.Line, p.Col)
	}
	s.Landed.Pos = Pos{}
	for i := range s.Shapes {
		s.Shapes[i].Pos = Pos{}
	}
	for i := range s.Axes {
		s.Axes[i].Pos = Pos{}
	}
	if a := s.Variants[3].Dispatch; len(a) != 2 || a[0].Builtin != kernels["d2"] || a[1].Builtin != kernels["r4"] || a[1].Pos != (Pos{Line: 53, Col: 9}) {
		t.Errorf("dispatch arms %+v: want d2 then r4 (at 53:9)", a)
	}
	for i := range s.Variants {
		s.Variants[i].Pos, s.Variants[i].Builtin, s.Variants[i].Path = Pos{}, nil, ""
		for j := range s.Variants[i].Launches {
			s.Variants[i].Launches[j].Pos = Pos{}
		}
		for j := range s.Variants[i].Dispatch {
			s.Variants[i].Dispatch[j].Pos, s.Variants[i].Dispatch[j].Builtin = Pos{}, nil
		}
	}
	want := &Spec{
		Version:     1,
		Path:        "testdata/full.yaml",
		Dir:         "testdata",
		Name:        "slice",
		Description: "R4 against D2 on the 7B decode shape",
		Landed:      Landed{Variant: "d2", Defines: map[string]string{"SPLITS": "32"}},
		Shapes: []Shape{
			{Shape: abi.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768}},
			{Shape: abi.Shape{Name: "7b-long", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f32", Batch: 2, Capacity: 65536}},
		},
		Axes: []Axis{
			{Name: "nkv", Values: []string{"1", "512", "2048", "32768"}},
			{Name: "SPLITS", Values: []string{"16", "32"}},
		},
		Variants: []Variant{
			{Name: "r4", KernelRef: KernelRef{Kernel: "r4"}, Defines: map[string][]string{"NR": {"4", "8"}}, DefineOrder: []string{"NR"}},
			{Name: "d2", KernelRef: KernelRef{Kernel: "d2"}, Defines: map[string][]string{}, BitwiseWith: "r4"},
			{Name: "mine", KernelRef: KernelRef{Kernel: "kernels/mine.cu"},
				Defines:     map[string][]string{"SPLITS": {"64"}, "WARPS": {"2"}},
				DefineOrder: []string{"SPLITS", "WARPS"},
				Grid:        []string{"SPLITS", "heads", "batch"}, Block: []string{"32 * WARPS"},
				Shared: "WARPS * (head_dim + 4) * 4", NeverCaptured: true, PDL: true, Cluster: []string{"2"}},
			{Name: "hybrid", Defines: map[string][]string{}, Dispatch: []Arm{
				{Below: 2048, KernelRef: KernelRef{Kernel: "d2"}, Defines: map[string]string{"NR": "2"}, DefineOrder: []string{"NR"}},
				{KernelRef: KernelRef{Kernel: "r4"}, Defines: map[string]string{}},
			}},
			{Name: "engine", KernelRef: KernelRef{Kernel: "engine/eng.cu"}, Defines: map[string][]string{},
				Include: []string{"testdata/engine/include"}, Flags: []string{"-DATTN_SPLITS=SPLITS"},
				IO: &abi.IO{Q: "f32", Out: "f16", KVLayout: "bshd", Partial: "abi"},
				Launches: []Launch{
					{Entry: "split_partial<__half, 4>", Grid: []string{"SPLITS", "heads", "batch"}, Block: []string{"32"},
						Args: []abi.Arg{{Name: "q", Type: abi.ArgPtr}, {Name: "k", Type: abi.ArgPtr}, {Name: "v", Type: abi.ArgPtr},
							{Name: "positions", Type: abi.ArgPtr}, {Name: "partial", Type: abi.ArgPtr}, {Name: "heads", Type: abi.ArgI32},
							{Name: "kv_heads", Type: abi.ArgI32}, {Name: "head_dim", Type: abi.ArgI32}, {Name: "kv_row_stride", Type: abi.ArgI32},
							{Name: "pstr", Type: abi.ArgI32}, {Name: "scale", Type: abi.ArgF32}}},
					{Entry: "split_combine", Grid: []string{"heads", "batch"}, Block: []string{"head_dim"},
						Args: []abi.Arg{{Name: "partial", Type: abi.ArgPtr}, {Name: "out", Type: abi.ArgPtr}, {Name: "heads", Type: abi.ArgI32},
							{Name: "head_dim", Type: abi.ArgI32}, {Name: "pstr", Type: abi.ArgI32}}},
				}},
			{Name: "shipped", KernelRef: KernelRef{Kernel: "engine/eng.ptx"}, Defines: map[string][]string{}, Artifact: "ptx"},
		},
		Probes:  []string{"cold", "hot", "graph"},
		Gates:   Gates{NKV: []int{1, 29, 52, 512, 1641}, MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6, Seed: 1},
		Measure: Measure{Warmup: 3, MinSamples: 10, MaxSamples: 200, MaxNoise: 0.03, BudgetSec: 2, HotBatch: 20, TimeoutSec: 120},
		Engine:  &Engine{Layers: 28, StepMS: 21},
		Warnings: []*Error{{File: "testdata/full.yaml", Line: 43, Col: 15,
			Msg: "warning: variants[2] (mine): its own SPLITS [64] replaces the axis SPLITS [16 32]"}},
	}
	if !reflect.DeepEqual(s, want) {
		t.Errorf("decoded\n%+v\nwant\n%+v", s, want)
	}
}

// TestDefaults checks that a minimal spec gets the documented defaults.
func TestDefaults(t *testing.T) {
	s, err := Parse("min.yaml", []byte(`
name: m
shapes: [{name: s, heads: 8, kv_heads: 8, head_dim: 64, kv_dtype: f32}]
axes: {SPLITS: [4], nkv: [100, 7]}
variants: [{name: u, kernel: testdata/kernels/mine.cu}]
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	if s.Axes[0].Name != NKV || s.Axes[1].Name != "SPLITS" {
		t.Errorf("axes %v: want nkv first", s.Axes)
	}
	if got := s.NKVs(); !reflect.DeepEqual(got, []int{7, 100}) {
		t.Errorf("NKVs() = %v, want ascending [7 100]", got)
	}
	// Capacity covers the largest nkv of the axes and of the gates (1641).
	if sh := s.Shapes[0]; sh.Batch != 1 || sh.Capacity != 1641 {
		t.Errorf("batch %d capacity %d, want 1 and 1641", sh.Batch, sh.Capacity)
	}
	if !reflect.DeepEqual(s.Probes, []string{"cold", "hot"}) {
		t.Errorf("probes %v, want [cold hot]", s.Probes)
	}
	if s.Gates.Seed != 1 || s.Gates.MaxAbs != 2e-3 || len(s.Gates.NKV) != 5 {
		t.Errorf("gates %+v", s.Gates)
	}
	if s.Measure.BudgetSec != 2 || s.Measure.TimeoutSec != 120 || s.Measure.HotBatch != 20 {
		t.Errorf("measure %+v", s.Measure)
	}
	if s.Version != SpecVersion {
		t.Errorf("version %d, want %d", s.Version, SpecVersion)
	}
	if s.Engine != nil || s.Landed.Variant != "" {
		t.Errorf("engine %v landed %+v, want none", s.Engine, s.Landed)
	}
}

func TestDurations(t *testing.T) {
	for _, c := range []struct {
		text string
		want float64
	}{{"2s", 2}, {"500ms", 0.5}, {"1m30s", 90}, {"3", 3}, {"0.25", 0.25}} {
		s, err := Parse("d.yaml", []byte(`
name: m
shapes: [{name: s, heads: 8, kv_heads: 8, head_dim: 64, kv_dtype: f32}]
axes: {nkv: [7], SPLITS: [4]}
variants: [{name: u, kernel: testdata/kernels/mine.cu}]
measure: {budget: `+c.text+`}
`), testKernels(t))
		if err != nil {
			t.Errorf("budget %s: %v", c.text, err)
			continue
		}
		if s.Measure.BudgetSec != c.want {
			t.Errorf("budget %s = %v s, want %v", c.text, s.Measure.BudgetSec, c.want)
		}
	}
}

func TestDefineAxes(t *testing.T) {
	s, err := Load("testdata/full.yaml", testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	type ax struct {
		name string
		vals []string
	}
	flat := func(axes []Axis) []ax {
		var out []ax
		for _, a := range axes {
			out = append(out, ax{a.Name, a.Values})
		}
		return out
	}
	for _, c := range []struct {
		variant string
		want    []ax
	}{
		// r4 declares NR: its own list replaces the default.
		{"r4", []ax{{"SPLITS", []string{"16", "32"}}, {"NR", []string{"4", "8"}}}},
		// d2 sets NR nowhere: the kernel's default.
		{"d2", []ax{{"SPLITS", []string{"16", "32"}}, {"NR", []string{"4"}}}},
		// A user kernel takes every define; its own SPLITS replaces the axis.
		{"mine", []ax{{"SPLITS", []string{"64"}}, {"WARPS", []string{"2"}}}},
		// The dispatch: d2 fixes NR and r4's default is per arm, so only
		// SPLITS multiplies its points.
		{"hybrid", []ax{{"SPLITS", []string{"16", "32"}}}},
	} {
		if got := flat(s.DefineAxes(s.Variant(c.variant))); !reflect.DeepEqual(got, c.want) {
			t.Errorf("DefineAxes(%s) = %v, want %v", c.variant, got, c.want)
		}
	}
}

func TestUndeclaredAxisIsNotApplied(t *testing.T) {
	s, err := Parse("u.yaml", []byte(`
name: m
shapes: [{name: s, heads: 8, kv_heads: 8, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [7], SPLITS: [4], WARPS: [1, 2, 4]}
variants: [{name: r4, kernel: r4}, {name: u, kernel: testdata/kernels/mine.cu}]
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range s.DefineAxes(s.Variant("r4")) {
		if a.Name == "WARPS" {
			t.Errorf("r4 does not declare WARPS, but DefineAxes applies it")
		}
	}
	found := false
	for _, a := range s.DefineAxes(s.Variant("u")) {
		found = found || a.Name == "WARPS"
	}
	if !found {
		t.Errorf("a user kernel takes every axis define, but WARPS is missing")
	}
}

func TestCombinations(t *testing.T) {
	axes := []Axis{{Name: "A", Values: []string{"1", "2"}}, {Name: "B", Values: []string{"x", "y", "z"}}}
	var got []string
	Combinations(axes, func(v []string) bool { got = append(got, strings.Join(v, "")); return true })
	want := []string{"1x", "1y", "1z", "2x", "2y", "2z"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Combinations = %v, want %v", got, want)
	}
	got = nil
	Combinations(axes, func(v []string) bool { got = append(got, strings.Join(v, "")); return len(got) < 2 })
	if len(got) != 2 {
		t.Errorf("Combinations did not stop when fn returned false: %v", got)
	}
	n := 0
	Combinations(nil, func([]string) bool { n++; return true })
	if n != 1 {
		t.Errorf("no axes: %d combinations, want exactly one (the empty one)", n)
	}
}

// TestSkipNotError: a global axis value a kernel refuses, or a shape it
// refuses, is not a spec error as long as some point remains.
func TestSkipNotError(t *testing.T) {
	_, err := Parse("s.yaml", []byte(`
name: m
shapes:
  - {name: ok, heads: 8, kv_heads: 8, head_dim: 128, kv_dtype: f16}
  - {name: small, heads: 8, kv_heads: 8, head_dim: 64, kv_dtype: f16}
axes: {nkv: [7], SPLITS: [4], NR: [4, 8]}
variants: [{name: d2, kernel: d2}]
`), testKernels(t))
	if err != nil {
		t.Errorf("refused a spec with runnable points: %v", err)
	}
}
