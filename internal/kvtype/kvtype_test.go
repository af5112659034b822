package kvtype

import (
	"math"
	"testing"
)

func TestLookup(t *testing.T) {
	for _, ty := range All {
		if got, err := Lookup(ty.Name); err != nil || got != ty {
			t.Errorf("Lookup(%s) = %v, %v", ty.Name, got, err)
		}
	}
	if _, err := Lookup("fp16"); err == nil {
		t.Error("Lookup(fp16): no error")
	}
	for _, c := range []struct {
		t     *Type
		bytes int
	}{{F32, 4}, {F16, 2}, {BF16, 2}, {FP8E4M3, 1}} {
		if c.t.Bytes != c.bytes {
			t.Errorf("%s: %d bytes, want %d", c.t, c.t.Bytes, c.bytes)
		}
	}
}

// The defines of f32 and f16 are what they were before bf16 and fp8e4m3
// existed (their points keep their hashes); the new types add their own.
func TestShapeDefines(t *testing.T) {
	for _, c := range []struct {
		t    *Type
		want map[string]string
	}{
		{F32, map[string]string{"KV_F16": "0"}},
		{F16, map[string]string{"KV_F16": "1"}},
		{BF16, map[string]string{"KV_F16": "0", "KV_BF16": "1"}},
		{FP8E4M3, map[string]string{"KV_F16": "0", "KV_FP8": "1"}},
	} {
		got := c.t.ShapeDefines()
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.t, got, c.want)
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", c.t, got, c.want)
			}
		}
	}
}

func TestCheckScale(t *testing.T) {
	for _, c := range []struct {
		t    *Type
		mode string
		ok   bool
	}{
		{F16, "", true}, {F16, "tensor", false}, {BF16, "head", false},
		{FP8E4M3, "", true}, {FP8E4M3, "tensor", true}, {FP8E4M3, "head", true}, {FP8E4M3, "channel", false},
	} {
		if err := c.t.CheckScale(c.mode); (err == nil) != c.ok {
			t.Errorf("%s kv_scale %q: %v", c.t, c.mode, err)
		}
	}
}

func TestE4M3Known(t *testing.T) {
	for _, c := range []struct {
		bits uint8
		val  float64
	}{
		{0x00, 0}, {0x80, math.Copysign(0, -1)},
		{0x7e, 448}, {0xfe, -448},
		{0x01, 0x1p-9}, {0x07, 7 * 0x1p-9}, {0x08, 0x1p-6},
		{0x38, 1}, {0xb8, -1}, {0x39, 1.125}, {0x40, 2}, {0x30, 0.5},
		{0x77, 240}, {0x78, 256},
	} {
		if got := E4M3ToF64(c.bits); got != c.val || math.Signbit(got) != math.Signbit(c.val) {
			t.Errorf("E4M3ToF64(%#02x) = %v, want %v", c.bits, got, c.val)
		}
		if got := F64ToE4M3(c.val); got != c.bits {
			t.Errorf("F64ToE4M3(%v) = %#02x, want %#02x", c.val, got, c.bits)
		}
	}
	for _, b := range []uint8{0x7f, 0xff} {
		if !math.IsNaN(E4M3ToF64(b)) {
			t.Errorf("%#02x is not NaN", b)
		}
	}
	if b := F64ToE4M3(math.NaN()); !math.IsNaN(E4M3ToF64(b)) {
		t.Errorf("NaN encodes as %#02x", b)
	}
}

// TestE4M3AllCodes decodes every code and encodes it back; the finite
// values are strictly increasing in the code for each sign.
func TestE4M3AllCodes(t *testing.T) {
	prev := -1.0
	for i := range 256 {
		b := uint8(i)
		v := E4M3ToF64(b)
		if math.IsNaN(v) {
			if b&0x7f != 0x7f {
				t.Errorf("%#02x decodes as NaN", b)
			}
			continue
		}
		if got := F64ToE4M3(v); got != b {
			t.Errorf("round trip %#02x → %v → %#02x", b, v, got)
		}
		if got := FP8E4M3.Decode(FP8E4M3.Encode(v)); got != v {
			t.Errorf("Type round trip of %v gives %v", v, got)
		}
		if b < 0x80 {
			if v <= prev && b != 0 {
				t.Errorf("%#02x = %v not above %v", b, v, prev)
			}
			prev = v
		}
		if b&0x78 == 0 && b&7 != 0 { // subnormal
			if math.Abs(v) != float64(b&7)*0x1p-9 {
				t.Errorf("subnormal %#02x = %v", b, v)
			}
		}
	}
}

// TestE4M3Rounding checks ties to even at midpoints, nearest elsewhere
// and saturation, against a brute-force search of the finite codes.
func TestE4M3Rounding(t *testing.T) {
	for _, c := range []struct {
		in   float64
		want uint8
		why  string
	}{
		{1.0625, 0x38, "tie between 1 and 1.125: even (1)"},
		{1.1875, 0x3a, "tie between 1.125 and 1.25: even (1.25)"},
		{1.07, 0x39, "above the tie"},
		{0.5 * 0x1p-9, 0x00, "half the smallest subnormal: even (0)"},
		{1.5 * 0x1p-9, 0x02, "tie between subnormals 1 and 2: even"},
		{0.51 * 0x1p-9, 0x01, "above half the smallest subnormal"},
		{7.5 * 0x1p-9, 0x08, "tie between the largest subnormal and 2^-6: even (2^-6)"},
		{464, 0x7e, "tie between 448 and 480 (not finite): saturate"},
		{1e6, 0x7e, "saturate"},
		{-1e6, 0xfe, "saturate, negative"},
		{math.Inf(1), 0x7e, "satfinite: +inf → 448"},
		{15.5, 0x58, "tie between 15 (0x57) and 16 (0x58): even (16)"},
	} {
		if got := F64ToE4M3(c.in); got != c.want {
			t.Errorf("F64ToE4M3(%v) = %#02x, want %#02x: %s", c.in, got, c.want, c.why)
		}
	}
	// Nearest: every encoding is within half a spacing of the input, and
	// no other code is closer.
	for x := -500.0; x <= 500; x += 0.0137 {
		got := E4M3ToF64(F64ToE4M3(x))
		best := math.Inf(1)
		for i := range 256 {
			if v := E4M3ToF64(uint8(i)); !math.IsNaN(v) {
				best = min(best, math.Abs(v-math.Max(-448, math.Min(448, x))))
			}
		}
		if math.Abs(got-math.Max(-448, math.Min(448, x))) != best {
			t.Fatalf("F64ToE4M3(%v) gives %v, a nearer code exists", x, got)
		}
	}
}

func TestBF16(t *testing.T) {
	for _, c := range []struct {
		in   float32
		want uint16
	}{
		{1, 0x3f80}, {-2, 0xc000},
		{1 + 1.0/256, 0x3f80},            // tie: even
		{1 + 3.0/256, 0x3f82},            // tie: even (up)
		{1 + 1.0/256 + 1.0/4096, 0x3f81}, // above the tie
		{float32(math.Inf(1)), 0x7f80},
	} {
		if got := F32ToBF16(c.in); got != c.want {
			t.Errorf("F32ToBF16(%v) = %#04x, want %#04x", c.in, got, c.want)
		}
	}
	if h := F32ToBF16(float32(math.NaN())); BF16ToF32(h) == BF16ToF32(h) {
		t.Errorf("NaN encodes as %#04x", h)
	}
	// bf16 holds f16's subnormals as normals, to its 8-bit precision.
	if v := BF16.Decode(BF16.Encode(0x1p-24)); v != 0x1p-24 {
		t.Errorf("2^-24 in bf16: %v", v)
	}
}

func TestHalfULPAndRoundoff(t *testing.T) {
	for _, c := range []struct {
		t    *Type
		x    float64
		want float64
	}{
		{F16, 1, 0x1p-11}, {F16, 0, 0x1p-25}, {BF16, 1, 0x1p-8}, {FP8E4M3, 1, 0x1p-4},
		{FP8E4M3, 0x1p-8, 0x1p-10}, {FP8E4M3, 448, 16},
	} {
		if got := c.t.HalfULP(c.x); got != c.want {
			t.Errorf("%s HalfULP(%v) = %v, want %v", c.t, c.x, got, c.want)
		}
	}
	if FP8E4M3.UnitRoundoff() != 0x1p-4 || BF16.UnitRoundoff() != 0x1p-8 || F16.UnitRoundoff() != 0x1p-11 {
		t.Error("unit roundoff")
	}
	// The largest error of a rounded store is at most its half ULP.
	for _, ty := range All {
		for x := 0.001; x < 400; x *= 1.013 {
			if d := math.Abs(ty.Decode(ty.Encode(x)) - x); d > ty.HalfULP(x) {
				t.Fatalf("%s: %v rounds by %v > half ULP %v", ty, x, d, ty.HalfULP(x))
			}
		}
	}
}

func TestPutBits(t *testing.T) {
	for _, ty := range All {
		raw := make([]byte, 3*ty.Bytes)
		v := ty.Put(raw, 2, -1.5)
		if v != -1.5 || ty.Decode(ty.Bits(raw, 2)) != -1.5 || ty.Bits(raw, 0) != 0 {
			t.Errorf("%s: Put/Bits", ty)
		}
	}
}
