package probe

import (
	"bytes"
	"encoding/binary"
	"math"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/oracle"
)

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		f    float32
		want uint16
	}{
		{1, 0x3F80}, {-2, 0xC000}, {0, 0},
		{math.Float32frombits(0x3F808000), 0x3F80}, // a tie rounds to even (down)
		{math.Float32frombits(0x3F818000), 0x3F82}, // a tie rounds to even (up)
		{math.Float32frombits(0x3F80C000), 0x3F81}, // above the tie: up
	} {
		if got := kvtype.F32ToBF16(c.f); got != c.want {
			t.Errorf("kvtype.F32ToBF16(%g) = %#04x, want %#04x", c.f, got, c.want)
		}
	}
	if h := kvtype.F32ToBF16(float32(math.NaN())); kvtype.BF16ToF32(h) == kvtype.BF16ToF32(h) {
		t.Errorf("NaN became %#04x", h)
	}
	if got := roundTo("bf16", 1.00390625); got != 1 {
		t.Errorf("roundTo bf16 = %v", got)
	}
	if got := roundTo("f16", 1.0001); got != 1 {
		t.Errorf("roundTo f16 = %v", got)
	}
}

// TestQUpload: q goes up in its dtype, and the oracle's copy is rounded
// to the same values.
func TestQUpload(t *testing.T) {
	in := &oracle.Inputs{Q: []float32{1.0001, -0.5, 3}}
	b := qUpload(layout{qDtype: "f16"}, in)
	if len(b) != 6 || binary.LittleEndian.Uint16(b) != 0x3C00 || binary.LittleEndian.Uint16(b[2:]) != kvtype.F32ToF16(-0.5) {
		t.Errorf("f16 q bytes % x", b)
	}
	if in.Q[0] != 1 {
		t.Errorf("oracle q not rounded: %v", in.Q[0])
	}
	in = &oracle.Inputs{Q: []float32{1.0001}}
	if b := qUpload(layout{qDtype: "f32"}, in); len(b) != 4 || in.Q[0] != 1.0001 {
		t.Errorf("f32 q: % x, %v", b, in.Q)
	}
}

// TestKVCopies places packed rows [batch][rows][kv_heads][dim] into both
// layouts, from arrays of rows rows per sequence and from longer ones
// (a set sharing its base's arrays); element values encode (sequence,
// row, head, dim).
func TestKVCopies(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 4, KVDtype: "f32", Batch: 2, Capacity: 5}
	const rows = 3
	val := func(b, r, h, d int) uint32 { return uint32(1000*b + 100*r + 10*h + d) }
	for _, stride := range []int{rows, rows + 2} {
		raw := make([]byte, s.Batch*stride*s.KVHeads*s.HeadDim*4)
		for b := range s.Batch {
			for r := range stride {
				for h := range s.KVHeads {
					for d := range s.HeadDim {
						i := ((b*stride+r)*s.KVHeads+h)*s.HeadDim + d
						binary.LittleEndian.PutUint32(raw[4*i:], val(b, r, h, d))
					}
				}
			}
		}
		// A patched row of K (oracle.Inputs.KPatches): K's copies put it
		// in place of the row, V's leave V's.
		patch := make([]byte, s.KVHeads*s.HeadDim*4)
		for i := range s.KVHeads * s.HeadDim {
			binary.LittleEndian.PutUint32(patch[4*i:], uint32(90000+i))
		}
		for _, lay := range []abi.KVLayout{abi.BSHD, abi.BHSD} {
			dev := make([]byte, s.Batch*s.Capacity*s.KVHeads*s.HeadDim*4)
			devV := make([]byte, len(dev))
			src := packed{rows, stride, stride, raw, raw, []oracle.KPatch{{B: 1, R: 2, Bytes: patch}}}
			for _, cp := range (&workspace{l: layout{elt: 4, kvLayout: lay}}).kvCopies(s, src) {
				copy(dev[cp.dst:], cp.k)
				if cp.v != nil {
					copy(devV[cp.vdst:], cp.v)
				}
			}
			for b := range s.Batch {
				for r := range s.Capacity {
					for h := range s.KVHeads {
						for d := range s.HeadDim {
							i := ((b*s.Capacity+r)*s.KVHeads+h)*s.HeadDim + d
							if lay == abi.BHSD {
								i = ((b*s.KVHeads+h)*s.Capacity+r)*s.HeadDim + d
							}
							want := val(b, r, h, d)
							if r >= rows {
								want = 0 // past the set's rows: not written
							}
							if got := binary.LittleEndian.Uint32(devV[4*i:]); got != want {
								t.Fatalf("%s, stride %d: V (%d,%d,%d,%d) holds %d", lay, stride, b, r, h, d, got)
							}
							if b == 1 && r == 2 {
								want = uint32(90000 + h*s.HeadDim + d)
							}
							if got := binary.LittleEndian.Uint32(dev[4*i:]); got != want {
								t.Fatalf("%s, stride %d: K (%d,%d,%d,%d) holds %d", lay, stride, b, r, h, d, got)
							}
						}
					}
				}
			}
		}
	}
}

// TestOutToF32: a 16-bit out comes back as f32 for the gates, and an
// element still holding the poison becomes the f32 poison.
func TestOutToF32(t *testing.T) {
	for _, dt := range []abi.Dtype{abi.F16, abi.BF16} {
		l := layout{outDtype: dt}
		raw := encode(dt, []float32{1.5, -2})
		raw = binary.LittleEndian.AppendUint16(raw, poison16)
		got := outToF32(l, raw)
		if f := floats(got); len(f) != 3 || f[0] != 1.5 || f[1] != -2 || binary.LittleEndian.Uint32(got[8:]) != poison {
			t.Errorf("%s: %v", dt, f)
		}
		if w := outPoison(l); uint16(w) != poison16 || uint16(w>>16) != poison16 {
			t.Errorf("%s poison word %#x", dt, w)
		}
	}
	l := layout{outDtype: "f32"}
	if raw := []byte{1, 2, 3, 4}; !bytes.Equal(outToF32(l, raw), raw) || outPoison(l) != poison {
		t.Error("f32 out is not passed through")
	}
}

// TestPositionBytesSeqlens: positions (nkv − 1) then seqlens (nkv), so
// the seqlens argument points 4 × batch bytes in.
func TestPositionBytesSeqlens(t *testing.T) {
	b := positionBytes([]int{5, 9})
	want := []uint32{4, 8, 5, 9}
	for i, w := range want {
		if got := binary.LittleEndian.Uint32(b[4*i:]); got != w {
			t.Errorf("word %d = %d, want %d", i, got, w)
		}
	}
}
