package probe

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// abiArgs are the ABI's partial and combine arguments, parsed.
func abiArgs(t *testing.T, names string) []abi.Arg {
	var out []abi.Arg
	for _, n := range strings.Split(names, ",") {
		a, err := abi.ParseArg(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}

// TestParamsRefusedBeforeLaunch: a kernel whose recorded parameters
// differ from the declared arguments is refused by name before any
// launch; one whose parameters match runs.
func TestParamsRefusedBeforeLaunch(t *testing.T) {
	partial := "q,k,v,positions,partial,heads,kv_heads,capacity,scale"
	good := []abi.ParamSlot{sl(0, 8), sl(8, 8), sl(16, 8), sl(24, 8), sl(32, 8), sl(40, 4), sl(44, 4), sl(48, 4), sl(52, 4)}
	combine := []abi.ParamSlot{sl(0, 8), sl(8, 8), sl(16, 4)}
	// The kernel takes a 32-byte struct where the declaration says heads.
	bad := append(append([]abi.ParamSlot(nil), good[:5]...), sl(40, 32), sl(72, 4), sl(76, 4), sl(80, 4))
	for _, c := range []struct {
		name   string
		params []abi.ParamSlot
		status results.Status
		text   string
	}{
		{"match", good, results.StatusOK, ""},
		{"struct declared as int", bad, results.StatusError, "parameter 5 is 32 bytes at offset 40 in the kernel, but the launch declares heads, 4 bytes at offset 40"},
		{"one missing", good[:8], results.StatusError, "the kernel takes 8 parameters, the launch declares 9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models["k"] = fakeModel{params: map[string][]abi.ParamSlot{"attn_partial": c.params, "attn_combine": combine}}
			b := fakeBackend(t, f)
			p := fakePoint("k", 100)
			p.Launches[0].Args, p.Launches[1].Args = abiArgs(t, partial), abiArgs(t, "partial,out,heads")
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec, err := b.Run(context.Background(), p)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != c.status || !strings.Contains(rec.Error, c.text) {
				t.Fatalf("status %s, error %q; want %s with %q", rec.Status, rec.Error, c.status, c.text)
			}
			if c.status != results.StatusOK && f.calls["launch"] != 0 {
				t.Errorf("%d launches before the refusal", f.calls["launch"])
			}
		})
	}
}

// structSpec declares a params struct with a nested struct, a fixed
// array, an explicit offset, a vector, integer expressions, byte strides
// and a null pointer.
const structSpec = `name: s
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 100}]
axes: {nkv: [50], SPLITS: [4]}
variants:
  - name: eng
    kernel: k.cu
    structs:
      dims:
        fields:
          - {name: heads, arg: heads}
          - {name: row_bytes, arg: kv_row_bytes}
          - {name: group, arg: "u32:heads / kv_heads"}
      params:
        size: 128
        fields:
          - {name: q, arg: q}
          - {name: out, arg: out}
          - {name: flag, arg: "i32:1"}
          - {name: d, struct: dims}
          - {name: strides, arg: "i64:kv_head_stride * 2", count: 3}
          - {name: scale, arg: scale}
          - {name: none, arg: null}
          - {name: grid, arg: {uint3: [SPLITS, heads, batch]}}
          - {name: tail, arg: "i32:capacity - 1", offset: 120}
    launches:
      - {entry: k, grid: [SPLITS], block: [32], args: [{struct: params}, positions, "i64:heads * head_dim"]}
      - {entry: c, grid: [1], block: [32], args: [out]}
`

// TestStructBytes marshals the struct and checks its bytes field by field
// at offsets derived by hand from the C rules (and by gcc's offsetof when
// gcc is on the machine), and that the driver's parameter list matches.
func TestStructBytes(t *testing.T) {
	pl := planned(t, structSpec, map[string]string{"k.cu": "// test\n"})
	pt := pl.Points[0]
	w := testWorkspace()
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	w.l = l
	args, err := marshal(pt.Launches[0].Args, pt.Config.Shape, pt.Config.Defines, 0, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, ok := args[0].([]byte)
	if !ok || len(b) != 128 {
		t.Fatalf("struct argument %T of %d bytes, want 128", args[0], len(b))
	}
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(b[off:]) }
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	// q@0 out@8 flag@16 d@24{heads@0 row_bytes@8 group@16; size 24}
	// strides@48[3] scale@72 none@80 grid@88 tail@120: the offsets of
	// struct params in kernels/testdata/params_struct.h.
	want := map[string][2]uint64{
		"q": {0, uint64(w.q)}, "out": {8, uint64(w.out)}, "flag": {16, 1}, "d.heads": {24, 8}, "d.row_bytes": {32, 2 * 64 * 2},
		"d.group": {40, 4}, "strides[0]": {48, 128}, "strides[2]": {64, 128}, "none": {80, 0},
		"grid.x": {88, 4}, "grid.y": {92, 8}, "grid.z": {96, 3}, "tail": {120, 99},
	}
	for name, w := range want {
		var got uint64
		switch name {
		case "q", "out", "d.row_bytes", "strides[0]", "strides[2]", "none":
			got = u64(int(w[0]))
		default:
			got = uint64(u32(int(w[0])))
		}
		if got != w[1] {
			t.Errorf("%s at %d: %d, want %d", name, w[0], got, w[1])
		}
	}
	if s := math.Float32frombits(u32(72)); s != 0.125 {
		t.Errorf("scale %v", s)
	}
	if args[2] != int64(512) {
		t.Errorf("heads * head_dim as i64: %#v", args[2])
	}
	if off := gccOffsets(t); off != nil {
		for name, w := range want {
			if o, ok := off[strings.Split(name, "[")[0]]; ok && !strings.Contains(name, "[") && o != int(w[0]) {
				t.Errorf("gcc puts %s at %d, the layout at %d", name, o, w[0])
			}
		}
		if off["sizeof"] != 128 {
			t.Errorf("gcc sizeof %d", off["sizeof"])
		}
	}
	slots, err := abi.ParamSlots(pt.Launches[0].Args)
	if err != nil {
		t.Fatal(err)
	}
	if want := []abi.ParamSlot{sl(0, 128), sl(128, 8), sl(136, 8)}; len(slots) != 3 || slots[0] != want[0] || slots[1] != want[1] || slots[2] != want[2] {
		t.Errorf("parameter slots %v, want %v", slots, want)
	}
	if _, err := cuda.ArgBytes(args[0]); err != nil {
		t.Error(err)
	}
}

// gccOffsets compiles kernels/testdata/params_struct.cuh's host mirror
// with gcc and returns offsetof of each field of struct params (dotted
// for the nested one) and its sizeof; nil without gcc.
func gccOffsets(t *testing.T) map[string]int {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		t.Log("no gcc: the offsets are checked against the hand-derived ones only")
		return nil
	}
	dir := t.TempDir()
	src := `#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
typedef struct { unsigned x, y, z; } uint3;
#include "` + filepath.Join(wd(t), "..", "kernels", "testdata", "params_struct.h") + `"
int main(void) {
  printf("q %zu\nout %zu\nflag %zu\nd.heads %zu\nd.row_bytes %zu\nd.group %zu\nstrides %zu\nscale %zu\nnone %zu\ngrid.x %zu\ntail %zu\nsizeof %zu\n",
    offsetof(struct params, q), offsetof(struct params, out), offsetof(struct params, flag),
    offsetof(struct params, d) + offsetof(struct dims, heads), offsetof(struct params, d) + offsetof(struct dims, row_bytes),
    offsetof(struct params, d) + offsetof(struct dims, group), offsetof(struct params, strides), offsetof(struct params, scale),
    offsetof(struct params, none), offsetof(struct params, grid), offsetof(struct params, tail), sizeof(struct params));
  return 0;
}
`
	if err := os.WriteFile(filepath.Join(dir, "off.c"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(gcc, "-o", filepath.Join(dir, "off"), filepath.Join(dir, "off.c")).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	out, err := exec.Command(filepath.Join(dir, "off")).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		n, _ := strconv.Atoi(f[1])
		m[f[0]] = n
	}
	return m
}

func wd(t *testing.T) string {
	d, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func sl(offset, size int) abi.ParamSlot { return abi.ParamSlot{Offset: offset, Size: size} }

const scratchSpec = `name: s
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 100}]
axes: {nkv: [50], SPLITS: [4]}
variants:
  - name: eng
    kernel: k.cu
    io: {workspace: "100"}
    scratch:
      exp_sums: {bytes: "batch * heads * SPLITS * 4", fill: poison}
      tmp_out: {bytes: "batch * heads * SPLITS * head_dim * 4", fill: zero}
    launches:
      - {entry: k, grid: [SPLITS], block: [32], args: [q, k, v, seqlens, "scratch:exp_sums", "scratch:tmp_out", workspace, out]}
`

// TestScratchBuffers: named scratch buffers lie after io.workspace's
// bytes, 256-aligned, are passed by name, and hold their declared fill
// when the workspace is made (the fake device applies the same fills).
func TestScratchBuffers(t *testing.T) {
	pt := planned(t, scratchSpec, map[string]string{"k.cu": "// test\n"}).Points[0]
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	// 100 bytes of workspace, exp_sums at 256 (384 bytes), tmp_out at 768.
	if want := abi.Align16(768 + 3*8*4*64*4); l.Workspace != want {
		t.Fatalf("workspace allocation %d bytes, want %d", l.Workspace, want)
	}
	f := newFakeDevice()
	w, err := f.allocWorkspace(l)
	if err != nil {
		t.Fatal(err)
	}
	args, err := marshal(pt.Launches[0].Args, pt.Config.Shape, pt.Config.Defines, 0, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if args[4] != w.workspace+256 || args[5] != w.workspace+768 || args[6] != w.workspace {
		t.Errorf("scratch pointers %v %v %v, workspace %#x", args[4], args[5], args[6], w.workspace)
	}
	mem := f.at(w.workspace)
	if binary.LittleEndian.Uint32(mem[256:]) != poison || binary.LittleEndian.Uint32(mem[256+380:]) != poison {
		t.Error("exp_sums is not poisoned")
	}
	if binary.LittleEndian.Uint32(mem[768:]) != 0 || binary.LittleEndian.Uint32(mem[252:]) != 0 {
		t.Error("tmp_out, or the gap before exp_sums, is not zero")
	}
	if !strings.Contains(pt.Launches[0].Args[4].String(), "scratch:exp_sums") {
		t.Errorf("hash text %s", pt.Launches[0].Args[4])
	}
}

// fastdivSpec passes fast-division objects in a params struct, their
// constants computed from the PAGE and CHUNK defines by the host
// functions of the expressions (kernels/testdata/fastdiv.cu's layout).
const fastdivSpec = `name: s
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 100}]
axes: {nkv: [50], SPLITS: [1], PAGE: [7], CHUNK: [12]}
variants:
  - name: eng
    kernel: k.cu
    structs:
      uint_fastdiv:
        fields:
          - {name: d, arg: "u32:PAGE"}
          - {name: m, arg: "u32:fastdiv_m(PAGE)"}
          - {name: s, arg: "u32:fastdiv_s(PAGE)"}
          - {name: a, arg: "u32:fastdiv_a(PAGE)"}
      fast_mod_div:
        fields:
          - {name: divisor, arg: "u32:CHUNK"}
          - {name: multiplier, arg: "u32:fmd_mul(CHUNK)"}
          - {name: add, arg: "u32:fmd_add(CHUNK)"}
          - {name: shift, arg: "i32:fmd_shift(CHUNK)"}
      params:
        fields:
          - {name: out, arg: out}
          - {name: page, struct: uint_fastdiv}
          - {name: chunk, struct: fast_mod_div}
          - {name: n, arg: "i32:capacity"}
    launches:
      - {entry: divide, grid: [1], block: [128], args: [{struct: params}]}
`

// TestFastdivStructBytes: the host-computed constants land in the
// struct's bytes, and a kernel dividing with them gets every quotient of
// the launch's indices right (the kernel's formulas, run here).
func TestFastdivStructBytes(t *testing.T) {
	pt := planned(t, fastdivSpec, map[string]string{"k.cu": "// test\n"}).Points[0]
	w := testWorkspace()
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	w.l = l
	args, err := marshal(pt.Launches[0].Args, pt.Config.Shape, pt.Config.Defines, 0, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	b := args[0].([]byte)
	if len(b) != 48 {
		t.Fatalf("struct of %d bytes, want 48 (out@0, page@8, chunk@24, n@40, padded to 8)", len(b))
	}
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(b[off:]) }
	d, m, s, a := u32(8), u32(12), u32(16), u32(20)
	div, mul, add, shift := u32(24), u32(28), u32(32), u32(36)
	if d != 7 || m != 0x24924925 || s != 3 || a != 1 || div != 12 || shift != 3 {
		t.Errorf("uint_fastdiv {%d %#x %d %d}, fast_mod_div {%d %d %d %d}", d, m, s, a, div, mul, add, shift)
	}
	for i := uint32(0); i < 1<<20; i++ {
		hi, _ := bits.Mul32(m, i)
		q1 := (hi + a*i) >> s
		n := i + add
		hi2, _ := bits.Mul32(n, mul)
		if q1 != i/7 || hi2>>shift != i/12 {
			t.Fatalf("%d: %d and %d, want %d and %d", i, q1, hi2>>shift, i/7, i/12)
		}
	}
}

// An engine that passes scale pointers for every cache type (vLLM's
// k_scale and v_scale) gets them on an unscaled K/V too: a kv_scale
// allocation exists only because a launch names it, and it holds 1.0.
func TestUnscaledScalePointers(t *testing.T) {
	const specText = `name: s
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 100}]
axes: {nkv: [50], SPLITS: [1]}
variants:
  - name: with
    kernel: k.cu
    launches: [{entry: k, grid: [1], block: [32], args: [q, out, k_scale, v_scale]}]
  - name: without
    kernel: k.cu
    launches: [{entry: k, grid: [1], block: [32], args: [q, out]}]
`
	pl := planned(t, specText, map[string]string{"k.cu": "// test\n"})
	with, err := pointLayout(pl.Points[0])
	if err != nil {
		t.Fatal(err)
	}
	without, err := pointLayout(pl.Points[1])
	if err != nil {
		t.Fatal(err)
	}
	if with.KVScale != 16 || without.KVScale != 0 {
		t.Errorf("kv_scale bytes %d with scale pointers, %d without; want 16 (2 × 2 KV heads × 4) and 0", with.KVScale, without.KVScale)
	}
	w := testWorkspace()
	w.l = with
	w.kvScale = 0x9000
	args, err := marshal(pl.Points[0].Launches[0].Args, pl.Points[0].Config.Shape, pl.Points[0].Config.Defines, 0, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(args[2]) != fmt.Sprint(0x9000) || fmt.Sprint(args[3]) != fmt.Sprint(0x9000+8) {
		t.Errorf("k_scale %#v, v_scale %#v; want the kv_scale buffer and its V half (2 KV heads later)", args[2], args[3])
	}
}

// A scratch buffer named like a word of the vocabulary (shadow: true)
// with a constant fill: scratch:k_scale passes it, and the workspace
// writes 1.0 in every word of it before the first launch.
func TestScratchConstantShadow(t *testing.T) {
	const specText = `name: s
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 100}]
axes: {nkv: [50], SPLITS: [1]}
variants:
  - name: eng
    kernel: k.cu
    scratch:
      k_scale: {bytes: "kv_heads * 4", fill: "f32:1.0", shadow: true}
      marks: {bytes: 64, fill: "i32:-1"}
    launches: [{entry: k, grid: [1], block: [32], args: [q, out, "scratch:k_scale", "scratch:marks"]}]
`
	pt := planned(t, specText, map[string]string{"k.cu": "// test\n"}).Points[0]
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	if l.KVScale != 0 {
		t.Errorf("the vocabulary's kv_scale is allocated (%d bytes) though only the scratch buffer is passed", l.KVScale)
	}
	w := testWorkspace()
	w.l, w.workspace = l, 0x10000
	words := map[string]uint32{}
	for _, f := range w.workspaceFills() {
		words[f.name] = f.word
	}
	if words["k_scale"] != math.Float32bits(1) || words["marks"] != 0xffffffff {
		t.Errorf("fills %v; want k_scale 1.0 (%#x) and marks -1", words, math.Float32bits(1))
	}
	if pt.Scratch[0].Fill != "f32:1" {
		t.Errorf("fill %q, want the canonical f32:1", pt.Scratch[0].Fill)
	}
}
