package probe

import (
	"context"
	"encoding/binary"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// tensorMapSpec passes K as a CUtensorMap between a pointer and an int, as
// TensorRT-LLM's XQA passes its K/V cache, and V's map inside a struct.
const tensorMapSpec = `name: s
shapes: [{name: s, heads: 8, kv_heads: 2, head_dim: 64, kv_dtype: f16, batch: 3, capacity: 100}]
axes: {nkv: [50], SPLITS: [4]}
variants:
  - name: eng
    kernel: k.cu
    structs:
      vmap: {fields: [{name: n, arg: heads}, {name: map, arg: {tensor_map: {buffer: v, dtype: f16, dims: [head_dim, capacity], strides: [kv_row_bytes], box: [64, 32]}}}]}
    launches:
      - entry: k
        grid: [SPLITS]
        block: [32]
        args:
          - out
          - tensor_map: {buffer: k, dtype: kv, dims: [head_dim, kv_heads, "capacity * batch"], box: [head_dim, 1, 64],
                         swizzle: 128b, l2_promotion: 256b, oob_fill: nan, element_strides: [1, 1, 2]}
          - heads
          - {struct: vmap}
`

// TestTensorMapBytes marshals the tensor maps through the fake's encoding
// and checks every argument of the encoding byte for byte: the K/V type,
// the rank, the modes, K's device address, the dimensions, the packed byte
// strides, the box and the element strides; the struct holds V's map at
// offset 64 (CUtensorMap is 64-aligned).
func TestTensorMapBytes(t *testing.T) {
	pt := planned(t, tensorMapSpec, map[string]string{"k.cu": "// test\n"}).Points[0]
	l, err := pointLayout(pt)
	if err != nil {
		t.Fatal(err)
	}
	f := newFakeDevice()
	w, err := f.allocWorkspace(l)
	if err != nil {
		t.Fatal(err)
	}
	args, err := marshal(pt.Launches[0].Args, pt.Config.Shape, pt.Config.Defines, 0, w, f.encodeTensorMap)
	if err != nil {
		t.Fatal(err)
	}
	m, ok := args[1].(cuda.TensorMap)
	if !ok {
		t.Fatalf("argument 1 is %T, want a cuda.TensorMap", args[1])
	}
	var want cuda.TensorMap
	want[0], want[1], want[3], want[4], want[5] = 6, 3, 3, 3, 1 // FLOAT16, rank 3, SWIZZLE_128B, L2_256B, NAN_REQUEST_ZERO_FMA
	put64 := func(b []byte, off int, v uint64) { binary.LittleEndian.PutUint64(b[off:], v) }
	put32 := func(b []byte, off int, v uint32) { binary.LittleEndian.PutUint32(b[off:], v) }
	put64(want[:], 8, uint64(w.k))
	put64(want[:], 16, 64)
	put64(want[:], 24, 2)
	put64(want[:], 32, 300)
	put64(want[:], 56, 64*2)   // a row of head_dim f16
	put64(want[:], 64, 64*2*2) // kv_heads rows
	put32(want[:], 88, 64)
	put32(want[:], 92, 1)
	put32(want[:], 96, 64)
	put32(want[:], 108, 1)
	put32(want[:], 112, 1)
	put32(want[:], 116, 2)
	if m != want {
		t.Errorf("K's tensor map\n got %x\nwant %x", m[:], want[:])
	}
	st, ok := args[3].([]byte)
	if !ok || len(st) != 192 {
		t.Fatalf("the struct is %T of %d bytes, want 192 (an int, then the map at 64)", args[3], len(st))
	}
	if binary.LittleEndian.Uint32(st) != 8 || st[64] != 6 || st[65] != 2 || binary.LittleEndian.Uint64(st[72:]) != uint64(w.v) ||
		binary.LittleEndian.Uint64(st[64+56:]) != 2*64*2 || binary.LittleEndian.Uint32(st[64+92:]) != 32 {
		t.Errorf("struct bytes %x", st)
	}
	if b, err := cuda.ArgBytes(args[1]); err != nil || len(b) != 128 {
		t.Errorf("ArgBytes of a tensor map: %d bytes, %v", len(b), err)
	}
	if !strings.Contains(pt.Launches[0].Args[1].String(), "box[head_dim, 1, 64]") {
		t.Errorf("hash text %s", pt.Launches[0].Args[1])
	}
}

// TestTensorMapParamCheck: the driver's record of a 128-byte parameter at
// 48 (its address in the constant bank 64-aligned, abi.ParamBase) matches
// the declared tensor map; a kernel that takes a pointer there
// is refused before any launch, naming the parameter.
func TestTensorMapParamCheck(t *testing.T) {
	t.Parallel()
	pl := planned(t, tensorMapSpec, map[string]string{"k.cu": "// test\n"})
	for _, c := range []struct {
		name   string
		params []abi.ParamSlot
		status results.Status
		text   string
	}{
		{"match", []abi.ParamSlot{sl(0, 8), sl(48, 128), sl(176, 4), sl(240, 192)}, results.StatusOK, ""},
		{"pointer", []abi.ParamSlot{sl(0, 8), sl(8, 8), sl(16, 4), sl(64, 192)}, results.StatusError,
			"parameter 1 is 8 bytes at offset 8 in the kernel, but the launch declares tensor_map(k kv"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models["eng"] = fakeModel{params: map[string][]abi.ParamSlot{"k": c.params}}
			b := fakeBackend(t, f)
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			rec, err := b.Run(context.Background(), pl.Points[0])
			if err != nil {
				t.Fatal(err)
			}
			if c.status == results.StatusOK {
				if f.calls["encodeTensorMap"] == 0 || len(f.lastArgs) != 1 {
					t.Errorf("status %s (%s): %d encodings, %d steps marshalled", rec.Status, rec.Error, f.calls["encodeTensorMap"], len(f.lastArgs))
				}
				return
			}
			if rec.Status != c.status || !strings.Contains(rec.Error, c.text) {
				t.Fatalf("status %s, error %q; want %s with %q", rec.Status, rec.Error, c.status, c.text)
			}
			if f.calls["launch"] != 0 {
				t.Errorf("%d launches before the refusal", f.calls["launch"])
			}
		})
	}
}

// encodeTensorMap is the fake's cuTensorMapEncodeTiled: the arguments in
// a fixed order, so that a test can tell each one's bytes. Byte 0 the
// data type, 1 the rank, 2..5 interleave, swizzle, L2 promotion and OOB
// fill; then the address at 8, the dimensions at 16 (5 × 8), the strides
// at 56 (4 × 8), the box at 88 (5 × 4) and the element strides at 108
// (5 × 4), to byte 128; unused entries zero.
func (f *fakeDevice) encodeTensorMap(p cuda.TensorMapParams) (cuda.TensorMap, error) {
	var m cuda.TensorMap
	if err := f.hit("encodeTensorMap"); err != nil {
		return m, err
	}
	m[0], m[1] = byte(p.DataType), byte(len(p.Dims))
	m[2], m[3], m[4], m[5] = byte(p.Interleave), byte(p.Swizzle), byte(p.L2Promotion), byte(p.OOBFill)
	binary.LittleEndian.PutUint64(m[8:], uint64(p.Addr))
	for i, d := range p.Dims {
		binary.LittleEndian.PutUint64(m[16+8*i:], d)
	}
	for i, s := range p.Strides {
		binary.LittleEndian.PutUint64(m[56+8*i:], s)
	}
	for i, b := range p.Box {
		binary.LittleEndian.PutUint32(m[88+4*i:], b)
	}
	for i, e := range p.ElementStrides {
		binary.LittleEndian.PutUint32(m[108+4*i:], e)
	}
	return m, nil
}
