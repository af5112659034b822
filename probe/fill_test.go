package probe

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// fakeBuffer is device memory on the host: what the fill's writes land in.
type fakeBuffer struct {
	b      []byte
	writes int
}

func (f *fakeBuffer) write(off int64, b []byte) error {
	f.writes++
	copy(f.b[off:], b)
	return nil
}

// fillLayout fills q, K and V of layout l into host buffers exactly as
// allocWorkspace does on the device, with the given chunk size.
func fillLayout(t *testing.T, l layout, chunk int64) map[string]*fakeBuffer {
	t.Helper()
	w := &workspace{l: l}
	out := map[string]*fakeBuffer{}
	for _, f := range w.fills() {
		fb := &fakeBuffer{b: make([]byte, f.n)}
		if err := fillBuffer(fb.write, f.n, f.t, f.seed, chunk); err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		out[f.name] = fb
	}
	return out
}

// elementValue decodes element i of a buffer of elt-byte elements.
func elementValue(b []byte, elt, i int) float64 {
	if elt == 2 {
		return kvtype.F16ToF64(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
}

// TestFillCoversEveryRow checks the property the timed probes rely on:
// every capacity row of every sequence of K and V, and all of q, holds
// random values in [−1, 1), none of them left at zero, including the last
// row, with a chunk size that cuts rows in the middle.
func TestFillCoversEveryRow(t *testing.T) {
	for _, dtype := range []string{"f16", "f32"} {
		t.Run(dtype, func(t *testing.T) {
			c := results.Config{
				Shape:  abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 8, KVDtype: abi.Dtype(dtype), Batch: 3, Capacity: 37},
				Splits: 4,
			}
			l, err := layoutOf(&c)
			if err != nil {
				t.Fatal(err)
			}
			elt := abi.Dtype(dtype).Bytes()
			rowElts := c.Shape.KVHeads * c.Shape.HeadDim
			bufs := fillLayout(t, l, 3*int64(elt)*int64(rowElts)/2+int64(elt)) // 1.5 rows + 1 element
			for _, name := range []string{"k", "v"} {
				b := bufs[name].b
				if bufs[name].writes < 2 {
					t.Errorf("%s: %d writes; the chunk size should have forced several", name, bufs[name].writes)
				}
				for row := 0; row < c.Shape.Batch*c.Shape.Capacity; row++ {
					nonzero := 0
					for e := row * rowElts; e < (row+1)*rowElts; e++ {
						v := elementValue(b, elt, e)
						if !(v >= -1 && v < 1) {
							t.Fatalf("%s row %d element %d = %v, outside [-1, 1)", name, row, e-row*rowElts, v)
						}
						if v != 0 {
							nonzero++
						}
					}
					// A random row of 16 values from a 2048-value grid has at
					// most a zero or two; a row the fill skipped is all zeros.
					if nonzero < rowElts/2 {
						t.Errorf("%s sequence %d row %d: only %d of %d elements non-zero", name,
							row/c.Shape.Capacity, row%c.Shape.Capacity, nonzero, rowElts)
					}
				}
			}
			if bytes.Equal(bufs["k"].b, bufs["v"].b) {
				t.Error("K and V hold the same bytes: their seeds must differ")
			}
			q := bufs["q"].b
			for i := 0; i < len(q)/4; i++ {
				if v := elementValue(q, 4, i); !(v >= -1 && v < 1) {
					t.Fatalf("q[%d] = %v", i, v)
				}
			}
		})
	}
}

// TestFillIndependentOfChunking: the bytes are a function of the element
// index only, so the chunk size and the goroutine split (fillParallelMin
// elements and up go parallel) leave them unchanged.
func TestFillIndependentOfChunking(t *testing.T) {
	const n = 3*fillParallelMin*2 + 48 // bytes of f16: several parallel pieces
	var ref []byte
	for _, chunk := range []int64{n, 1 << 20, 4096 + 2, 6} {
		fb := &fakeBuffer{b: make([]byte, n)}
		if err := fillBuffer(fb.write, n, kvtype.F16, 7, chunk); err != nil {
			t.Fatal(err)
		}
		if ref == nil {
			ref = fb.b
			continue
		}
		if i := firstDiff(ref, fb.b); i >= 0 {
			t.Errorf("chunk %d: byte %d differs from the single-chunk fill", chunk, i)
		}
	}
	// Another seed gives other bytes.
	fb := &fakeBuffer{b: make([]byte, n)}
	if err := fillBuffer(fb.write, n, kvtype.F16, 8, n); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(ref, fb.b) {
		t.Error("seeds 7 and 8 gave the same fill")
	}
}

func firstDiff(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}

// TestFillDistribution checks that the f16 fill spreads over its whole
// grid: a mean near 0, a variance near that of U(−1, 1) (1/3), and every
// value an exact half.
func TestFillDistribution(t *testing.T) {
	const n = 1 << 16
	var sum, sq float64
	seen := map[uint16]bool{}
	for i := int64(0); i < n; i++ {
		h := fillGrid(&f16Grid, fillSeed, i)
		v := kvtype.F16ToF64(h)
		if kvtype.F32ToF16(float32(v)) != h {
			t.Fatalf("element %d: %v does not round-trip through f16", i, v)
		}
		sum += v
		sq += v * v
		seen[h] = true
	}
	mean, variance := sum/n, sq/n-(sum/n)*(sum/n)
	// Standard error of the mean: sqrt(1/3/n) ≈ 0.0023; 5 of them.
	if math.Abs(mean) > 0.012 || math.Abs(variance-1.0/3) > 0.01 {
		t.Errorf("mean %.4f variance %.4f, want about 0 and 1/3", mean, variance)
	}
	if len(seen) < 2000 {
		t.Errorf("%d distinct values of the 2048 possible", len(seen))
	}
	for i := int64(0); i < 1000; i++ {
		if f := fillF32(fillSeed, i); !(f >= -1 && f < 1) {
			t.Fatalf("f32 element %d = %v", i, f)
		}
	}
}

func TestFillRejects(t *testing.T) {
	fb := &fakeBuffer{b: make([]byte, 16)}
	if err := fillBuffer(fb.write, 15, kvtype.F16, 1, 8); err == nil {
		t.Error("15 bytes of 2-byte elements accepted")
	}
}

// TestLayoutDtypeKeepsWorkspacesApart: f32 at capacity C and f16 at 2C
// have the same byte sizes, but a workspace filled with halves must not be
// reused as floats.
func TestLayoutDtypeKeepsWorkspacesApart(t *testing.T) {
	a := sevenB(1, 1024, 32)
	a.Shape.KVDtype = "f32"
	b := sevenB(1, 2048, 32)
	la, _ := layoutOf(&a)
	lb, _ := layoutOf(&b)
	if la.K != lb.K {
		t.Fatalf("K sizes %d and %d: the premise of the test is gone", la.K, lb.K)
	}
	if la == lb {
		t.Error("f32 and f16 layouts of equal sizes compare equal: the workspace would be reused")
	}
}

// TestGateRowsOverFill: the gates' oracle rows land at the start of each
// sequence's capacity rows and the fill stays above them, so the timed
// probes read oracle rows below the largest gate nkv and random rows above.
func TestGateRowsOverFill(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 8, KVDtype: "f16", Batch: 2, Capacity: 20}
	c := results.Config{Shape: s, Splits: 4}
	l, err := layoutOf(&c)
	if err != nil {
		t.Fatal(err)
	}
	k := fillLayout(t, l, fillChunkBytes)["k"]
	filled := bytes.Clone(k.b)
	in, err := oracle.Generate(s, 7, 3)
	if err != nil {
		t.Fatal(err)
	}
	rb := int64(in.RowBytes())
	for _, sp := range rowSpans(s, in.Rows, in.Rows, rb) {
		k.write(sp.dst, in.KBytes[sp.src:sp.src+sp.n])
	}
	for seq := 0; seq < s.Batch; seq++ {
		for row := 0; row < s.Capacity; row++ {
			dev := k.b[(int64(seq*s.Capacity+row))*rb:][:rb]
			if row < in.Rows {
				want := in.KBytes[int64(seq*in.Rows+row)*rb:][:rb]
				if !bytes.Equal(dev, want) {
					t.Errorf("sequence %d row %d: not the oracle's row", seq, row)
				}
				continue
			}
			if !bytes.Equal(dev, filled[(int64(seq*s.Capacity+row))*rb:][:rb]) {
				t.Errorf("sequence %d row %d: the fill above the gate rows was overwritten", seq, row)
			}
		}
	}
}

// TestFillNewKVTypes: the bf16 and fp8e4m3 fills hold finite values only
// (random bytes would give e4m3 NaN codes), differ from element to
// element, and fp8e4m3 gets a kv_scale buffer of plausible scales, which
// marshal passes whole and in halves.
func TestFillNewKVTypes(t *testing.T) {
	for _, ty := range []*kvtype.Type{kvtype.BF16, kvtype.FP8E4M3} {
		const n = 4096
		fb := &fakeBuffer{b: make([]byte, n)}
		if err := fillBuffer(fb.write, n, ty, 3, 1000); err != nil {
			t.Fatal(err)
		}
		seen := map[uint32]bool{}
		for i := range n / ty.Bytes {
			b := ty.Bits(fb.b, i)
			v := ty.Decode(b)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("%s element %d: bits %#x = %v", ty, i, b, v)
			}
			if ty == kvtype.FP8E4M3 && math.Abs(v)*float64(fillScale) > 1.0001 || ty == kvtype.BF16 && math.Abs(v) > 1 {
				t.Fatalf("%s element %d = %v out of range", ty, i, v)
			}
			seen[b] = true
		}
		if len(seen) < 100 {
			t.Errorf("%s: %d distinct values", ty, len(seen))
		}
	}
	c := results.Config{Shape: abi.Shape{Heads: 8, KVHeads: 2, HeadDim: 16, KVDtype: "fp8e4m3", KVScale: "tensor", Batch: 2, Capacity: 40}, Splits: 4}
	l, err := layoutOf(&c)
	if err != nil {
		t.Fatal(err)
	}
	if l.KVScale != 16 || l.elt != 1 || l.K != 2*40*2*16 {
		t.Errorf("fp8 layout %+v", l)
	}
	sb, ones := scaleFill(16, true), scaleFill(16, false)
	for i := 0; i < 16; i += 4 {
		if f := math.Float32frombits(binary.LittleEndian.Uint32(sb[i:])); f != fillScale || f <= 0 {
			t.Errorf("scale %d = %v", i/4, f)
		}
		// An unscaled type's scales, passed to an engine that takes
		// them for every type, leave its values as they are.
		if f := math.Float32frombits(binary.LittleEndian.Uint32(ones[i:])); f != 1 {
			t.Errorf("unscaled scale %d = %v, want 1", i/4, f)
		}
	}
	f16 := c
	f16.Shape.KVDtype, f16.Shape.KVScale = "f16", ""
	if l16, _ := layoutOf(&f16); l16.KVScale != 0 {
		t.Errorf("f16 layout has kv_scale %d", l16.KVScale)
	}
	bf := f16
	bf.Shape.KVDtype = "bf16"
	if l16, _ := layoutOf(&f16); func() bool { lb, _ := layoutOf(&bf); return lb == l16 }() {
		t.Error("f16 and bf16 layouts share a workspace")
	}
}

// fillReference is the fill written out element by element from its
// definition, with no table shared with fill.go but the bf16 rounding's
// (kvtype): splitmix64 over the index, then the type's mapping.
func fillReference(dst []byte, t *kvtype.Type, seed uint64, first int64) {
	for i := range len(dst) / t.Bytes {
		h := fillHash(seed, first+int64(i))
		grid := float32(int64(h>>53)-1024) / 1024
		var bits uint32
		switch t {
		case kvtype.F16:
			bits = uint32(kvtype.F32ToF16(grid))
		case kvtype.BF16:
			bits = uint32(kvtype.F32ToBF16(grid))
		case kvtype.FP8E4M3:
			if bits = uint32(h >> 56); bits&0x7f == 0x7f {
				bits ^= 1
			}
		default:
			bits = math.Float32bits(float32(int64(h>>40)-1<<23) / (1 << 23))
		}
		t.PutBits(dst, i, bits)
	}
}

// TestFillLoopsMatchReference: the per-type loops of fillSerial, alone
// and split over goroutines (fillValues), write what the reference does,
// from odd first elements and for odd counts.
func TestFillLoopsMatchReference(t *testing.T) {
	for _, ty := range kvtype.All {
		for _, c := range []struct{ first, n int64 }{{0, 1}, {1, 7}, {12345, 333}, {(1 << 40) + 3, 1001}, {5, fillParallelMin + 17}} {
			want := make([]byte, c.n*int64(ty.Bytes))
			fillReference(want, ty, fillSeed+1, c.first)
			got := make([]byte, len(want))
			fillSerial(got, ty, fillSeed+1, c.first)
			if i := firstDiff(want, got); i >= 0 {
				t.Errorf("%s from %d, %d elements: fillSerial's byte %d is %#x, the reference's %#x", ty, c.first, c.n, i, got[i], want[i])
			}
			clear(got)
			fillValues(got, ty, fillSeed+1, c.first)
			if i := firstDiff(want, got); i >= 0 {
				t.Errorf("%s from %d, %d elements: fillValues's byte %d is %#x, the reference's %#x", ty, c.first, c.n, i, got[i], want[i])
			}
		}
	}
}

// TestFillGridBytes: the tables ktune_fill is given are the grids, f16
// then bf16, little-endian.
func TestFillGridBytes(t *testing.T) {
	b := fillGridBytes()
	if len(b) != 2*2*2048 {
		t.Fatalf("%d bytes of tables, want %d", len(b), 2*2*2048)
	}
	for k := range 2048 {
		if got := binary.LittleEndian.Uint16(b[2*k:]); got != f16Grid[k] {
			t.Errorf("f16 entry %d: %#x, the grid holds %#x", k, got, f16Grid[k])
		}
		if got := binary.LittleEndian.Uint16(b[2*(2048+k):]); got != bf16Grid[k] {
			t.Errorf("bf16 entry %d: %#x, the grid holds %#x", k, got, bf16Grid[k])
		}
	}
}

// TestDeviceFillChecked: a device fill that differs from fillValues in one
// byte, at the start, the middle or the end of a buffer, fails the
// workspace's allocation with an error naming the buffer and the byte:
// the host's record of the buffer would otherwise be wrong.
func TestDeviceFillChecked(t *testing.T) {
	c := sevenB(1, 1024, 32)
	l, err := layoutOf(&c)
	if err != nil {
		t.Fatal(err)
	}
	if l.K <= 3*fillCheckBytes || l.Q > 3*fillCheckBytes {
		t.Fatalf("K %d and q %d bytes: the test needs a K checked in spans and a q checked whole", l.K, l.Q)
	}
	for _, tc := range []struct {
		name string
		seed uint64
		byte int64
	}{{"q", fillSeed, 7}, {"k", fillSeed + 1, 0}, {"k", fillSeed + 1, l.K / 2}, {"v", fillSeed + 2, l.V - 1}, {"q_alt", fillSeed + 3, l.Q - 2}} {
		f := newFakeDevice()
		f.fillModel = func(dst []byte, ty *kvtype.Type, seed uint64, first int64) {
			fillValues(dst, ty, seed, first)
			if seed == tc.seed {
				dst[tc.byte-first*int64(ty.Bytes)] ^= 0x10
			}
		}
		_, err := f.allocWorkspace(l)
		want := fmt.Sprintf("the device fill of %s differs from the host's (fillValues) at byte %d of", tc.name, tc.byte)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s byte %d wrong on the device: error %v, want one containing %q", tc.name, tc.byte, err, want)
		}
	}
	f := newFakeDevice()
	if _, err := f.allocWorkspace(l); err != nil {
		t.Errorf("the faithful device fill: %v", err)
	}
}
