package oracle

import (
	"math"
	"sync"
)

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
