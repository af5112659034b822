package cuda

import (
	"bytes"
	"encoding/binary"
	"math"
	"strings"
	"testing"
)

func TestPackArgs(t *testing.T) {
	a, err := newOffHeap(argBufSize)
	if err != nil {
		t.Fatal(err)
	}
	defer a.free()
	buf := a.mem
	// Fill with garbage first: 4-byte values must clear the slot's upper half.
	for i := range buf {
		buf[i] = 0xAB
	}
	args := []any{
		DevPtr(0x7f12_3456_7890), int32(-5), int(100000), uint32(0xDEADBEEF),
		uint64(1 << 40), float32(0.125), int64(-2), float64(2.5), int(-1),
	}
	if err := packArgs(buf, args); err != nil {
		t.Fatal(err)
	}
	le := binary.LittleEndian
	base := uint64(a.base())
	// slot i of the value area, read back independently of packArgs
	slot := func(i int) []byte { return buf[64*8+8*i : 64*8+8*i+8] }
	for i := range args {
		if p := le.Uint64(buf[8*i:]); p != base+uint64(64*8+8*i) {
			t.Errorf("param pointer %d = %#x, want %#x", i, p, base+uint64(64*8+8*i))
		}
	}
	want8 := []struct {
		i int
		v uint64
	}{{0, 0x7f12_3456_7890}, {4, 1 << 40}, {6, 0xFFFF_FFFF_FFFF_FFFE}, {7, 0x4004_0000_0000_0000}}
	for _, w := range want8 {
		if got := le.Uint64(slot(w.i)); got != w.v {
			t.Errorf("arg %d (%T): slot = %#x, want %#x", w.i, args[w.i], got, w.v)
		}
	}
	want4 := []struct {
		i int
		v uint32
	}{{1, 0xFFFF_FFFB}, {2, 100000}, {3, 0xDEADBEEF}, {5, 0x3E00_0000}, {8, 0xFFFF_FFFF}}
	for _, w := range want4 {
		s := slot(w.i)
		if got := le.Uint32(s); got != w.v {
			t.Errorf("arg %d (%T): value = %#x, want %#x", w.i, args[w.i], got, w.v)
		}
		if hi := le.Uint32(s[4:]); hi != 0 {
			t.Errorf("arg %d (%T): upper half of its slot = %#x, want 0", w.i, args[w.i], hi)
		}
	}
	if math.Float32frombits(le.Uint32(slot(5))) != 0.125 {
		t.Errorf("float32 did not round-trip")
	}
}

func TestPackArgsRejects(t *testing.T) {
	a, err := newOffHeap(argBufSize)
	if err != nil {
		t.Fatal(err)
	}
	defer a.free()
	tests := []struct {
		args []any
		want string
	}{
		{[]any{DevPtr(1), int(math.MaxInt32) + 1}, "argument 1: int 2147483648 does not fit"},
		{[]any{"q"}, "unsupported type string"},
		{[]any{&a}, "unsupported type"},
		{make([]any, maxKernelArgs+1), "at most 64"},
	}
	for _, tt := range tests {
		err := packArgs(a.mem, tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("packArgs(%v): got %v, want an error containing %q", tt.args, err, tt.want)
		}
	}
	if err := packArgs(make([]byte, 16), []any{int32(1)}); err == nil {
		t.Errorf("packArgs into a 16-byte buffer succeeded")
	}
}

func TestOffHeapStrings(t *testing.T) {
	ss := []string{"-arch=sm_90", "", "-DHEAD_DIM=128"}
	a, err := newOffHeap(cstringsSize(ss))
	if err != nil {
		t.Fatal(err)
	}
	defer a.free()
	ps := make([]uintptr, len(ss))
	for i, s := range ss {
		ps[i] = a.cstring(s)
	}
	arr := a.ptrArray(ps)
	base := a.base()
	if arr%8 != 0 {
		t.Errorf("pointer array at %#x is not 8-byte aligned", arr)
	}
	for i, s := range ss {
		p := binary.LittleEndian.Uint64(a.mem[arr-base+uintptr(8*i):])
		off := int(uintptr(p) - base)
		end := off
		for a.mem[end] != 0 {
			end++
		}
		if got := string(a.mem[off:end]); got != s {
			t.Errorf("string %d = %q, want %q", i, got, s)
		}
	}
	if a.ptrArray(nil) != 0 {
		t.Errorf("empty array should be NULL")
	}
}

func TestUUIDFormat(t *testing.T) {
	u := [16]byte{0x5e, 0x1f, 0x2a, 0x3b, 0x4c, 0x5d, 0x6e, 0x7f, 0x80, 0x91, 0xa2, 0xb3, 0xc4, 0xd5, 0xe6, 0xf7}
	if got, want := formatUUID(u), "GPU-5e1f2a3b-4c5d-6e7f-8091-a2b3c4d5e6f7"; got != want {
		t.Errorf("formatUUID = %q, want %q", got, want)
	}
}

func TestBytes(t *testing.T) {
	b := Bytes([]float32{1, -2})
	if len(b) != 8 || binary.LittleEndian.Uint32(b[4:]) != math.Float32bits(-2) {
		t.Errorf("Bytes([]float32{1,-2}) = %x", b)
	}
	if Bytes([]uint16(nil)) != nil {
		t.Errorf("Bytes(nil) != nil")
	}
}

// packLaunchConfig lays out CUlaunchConfig and its attribute the way
// cuda.h declares them (x86-64 and aarch64): grid, block and shared bytes
// as seven uint32, the stream at 32, the attribute pointer at 40, their
// count at 48; an attribute's id at 0 and its value at 8.
func TestPackLaunchConfig(t *testing.T) {
	buf := make([]byte, launchConfigSize)
	const base = 0x7000_0000
	packLaunchConfig(buf, base, [3]uint32{33, 4, 2}, [3]uint32{256, 1, 1}, 4096, 0xabc0, LaunchAttrs{Programmatic: true})
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(buf[off:]) }
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(buf[off:]) }
	for i, want := range []uint32{33, 4, 2, 256, 1, 1, 4096} {
		if got := u32(4 * i); got != want {
			t.Errorf("config word %d = %d, want %d", i, got, want)
		}
	}
	if u64(32) != 0xabc0 || u64(40) != base+launchConfigBytes+8 || u32(48) != 1 {
		t.Errorf("stream %#x attrs %#x count %d", u64(32), u64(40), u32(48))
	}
	attr := launchConfigBytes + 8
	if u32(attr) != attrProgrammaticStreamSerialization || u32(attr+8) != 1 {
		t.Errorf("attribute id %d value %d, want %d and 1", u32(attr), u32(attr+8), attrProgrammaticStreamSerialization)
	}
	if attr+launchAttrBytes > len(buf) || argBufSize+launchConfigSize > 4096 {
		t.Errorf("the config does not fit its place in the off-heap page")
	}
	packLaunchConfig(buf, base, [3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, 0, LaunchAttrs{})
	if u32(48) != 0 || u32(attr) != 0 {
		t.Error("no attribute asked for, one written")
	}
}

// A cluster launch carries CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION (4) with
// clusterDim's x, y and z as the first three uint32 of the value union;
// with programmatic serialization as well, both attributes follow the
// config, 72 bytes apart, and the count is 2.
func TestPackLaunchConfigCluster(t *testing.T) {
	buf := make([]byte, launchConfigSize)
	const base = 0x7000_0000
	u32 := func(off int) uint32 { return binary.LittleEndian.Uint32(buf[off:]) }
	u64 := func(off int) uint64 { return binary.LittleEndian.Uint64(buf[off:]) }
	first, second := launchConfigBytes+8, launchConfigBytes+8+launchAttrBytes

	packLaunchConfig(buf, base, [3]uint32{32, 28, 4}, [3]uint32{128, 1, 1}, 0, 0xabc0, LaunchAttrs{Cluster: [3]int{4, 1, 2}})
	if u64(40) != base+launchConfigBytes+8 || u32(48) != 1 {
		t.Errorf("attrs %#x count %d, want %#x and 1", u64(40), u32(48), base+launchConfigBytes+8)
	}
	want := []byte{4, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0}
	if got := buf[first : first+len(want)]; !bytes.Equal(got, want) {
		t.Errorf("cluster attribute % x, want % x", got, want)
	}
	if !allZero(buf[first+len(want) : first+launchAttrBytes]) {
		t.Error("the rest of the cluster attribute's value is not zero")
	}

	packLaunchConfig(buf, base, [3]uint32{32, 28, 4}, [3]uint32{128, 1, 1}, 0, 0xabc0, LaunchAttrs{Programmatic: true, Cluster: [3]int{2, 1, 1}})
	if u32(48) != 2 {
		t.Fatalf("count %d, want 2", u32(48))
	}
	if u32(first) != attrClusterDimension || u32(first+8) != 2 || u32(first+12) != 1 || u32(first+16) != 1 {
		t.Errorf("first attribute id %d value %d %d %d, want the cluster 2 1 1", u32(first), u32(first+8), u32(first+12), u32(first+16))
	}
	if u32(second) != attrProgrammaticStreamSerialization || u32(second+8) != 1 {
		t.Errorf("second attribute id %d value %d, want %d and 1", u32(second), u32(second+8), attrProgrammaticStreamSerialization)
	}
	if second+launchAttrBytes > len(buf) || argBufSize+launchConfigSize > 4096 {
		t.Errorf("two attributes do not fit their place in the off-heap page")
	}
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// checkCluster refuses, before the driver would, a cluster that does not
// divide the grid.
func TestCheckCluster(t *testing.T) {
	for _, c := range []struct {
		cluster, grid [3]int
		ok            bool
	}{
		{[3]int{}, [3]int{7, 1, 1}, true},
		{[3]int{2, 1, 1}, [3]int{8, 28, 1}, true},
		{[3]int{2, 2, 1}, [3]int{8, 28, 1}, true},
		{[3]int{2, 1, 1}, [3]int{7, 28, 1}, false},
		{[3]int{1, 3, 1}, [3]int{8, 28, 1}, false},
		{[3]int{2, 0, 1}, [3]int{8, 28, 1}, false},
	} {
		if err := checkCluster(c.cluster, c.grid); (err == nil) != c.ok {
			t.Errorf("cluster %v grid %v: %v, want ok %v", c.cluster, c.grid, err, c.ok)
		}
	}
}

// TestPackArgsBytes: a by-value struct's bytes go in whole, 16-aligned,
// and the argument after it follows them.
func TestPackArgsBytes(t *testing.T) {
	a, err := newOffHeap(argBufSize)
	if err != nil {
		t.Fatal(err)
	}
	defer a.free()
	st := make([]byte, 20)
	for i := range st {
		st[i] = byte(i + 1)
	}
	if err := packArgs(a.mem, []any{int32(7), st, int32(9)}); err != nil {
		t.Fatal(err)
	}
	le, base := binary.LittleEndian, uint64(a.base())
	p := func(i int) int { return int(le.Uint64(a.mem[8*i:]) - base) }
	if p(0) != 64*8 || p(1) != 64*8+16 || p(2) != 64*8+16+24 {
		t.Fatalf("value offsets %d %d %d", p(0), p(1), p(2))
	}
	if string(a.mem[p(1):p(1)+20]) != string(st) || le.Uint32(a.mem[p(2):]) != 9 {
		t.Error("struct or the argument after it not where its pointer says")
	}
	if err := packArgs(a.mem, []any{make([]byte, argValueBytes+1)}); err == nil {
		t.Error("more bytes than the value area accepted")
	}
}
