package spec

import (
	"reflect"
	"strings"
	"testing"
)

const hybridSpec = `
name: h
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [1, 511, 512, 4095, 4096, 32768], SPLITS: [16, 32], NR: [4, 8], WARPS: [2]}
landed: {variant: hybrid, defines: {SPLITS: 32}}
variants:
  - name: hybrid
    defines: {SPLITS: [32, 64]}
    dispatch:
      - {below: 512, kernel: d2, defines: {NR: 2}}
      - {below: 4096, kernel: testdata/kernels/mine.cu}
      - {kernel: r4}
`

func TestDispatchDecode(t *testing.T) {
	kernels := testKernels(t)
	s, err := Parse("h.yaml", []byte(hybridSpec), kernels)
	if err != nil {
		t.Fatal(err)
	}
	v := s.Variant("hybrid")
	if v.Kernel != "" || v.Builtin != nil || len(v.Dispatch) != 3 {
		t.Fatalf("variant %+v", v)
	}
	a := v.Dispatch
	if a[0].Below != 512 || a[0].Builtin != kernels["d2"] || !reflect.DeepEqual(a[0].Defines, map[string]string{"NR": "2"}) {
		t.Errorf("arm 0 %+v", a[0])
	}
	if a[1].Below != 4096 || a[1].Builtin != nil || a[1].Path != "testdata/kernels/mine.cu" {
		t.Errorf("arm 1 %+v", a[1])
	}
	if a[2].Below != 0 || a[2].Builtin != kernels["r4"] || a[2].Pos != (Pos{Line: 12, Col: 9}) {
		t.Errorf("arm 2 %+v", a[2])
	}

	// The first arm whose below exceeds nkv; the catch-all past the last.
	for _, c := range []struct {
		nkv  int
		want int
	}{{1, 0}, {511, 0}, {512, 1}, {4095, 1}, {4096, 2}, {1 << 30, 2}} {
		if got := v.Arm(c.nkv); got != &v.Dispatch[c.want] {
			t.Errorf("Arm(%d) = %+v, want arm %d", c.nkv, got, c.want)
		}
	}
	if s.Variants[0].Arm(1) == nil || (&Variant{KernelRef: KernelRef{Kernel: "r4"}}).Arm(1) != nil {
		t.Error("Arm: want nil only for a single-kernel variant")
	}
	for i, want := range []string{"nkv < 512", "512 ≤ nkv < 4096", "nkv ≥ 4096"} {
		if got := v.ArmRange(i); got != want {
			t.Errorf("ArmRange(%d) = %q, want %q", i, got, want)
		}
	}

	// SPLITS: the variant's own values; NR: swept by the user and r4 arms
	// (d2 fixes it); WARPS: only the user kernel takes it.
	var axes []string
	for _, ax := range s.DefineAxes(v) {
		axes = append(axes, ax.Name+"="+strings.Join(ax.Values, ","))
	}
	if want := []string{"SPLITS=32,64", "NR=4,8", "WARPS=2"}; !reflect.DeepEqual(axes, want) {
		t.Errorf("DefineAxes = %v, want %v", axes, want)
	}
	sh := &s.Shapes[0]
	all := s.DefineAxes(v)
	vals := []string{"64", "8", "2"}
	for i, want := range []map[string]string{
		{"SPLITS": "64", "NR": "2", "HEAD_DIM": "128", "KV_F16": "1"},
		{"SPLITS": "64", "NR": "8", "WARPS": "2", "HEAD_DIM": "128", "KV_F16": "1"},
		{"SPLITS": "64", "NR": "8", "HEAD_DIM": "128", "KV_F16": "1"},
	} {
		if got := sh.ArmDefines(&v.Dispatch[i], all, vals); !reflect.DeepEqual(got, want) {
			t.Errorf("ArmDefines(arm %d) = %v, want %v", i, got, want)
		}
	}
}

// TestDispatchDefaults: a built-in arm gets its declared defaults, and an
// arm may fix SPLITS when no axis gives it.
func TestDispatchDefaults(t *testing.T) {
	s, err := Parse("h.yaml", []byte(`
name: h
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [1, 4096]}
variants:
  - name: hybrid
    dispatch:
      - {below: 512, kernel: d2, defines: {SPLITS: 16}}
      - {kernel: r4, defines: {SPLITS: 64, NR: 8}}
`), testKernels(t))
	if err != nil {
		t.Fatal(err)
	}
	v := &s.Variants[0]
	if axes := s.DefineAxes(v); len(axes) != 0 {
		t.Errorf("DefineAxes = %v, want none (every define is fixed by its arm)", axes)
	}
	sh := &s.Shapes[0]
	if got := sh.ArmDefines(v.Arm(1), nil, nil); got["SPLITS"] != "16" || got["NR"] != "4" {
		t.Errorf("d2 arm defines %v, want SPLITS 16 and d2's default NR 4", got)
	}
	if got := sh.ArmDefines(v.Arm(4096), nil, nil); got["SPLITS"] != "64" || got["NR"] != "8" {
		t.Errorf("r4 arm defines %v, want SPLITS 64 NR 8", got)
	}
}

// TestDispatchSplitsMissing: an arm without SPLITS anywhere is refused at
// the arm, not at the variant.
func TestDispatchSplitsMissing(t *testing.T) {
	_, err := Parse("h.yaml", []byte(`
name: h
shapes: [{name: s, heads: 28, kv_heads: 4, head_dim: 128, kv_dtype: f16}]
axes: {nkv: [1, 4096]}
variants:
  - name: hybrid
    dispatch:
      - {below: 512, kernel: d2, defines: {SPLITS: 16}}
      - {kernel: r4}
`), testKernels(t))
	want := "h.yaml:9:9: variants[0] (hybrid).dispatch[1] (r4): no value for SPLITS: add an axis SPLITS, defines: {SPLITS: …} to the variant or to the arm"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
}

// TestDispatchCannotRun: a built-in arm that refuses every combination
// refuses the spec, at the arm's kernel.
func TestDispatchCannotRun(t *testing.T) {
	_, err := Parse("h.yaml", []byte(`
name: h
shapes: [{name: s, heads: 8, kv_heads: 8, head_dim: 64, kv_dtype: f16}]
axes: {nkv: [1, 4096], SPLITS: [8]}
variants:
  - name: hybrid
    dispatch:
      - {below: 512, kernel: testdata/kernels/mine.cu}
      - {kernel: r4}
`), testKernels(t))
	want := "h.yaml:9:18: variants[0] (hybrid).dispatch[1]: kernel r4 cannot run any point of this sweep: r4: head_dim 64: each of the 32 lanes owns 4 dimensions, so head_dim must be 128"
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant  %s", err, want)
	}
}
