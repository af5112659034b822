// Package kvtype is the one home of the K/V element types a shape may
// name (kv_dtype): for each its name, its size, whether it carries scales,
// the -D defines the kernels read, its rounding and how float64 values
// are encoded to its bits and decoded back. Every other package asks it
// instead of comparing kv_dtype strings, so that a new type is added here
// and nowhere else has to learn its name.
package kvtype

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"sync"
)

// A Type is one K/V element type.
type Type struct {
	// Name is the type as a spec and a record spell it (kv_dtype).
	Name string
	// Code is the type's number in the C dispatch header (KTUNE_KV_*):
	// stable, so that a compiled engine keeps matching a new table.
	Code int
	// Bytes is the size of one element in device memory.
	Bytes int
	// Scaled types are stored quantized: an element's value is
	// decode(bits)·scale, with one f32 scale per (K or V, KV head) in the
	// kv_scale buffer (see the kernels' ABI). Only fp8e4m3 is.
	Scaled bool
	// mant is the number of explicit mantissa bits and minExp the
	// exponent of the smallest normal: together they give the spacing of
	// the representable values (HalfULP).
	mant, minExp int
	// define is the define set to "1" for this type only (KV_BF16,
	// KV_FP8), empty for the types that existed before it (f32, f16),
	// which then keep their define set and hence their hashes.
	define string
}

// The defines the kernels read to know the K/V element type. KV_F16 is
// passed to every kernel ("1" for f16, "0" otherwise); KV_BF16 and KV_FP8
// only to the kernels of their type.
const (
	DefineF16  = "KV_F16"
	DefineBF16 = "KV_BF16"
	DefineFP8  = "KV_FP8"
)

// Defines lists the names of the defines Type.Defines may return.
var Defines = []string{DefineF16, DefineBF16, DefineFP8}

// The K/V element types.
var (
	F32     = &Type{Name: "f32", Code: 0, Bytes: 4, mant: 23, minExp: -126}
	F16     = &Type{Name: "f16", Code: 1, Bytes: 2, mant: 10, minExp: -14}
	BF16    = &Type{Name: "bf16", Code: 2, Bytes: 2, mant: 7, minExp: -126, define: DefineBF16}
	FP8E4M3 = &Type{Name: "fp8e4m3", Code: 3, Bytes: 1, Scaled: true, mant: 3, minExp: -6, define: DefineFP8}
)

// All lists the types in the order messages name them.
var All = []*Type{F32, F16, BF16, FP8E4M3}

// Lookup returns the type of a name.
func Lookup(name string) (*Type, error) {
	for _, t := range All {
		if t.Name == name {
			return t, nil
		}
	}
	return nil, fmt.Errorf("kv_dtype %q is not one of %s", name, Names())
}

// Names returns the type names, comma-separated, for messages.
func Names() string {
	n := make([]string, len(All))
	for i, t := range All {
		n[i] = t.Name
	}
	return strings.Join(n, ", ")
}

// String returns the name.
func (t *Type) String() string { return t.Name }

// ShapeDefines returns the defines derived from the type: KV_F16 always,
// KV_BF16 or KV_FP8 only for their own type.
func (t *Type) ShapeDefines() map[string]string {
	f16 := "0"
	if t == F16 {
		f16 = "1"
	}
	m := map[string]string{DefineF16: f16}
	if t.define != "" {
		m[t.define] = "1"
	}
	return m
}

// UnitRoundoff is the largest relative error of rounding a normal value
// to the type: 2^-(mant+1).
func (t *Type) UnitRoundoff() float64 { return math.Ldexp(1, -t.mant-1) }

// HalfULP is half the spacing of the type's representable values at |x|:
// the largest error of a correctly rounded store of x (in range).
func (t *Type) HalfULP(x float64) float64 {
	e := t.minExp // zero and the subnormals share the smallest normal's spacing
	if x != 0 {
		_, fe := math.Frexp(math.Abs(x)) // |x| = f·2^fe, f in [0.5, 1)
		e = max(fe-1, t.minExp)
	}
	return math.Ldexp(0.5, e-t.mant)
}

// Encode returns the bits of the element nearest f (ties to even). f32
// and f16 round through float32 as the device's __float2half does from a
// float; bf16 rounds the float32 to its top 16 bits; fp8e4m3 rounds f
// itself and saturates to ±448.
func (t *Type) Encode(f float64) uint32 {
	switch t {
	case F16:
		return uint32(F32ToF16(float32(f)))
	case BF16:
		return uint32(F32ToBF16(float32(f)))
	case FP8E4M3:
		return uint32(F64ToE4M3(f))
	}
	return math.Float32bits(float32(f))
}

// Decode returns the exact value of the type's bits.
func (t *Type) Decode(bits uint32) float64 {
	switch t {
	case F16:
		return F16ToF64(uint16(bits))
	case BF16:
		return float64(math.Float32frombits(bits << 16))
	case FP8E4M3:
		return E4M3ToF64(uint8(bits))
	}
	return float64(math.Float32frombits(bits))
}

// Put stores the bits of f as element i of raw (little-endian) and
// returns the value they hold.
func (t *Type) Put(raw []byte, i int, f float64) float64 {
	b := t.Encode(f)
	t.PutBits(raw, i, b)
	return t.Decode(b)
}

// PutBits stores bits as element i of raw, little-endian.
func (t *Type) PutBits(raw []byte, i int, bits uint32) {
	switch t.Bytes {
	case 1:
		raw[i] = uint8(bits)
	case 2:
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(bits))
	default:
		binary.LittleEndian.PutUint32(raw[4*i:], bits)
	}
}

// Bits returns element i of raw.
func (t *Type) Bits(raw []byte, i int) uint32 {
	switch t.Bytes {
	case 1:
		return uint32(raw[i])
	case 2:
		return uint32(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return binary.LittleEndian.Uint32(raw[4*i:])
}

// F32ToF16 converts f to IEEE 754 binary16 bits, rounding to nearest with
// ties to even (what __float2half does on the device), so that the values
// the oracle uses are exactly the values the kernel loads. Overflow gives
// ±inf and NaN stays a (quiet) NaN.
func F32ToF16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	man := b & 0x7fffff

	if exp == 0xff { // inf or NaN
		if man == 0 {
			return sign | 0x7c00
		}
		// Keep the top mantissa bits and force the quiet bit so that a
		// NaN never turns into an infinity.
		return sign | 0x7e00 | uint16(man>>13)
	}
	// Unbiased exponent, rebiased for half (bias 15 vs 127).
	e := exp - 127 + 15
	if e >= 0x1f {
		return sign | 0x7c00
	}
	if e <= 0 {
		// Subnormal half (or zero): the value is m × 2^-24 with m an
		// integer < 1024. Shift the full 24-bit significand into place
		// and round the dropped bits to nearest even.
		if e < -10 {
			return sign // below half the smallest subnormal: ±0
		}
		sig := man | 0x800000 // implicit leading one
		shift := uint(14 - e) // 24-bit significand → 10-bit field
		h := sig >> shift
		rem := sig & (1<<shift - 1)
		half := uint32(1) << (shift - 1)
		if rem > half || (rem == half && h&1 == 1) {
			h++ // may carry into the smallest normal, which is correct
		}
		return sign | uint16(h)
	}
	h := uint32(e)<<10 | man>>13
	rem := man & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && h&1 == 1) {
		h++ // a carry out of the mantissa bumps the exponent, up to inf
	}
	return sign | uint16(h)
}

// F16ToF64 converts binary16 bits to the exact float64 value. It is a
// table lookup: the gates widen tens of millions of elements per kernel at
// batch 16, and the arithmetic (f16ToF64) was a fifth of their host time.
func F16ToF64(h uint16) float64 { return f16Table()[h] }

// f16Table holds f16ToF64 of every bit pattern, built on first use.
var f16Table = sync.OnceValue(func() *[1 << 16]float64 {
	var t [1 << 16]float64
	for i := range t {
		t[i] = f16ToF64(uint16(i))
	}
	return &t
})

// f16ToF64 computes the exact float64 value of binary16 bits.
func f16ToF64(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	man := float64(h & 0x3ff)
	switch exp {
	case 0:
		return sign * man * 0x1p-24
	case 0x1f:
		if man == 0 {
			return math.Inf(int(sign))
		}
		return math.NaN()
	}
	return sign * (1 + man/1024) * math.Ldexp(1, exp-15)
}

// F32ToBF16 rounds f to the nearest bfloat16 (its top 16 bits), ties to
// even; NaN stays a (quiet) NaN and overflow gives ±inf.
func F32ToBF16(f float32) uint16 {
	b := math.Float32bits(f)
	if f != f {
		return uint16(b>>16) | 0x40
	}
	b += 0x7FFF + (b>>16)&1
	return uint16(b >> 16)
}

// BF16ToF32 widens bfloat16 bits to float32, exactly.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// E4M3Max is the largest finite fp8e4m3 value, 1.75·2^8.
const E4M3Max = 448

// e4m3NaN is the positive NaN code S.1111.111; the format has no
// infinities.
const e4m3NaN = 0x7f

// F64ToE4M3 encodes f as OCP E4M3FN (CUDA's __nv_fp8_e4m3, PTX's e4m3):
// 1 sign, 4 exponent bits of bias 7, 3 mantissa bits; subnormals m·2^-9.
// It rounds to nearest, ties to even, and saturates out-of-range values,
// infinities included, to ±448 as cvt.rn.satfinite does; NaN gives NaN.
func F64ToE4M3(f float64) uint8 {
	if math.IsNaN(f) {
		return e4m3NaN
	}
	var sign uint8
	if math.Signbit(f) {
		sign = 0x80
	}
	a := math.Abs(f)
	if a >= E4M3Max {
		return sign | 0x7e
	}
	// The spacing at a: 2^(e-3) for a normal of exponent e (≥ -6), the
	// subnormals' 2^-9 below 2^-6. a/spacing is exact (a power of two).
	e := -6
	if a >= 0x1p-6 {
		_, fe := math.Frexp(a) // a = f·2^fe, f in [0.5, 1)
		e = fe - 1
	}
	n := math.RoundToEven(math.Ldexp(a, 3-e)) // significand in units of the spacing
	if n >= 16 {                              // rounded up into the next binade
		n, e = 8, e+1
	}
	if e == -6 && n < 8 {
		return sign | uint8(n) // subnormal (or zero): exponent field 0
	}
	if e > 8 || (e == 8 && n > 14) {
		return sign | 0x7e // rounded past 448: saturate
	}
	return sign | uint8(e+7)<<3 | uint8(n-8)
}

// E4M3ToF64 returns the exact value of fp8e4m3 bits (NaN for S.1111.111).
func E4M3ToF64(b uint8) float64 {
	sign := 1.0
	if b&0x80 != 0 {
		sign = -1
	}
	exp, man := int(b>>3)&0xf, float64(b&7)
	switch {
	case exp == 0xf && b&7 == 7:
		return math.NaN()
	case exp == 0:
		return sign * man * 0x1p-9
	}
	return sign * (8 + man) * math.Ldexp(1, exp-10)
}

// The kv_scale modes of a scaled type: how the gate inputs choose the
// scales of the kv_scale buffer. ScaleTensor (the default) gives every KV
// head of K one scale and of V another, as the engines' per-tensor fp8
// caches do; ScaleHead gives every (K or V, KV head) its own;
// ScaleShared gives K and V one scale together, as a cache with a single
// fp8 scale for both has (every entry of the buffer holds it, so a kernel
// may read any one).
const (
	ScaleTensor = "tensor"
	ScaleHead   = "head"
	ScaleShared = "shared"
)

// CheckScale reports whether mode is a kv_scale the type takes: "" for
// every type, tensor, head or shared for a scaled type only.
func (t *Type) CheckScale(mode string) error {
	switch {
	case mode == "":
		return nil
	case !t.Scaled:
		return fmt.Errorf("kv_scale %q: kv_dtype %s takes no scales (only %s does)", mode, t.Name, scaledNames())
	case mode != ScaleTensor && mode != ScaleHead && mode != ScaleShared:
		return fmt.Errorf("kv_scale %q is none of %s, %s, %s", mode, ScaleTensor, ScaleHead, ScaleShared)
	}
	return nil
}

func scaledNames() string {
	var n []string
	for _, t := range All {
		if t.Scaled {
			n = append(n, t.Name)
		}
	}
	return strings.Join(n, ", ")
}
