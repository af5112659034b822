package cuda

import (
	"encoding/binary"
	"errors"
	"testing"
)

// TestTensorMapPacked: a tensor map's 128 bytes go in whole from a 64-byte
// boundary of the value area (cuda.h aligns CUtensorMap to 64), after an
// int that would otherwise leave it at 8.
func TestTensorMapPacked(t *testing.T) {
	a, err := newOffHeap(argBufSize)
	if err != nil {
		t.Fatal(err)
	}
	defer a.free()
	var m TensorMap
	for i := range m {
		m[i] = byte(i)
	}
	if err := packArgs(a.mem, []any{int32(7), m, int32(9)}); err != nil {
		t.Fatal(err)
	}
	base := uint64(a.base())
	p := func(i int) uint64 { return binary.LittleEndian.Uint64(a.mem[8*i:]) }
	if at := p(1); at%64 != 0 || at-base != 64*8+64 || string(a.mem[at-base:at-base+128]) != string(m[:]) {
		t.Errorf("tensor map at %#x (offset %d)", at, at-base)
	}
	if p(2)-base != 64*8+64+128 {
		t.Errorf("the argument after the map at offset %d", p(2)-base)
	}
}

// TestEncodeTensorMapUnbound: a driver without cuTensorMapEncodeTiled
// says so by name rather than failing inside the call.
func TestEncodeTensorMapUnbound(t *testing.T) {
	_, err := (&Driver{}).EncodeTensorMapTiled(TensorMapParams{Dims: []uint64{64}, Box: []uint32{64}, ElementStrides: []uint32{1}})
	if !errors.Is(err, ErrNoTensorMaps) {
		t.Errorf("%v, want ErrNoTensorMaps", err)
	}
}

// TestEncodeTensorMapGPU encodes a map of K's kind on the driver, and
// checks that a box the driver refuses is an error naming the call.
func TestEncodeTensorMapGPU(t *testing.T) {
	ctx, _, _ := gpu(t)
	p, err := ctx.Alloc(1 << 20)
	if err != nil {
		t.Fatal(err)
	}
	defer ctx.Free(p)
	d := ctx.d
	ok := TensorMapParams{DataType: 6, Addr: p, Dims: []uint64{128, 4, 1024}, Strides: []uint64{256, 1024},
		Box: []uint32{64, 1, 64}, ElementStrides: []uint32{1, 1, 1}, Swizzle: 3}
	m, err := d.EncodeTensorMapTiled(ok)
	if errors.Is(err, ErrNoTensorMaps) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	if m == (TensorMap{}) {
		t.Error("an all-zero tensor map")
	}
	bad := ok
	bad.Box = []uint32{64, 1, 512}
	if _, err := d.EncodeTensorMapTiled(bad); err == nil {
		t.Error("a box of 512 encoded")
	}
}
