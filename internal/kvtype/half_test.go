package kvtype

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestHalfKnownBits(t *testing.T) {
	cases := []struct {
		bits uint16
		val  float64
	}{
		{0x0000, 0},
		{0x3c00, 1},
		{0xc000, -2},
		{0x3800, 0.5},
		{0x7bff, 65504},
		{0x0400, math.Ldexp(1, -14)},        // smallest normal
		{0x03ff, 1023 * math.Ldexp(1, -24)}, // largest subnormal
		{0x0001, math.Ldexp(1, -24)},        // smallest subnormal
		{0x8001, -math.Ldexp(1, -24)},       // negative subnormal
		{0x3555, (1 + 341.0/1024) / 4},      // 0.333252: exponent 13, mantissa 0x155
		{0x7c00, math.Inf(1)},
		{0xfc00, math.Inf(-1)},
	}
	for _, c := range cases {
		if got := F16ToF64(c.bits); got != c.val {
			t.Errorf("F16ToF64(%#04x) = %v, want %v", c.bits, got, c.val)
		}
		if got := F32ToF16(float32(c.val)); got != c.bits {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x", c.val, got, c.bits)
		}
	}
	if !math.IsNaN(F16ToF64(0x7e00)) {
		t.Error("0x7e00 is not NaN")
	}
	if h := F32ToF16(float32(math.NaN())); h&0x7c00 != 0x7c00 || h&0x3ff == 0 {
		t.Errorf("F32ToF16(NaN) = %#04x, not a NaN", h)
	}
	if F32ToF16(float32(math.Copysign(0, -1))) != 0x8000 {
		t.Error("-0 lost its sign")
	}
}

func TestHalfRounding(t *testing.T) {
	cases := []struct {
		in   float64
		want uint16
		why  string
	}{
		{1 + math.Ldexp(1, -11), 0x3c00, "tie between 1 and 1+2^-10 goes to even (1)"},
		{1 + 3*math.Ldexp(1, -11), 0x3c02, "tie between odd and even mantissa goes up to even"},
		{1 + math.Ldexp(1, -11) + math.Ldexp(1, -20), 0x3c01, "just above the tie rounds up"},
		{65519, 0x7bff, "below the overflow tie"},
		{65520, 0x7c00, "tie at 65520 rounds to even, which is inf"},
		{1e6, 0x7c00, "overflow"},
		{math.Ldexp(1, -25), 0x0000, "tie between 0 and the smallest subnormal goes to 0"},
		{math.Ldexp(1.5, -25), 0x0001, "above the tie rounds to the smallest subnormal"},
		{math.Ldexp(3, -25), 0x0002, "tie between subnormals 1 and 2 goes to even"},
		{math.Ldexp(1, -30), 0x0000, "underflow"},
		{math.Ldexp(1023.5, -24), 0x0400, "largest subnormal tie carries into the smallest normal"},
	}
	for _, c := range cases {
		if got := F32ToF16(float32(c.in)); got != c.want {
			t.Errorf("F32ToF16(%v) = %#04x, want %#04x: %s", c.in, got, c.want, c.why)
		}
	}
}

func TestHalfRoundTripAllBits(t *testing.T) {
	for b := 0; b < 1<<16; b++ {
		h := uint16(b)
		v := F16ToF64(h)
		got := F32ToF16(float32(v))
		if math.IsNaN(v) {
			if got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
				t.Fatalf("NaN %#04x came back as %#04x", h, got)
			}
			continue
		}
		if got != h {
			t.Fatalf("%#04x → %v → %#04x", h, v, got)
		}
	}
}

// TestHalfNearest checks F32ToF16 against a brute-force search of the
// sorted table of every finite non-negative half: the nearest value, ties
// to the even bit pattern.
func TestHalfNearest(t *testing.T) {
	var table []uint16
	for b := 0; b < 0x7c00; b++ {
		table = append(table, uint16(b))
	}
	// Bit patterns of non-negative halves sort like their values.
	sort.Slice(table, func(i, j int) bool { return F16ToF64(table[i]) < F16ToF64(table[j]) })
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		// Log-uniform magnitudes over the whole half range and a bit beyond.
		f := float32(math.Ldexp(1+rng.Float64(), rng.IntN(44)-28))
		x := float64(f)
		j := sort.Search(len(table), func(k int) bool { return F16ToF64(table[k]) >= x })
		var want uint16
		switch {
		case j == len(table):
			// Beyond 65504: inf once at or past the tie at 65520.
			if x >= 65520 {
				want = 0x7c00
			} else {
				want = 0x7bff
			}
		case F16ToF64(table[j]) == x || j == 0:
			want = table[j]
		default:
			lo, hi := table[j-1], table[j]
			dl, dh := x-F16ToF64(lo), F16ToF64(hi)-x
			switch {
			case dl < dh:
				want = lo
			case dh < dl:
				want = hi
			case lo&1 == 0:
				want = lo
			default:
				want = hi
			}
		}
		if got := F32ToF16(f); got != want {
			t.Fatalf("F32ToF16(%g) = %#04x, nearest is %#04x", x, got, want)
		}
		if got := F32ToF16(-f); got != want|0x8000 {
			t.Fatalf("F32ToF16(%g) = %#04x, want %#04x", -x, got, want|0x8000)
		}
	}
}

// The table holds the arithmetic's value for every bit pattern (NaNs as
// NaN).
func TestF16Table(t *testing.T) {
	for i := range 1 << 16 {
		h := uint16(i)
		got, want := F16ToF64(h), f16ToF64(h)
		if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("F16ToF64(%#04x) = %g, want %g", h, got, want)
		}
	}
}
