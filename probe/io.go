package probe

import (
	"encoding/binary"
	"math"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/oracle"
)

// The declared io of a signature, on the host side: q goes up in its
// dtype, K and V in their layout, and out comes back converted to f32, so
// that the gates (package gate) judge every kernel's output as
// f32 bytes whatever dtype it writes.

// The q and out dtypes (abi.IODtypes: f32, f16, bf16) are element types
// of package kvtype too, which converts them.

// roundTo rounds f to what a dtype holds, as f32.
func roundTo(dtype abi.Dtype, f float32) float32 {
	t := dtype.Type()
	return float32(t.Decode(t.Encode(float64(f))))
}

// encode writes vals as little-endian elements of dtype.
func encode(dtype abi.Dtype, vals []float32) []byte {
	t := dtype.Type()
	out := make([]byte, t.Bytes*len(vals))
	for i, f := range vals {
		t.PutBits(out, i, t.Encode(float64(f)))
	}
	return out
}

// qUpload returns the bytes of q in the layout's dtype and rounds in.Q in
// place to the values those bytes hold: the oracle then computes with the
// q the kernel reads, and an f16 q is not charged with its own rounding.
func qUpload(l layout, in *oracle.Inputs) []byte {
	dt := l.qDtype
	if dt == abi.F32 {
		return in.QBytes()
	}
	for i, f := range in.Q {
		in.Q[i] = roundTo(dt, f)
	}
	return encode(dt, in.Q)
}

// A kvCopy is one host-to-device copy of K and V rows: the same offsets
// in both.
type kvCopy struct {
	dst  int64
	k, v []byte
	// vdst is where v goes when V's rows are narrower than K's (an mla
	// cache of its own V buffer); v is nil for a latent mla cache, whose
	// V is K's first dv channels.
	vdst int64
}

// kvCopies places the oracle's rows (packed [batch][rows][kv_heads][dim],
// V's dv wide for an mla shape, and absent, vb nil, for a latent one) at
// the start of each sequence's capacity on the device, in the layout's
// order: [batch][capacity][kv_heads][dim] takes one copy per sequence;
// [batch][kv_heads][capacity][dim] one per (sequence, KV head), transposed
// on the host; a paged cache one per page (pages.go).
func (w *workspace) kvCopies(s abi.Shape, src packed) []kvCopy {
	l := w.l
	if l.kvLayout == abi.Paged {
		ranges := make([]rowRange, s.Batch)
		for b := range ranges {
			ranges[b] = rowRange{b, 0, src.rows}
		}
		return w.pagedCopies(s, ranges, packedRows(s, l.elt, src), nil, w.pageImages(src, w.paged().PageSize), w.mirrorOf)
	}
	kp, vp := w.placements(s)
	ks, vs := contiguousCopies(kp, s, src.rows, src.kStride, src.k), contiguousCopies(vp, s, src.rows, src.vStride, src.v)
	out := make([]kvCopy, len(ks))
	for i, k := range ks {
		out[i] = kvCopy{dst: k.dst, k: k.b}
		if src.v != nil {
			out[i].v, out[i].vdst = vs[i].b, vs[i].dst
		}
	}
	return append(out, patchCopies(kp, s, src)...)
}

// packed are a set's rows as the oracle holds them: K's and V's bytes,
// [batch][stride][kv_heads][width] with each sequence's first rows rows
// the set's (oracle.Inputs.Strides: a set may share a longer array).
type packed struct {
	rows, kStride, vStride int
	k, v                   []byte
	// kPatch are rows of K in place of k's, by sequence and row
	// (oracle.Inputs.KPatches).
	kPatch []oracle.KPatch
}

// packedOf are in's rows.
func packedOf(in *oracle.Inputs) packed {
	k, v := in.Strides()
	return packed{in.Rows, k, v, in.KBytes, in.VBytes, in.KPatches()}
}

// patchCopies are the copies of K's patched rows (after the rows they
// replace): one per row, or per row and KV head in bhsd.
func patchCopies(kp *abi.Placement, s abi.Shape, src packed) []kvCopy {
	var out []kvCopy
	head := kp.Width * kp.Elt
	for _, p := range src.kPatch {
		if kp.Layout != abi.BHSD {
			out = append(out, kvCopy{dst: kp.Offset(p.B, p.R, 0, 0) * int64(kp.Elt), k: p.Bytes})
			continue
		}
		for h := range s.KVHeads {
			out = append(out, kvCopy{dst: kp.Offset(p.B, p.R, h, 0) * int64(kp.Elt), k: p.Bytes[h*head : (h+1)*head]})
		}
	}
	return out
}

// A bufCopy is b written at byte offset dst of one buffer.
type bufCopy struct {
	dst int64
	b   []byte
}

// contiguousCopies places packed rows ([batch][rows][kv_heads][width])
// in a contiguous layout: one copy per sequence in bshd, straight from
// the packed bytes; one per (sequence, KV head) in bhsd, transposed.
func contiguousCopies(pl *abi.Placement, s abi.Shape, rows, stride int, packed []byte) []bufCopy {
	if packed == nil {
		packed, stride = make([]byte, s.Batch*rows*s.KVHeads*pl.Width*pl.Elt), rows // placeholders, never written
	}
	headBytes := int64(pl.Width) * int64(pl.Elt)
	rowBytes := int64(s.KVHeads) * headBytes
	if pl.Layout != abi.BHSD {
		var out []bufCopy
		for _, sp := range rowSpans(s, rows, stride, rowBytes) {
			out = append(out, bufCopy{sp.dst, packed[sp.src : sp.src+sp.n]})
		}
		return out
	}
	var out []bufCopy
	for b := range s.Batch {
		for h := range s.KVHeads {
			x := make([]byte, int64(rows)*headBytes)
			for r := range rows {
				src := (int64(b)*int64(stride)+int64(r))*rowBytes + int64(h)*headBytes
				copy(x[int64(r)*headBytes:], packed[src:src+headBytes])
			}
			out = append(out, bufCopy{pl.Offset(b, 0, h, 0) * int64(pl.Elt), x})
		}
	}
	return out
}

// poison16 is the 16-bit poison of an f16 or bf16 out: a quiet NaN in
// both formats (all exponent bits set, a nonzero mantissa) that no kernel
// writes by accident.
const poison16 uint16 = 0x7FDD

// outPoison is the 32-bit word the gates fill out with: poison for f32,
// two poison16 halves for a 16-bit dtype.
func outPoison(l layout) uint32 {
	if l.outDtype.Bytes() == 2 {
		return uint32(poison16)<<16 | uint32(poison16)
	}
	return poison
}

// outBytes is the size of out as the kernel writes it, unaligned.
func outBytes(l layout, s abi.Shape) int {
	return int(abi.OutElems(s)) * l.outDtype.Bytes()
}

// outToF32 converts out as read back to f32 bytes; an element that still
// holds poison16 becomes the f32 poison, so the written gate finds it.
func outToF32(l layout, raw []byte) []byte {
	if l.outDtype.Bytes() == 4 {
		return raw
	}
	t := l.outDtype.Type()
	out := make([]byte, 2*len(raw))
	for i := 0; i+1 < len(raw); i += 2 {
		h := binary.LittleEndian.Uint16(raw[i:])
		w := poison
		if h != poison16 {
			w = math.Float32bits(float32(t.Decode(uint32(h))))
		}
		binary.LittleEndian.PutUint32(out[2*i:], w)
	}
	return out
}
