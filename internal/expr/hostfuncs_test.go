package expr

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"strings"
	"testing"
)

// fastdivQuotient divides as a kernel holding uint_fastdiv's constants
// does (FlashInfer's operator/), in 32-bit unsigned arithmetic.
func fastdivQuotient(n, d, m, s, a uint32) uint32 {
	if d == 1 {
		return n
	}
	hi, _ := bits.Mul32(m, n)
	return (hi + a*n) >> s
}

// fmdQuotient divides as cuda::fast_mod_div<uint32_t>'s operator/ does.
func fmdQuotient(n, mul, add, shift uint32) uint32 {
	if mul == 0 {
		return n >> shift
	}
	if n != math.MaxUint32 {
		n += add
	}
	hi, _ := bits.Mul32(n, mul)
	return hi >> shift
}

// dividends are the edges every divisor is tried at, then random ones.
func dividends(d uint32, r *rand.Rand) []uint32 {
	out := []uint32{0, 1, d - 1, d, d + 1, 2*d - 1, 2 * d, math.MaxUint32, math.MaxUint32 - 1, 1 << 31, 1<<31 - 1, 1<<16 - 1, 1 << 16}
	for range 24 {
		out = append(out, r.Uint32(), r.Uint32N(1<<20), uint32(r.Uint64N(uint64(d)*64+1)))
	}
	return out
}

// divisors are every divisor to 2^14, the powers of two and their
// neighbours, and random ones over the whole 32-bit range.
func divisors(r *rand.Rand) []uint32 {
	var out []uint32
	for d := uint32(1); d <= 1<<14; d++ {
		out = append(out, d)
	}
	for k := 15; k < 32; k++ {
		out = append(out, 1<<k-1, 1<<k, 1<<k+1)
	}
	out = append(out, math.MaxUint32, math.MaxUint32-1)
	for range 20000 {
		out = append(out, r.Uint32()|1, r.Uint32N(1<<24)+1)
	}
	return out
}

// CCCL's fast_mod_div divides every 32-bit dividend exactly.
func TestFastModDivAgainstDivision(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, d := range divisors(r) {
		mul, add, shift := FastModDiv(d)
		for _, n := range dividends(d, r) {
			if got, want := fmdQuotient(n, mul, add, shift), n/d; got != want {
				t.Fatalf("fast_mod_div(%d) = {mul %d, add %d, shift %d}: %d / %d gives %d, want %d", d, mul, add, shift, n, d, got, want)
			}
		}
	}
}

// uint_fastdiv divides exactly every dividend below 2³¹ (the kernels'
// indices: FlashInfer divides token positions by the page size); with
// the add indicator set, umulhi(m, n) + n may pass 2³² in the engine's
// 32-bit sum, which the test records instead of hiding.
func TestUintFastdivAgainstDivision(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	wraps := 0
	for _, d := range divisors(r) {
		m, s, a := UintFastdiv(d)
		for _, n := range dividends(d, r) {
			got, want := fastdivQuotient(n, d, m, s, a), n/d
			if got == want {
				continue
			}
			if hi, _ := bits.Mul32(m, n); n < 1<<31 || uint64(hi)+uint64(a)*uint64(n) < 1<<32 {
				t.Fatalf("uint_fastdiv(%d) = {m %d, s %d, a %d}: %d / %d gives %d, want %d", d, m, s, a, n, d, got, want)
			}
			wraps++
		}
	}
	t.Logf("%d quotients of dividends ≥ 2³¹ wrong by the engine's 32-bit wrap (add indicator set)", wraps)
}

// Known values, worked by hand from the formulas: d = 7 needs the add
// indicator (Hacker's Delight's example: m = 0x24924925, s = 3, a = 1);
// d = 16 (a page size) is a power of two.
func TestFastDivisionKnown(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int64
	}{
		{"fastdiv_m(7)", 0x24924925}, {"fastdiv_s(7)", 3}, {"fastdiv_a(7)", 1},
		{"fastdiv_m(3)", 0xAAAAAAAB}, {"fastdiv_s(3)", 1}, {"fastdiv_a(3)", 0},
		{"fmd_mul(16)", 0}, {"fmd_shift(16)", 4}, {"fmd_add(16)", 0},
		// d = 7: s = 2, ⌊(2³⁴ + 4)/7⌋ = ⌊2³⁴/7⌋ = 2454267026, so add = 1;
		// d = 3: s = 1, ⌊(2³³ + 2)/3⌋ = 2863311531 > ⌊2³³/3⌋, so add = 0.
		{"fmd_shift(7)", 2}, {"fmd_mul(7)", 2454267026}, {"fmd_add(7)", 1},
		{"fmd_mul(3)", 2863311531}, {"fmd_add(3)", 0},
		{"log2(1)", 0}, {"log2(16)", 4}, {"log2(17)", 4}, {"ceil_log2(17)", 5}, {"ceil_log2(16)", 4},
		// A power of two: m = 2³²/16, s = 0, so umulhi(m, n) = n >> 4.
		{"fastdiv_m(page_size)", 1 << 28}, {"fastdiv_s(page_size) + log2(page_size)", 0 + 4},
	} {
		x, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		got, err := x.Eval(Env{"page_size": 16})
		if err != nil || got != tc.want {
			t.Errorf("%s = %d, %v; want %d", tc.src, got, err, tc.want)
		}
	}
	for src, want := range map[string]string{
		"fastdiv_m(0)":    "fastdiv_m: divisor 0: want 1 to 2³² − 1",
		"fmd_mul(1 << 2)": "",
		"log2(0)":         "log2: log2 of 0: want x ≥ 1",
		"log2(1, 2)":      "log2 takes 1 arguments, got 2",
	} {
		x, err := Parse(src)
		if err == nil {
			_, err = x.Eval(Env{})
		}
		if want != "" && (err == nil || !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

// wave_fill against hand-worked searches: a first wave that fills to
// 95% or more ends the search; ties keep the first count; a later wave
// wins when it fills better; the range bounds the answer.
func TestWaveFillKnown(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int64
	}{
		// 32 heads on 132 SMs at 3 blocks each (396 a wave): c = 12 puts
		// 384 blocks in one wave (96%), c = 13 needs a second: stop.
		{"wave_fill(32, 3, 64, 132 * 3)", 12},
		// The range ends first: the best is its top, one wave.
		{"wave_fill(32, 3, 8, 396)", 8},
		// lo = hi: no choice.
		{"wave_fill(32, 4, 4, 528)", 4},
		// 48 tiles, 132 a wave: c = 1 (36%), 2 (72%), 3 (2 waves, 54%),
		// 4 (72%, a tie: 2 stays), 5 (90%), 6 (3 waves, 72%), 7 (84%),
		// 8 (96%), 9 needs a fourth wave after a best of 96%: stop at 8.
		{"wave_fill(48, 1, 100, 132)", 8},
		{"wave_fill(48, 1, 4, 132)", 2},
		{"wave_fill(48, 1, 7, 132)", 5},
		// Exactly full waves: 100% at c = 4, the next count is a new wave.
		{"wave_fill(33, 1, 1000, 132)", 4},
		// Symbols and nested expressions, as a spec writes them.
		{"wave_fill(heads, min(3, cdiv(nkv, 256) * 256 / 128), cdiv(nkv, 256) * 256 / 128, sms * 3)", 8},
	} {
		x, err := Parse(tc.src)
		if err != nil {
			t.Fatalf("%s: %v", tc.src, err)
		}
		got, err := x.Eval(Env{"heads": 32, "nkv": 1000, "sms": 132})
		if err != nil || got != tc.want {
			t.Errorf("%s = %d, %v; want %d", tc.src, got, err, tc.want)
		}
	}
	for src, want := range map[string]string{
		"wave_fill(32, 5, 4, 396)":             "wave_fill: lo 5, hi 4",
		"wave_fill(0, 1, 4, 396)":              "wave_fill: arguments (0, 1, 4, 396)",
		"wave_fill(32, 1, 4, 0)":               "want each 1 to 2³¹ − 1",
		"wave_fill(32, 1, 2147483648, 396)":    "want each 1 to 2³¹ − 1",
		"wave_fill(1, 1, 2097152, 1073741824)": "want lo ≤ hi < lo + 2²⁰",
		"wave_fill(32, 1, 4)":                  "wave_fill takes 4 arguments, got 3",
	} {
		x, err := Parse(src)
		if err == nil {
			_, err = x.Eval(Env{})
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}

// Properties of every search over a grid of arguments: the answer lies
// in [lo, hi]; no count from lo to the answer fills its waves better;
// and widening hi past the answer never gives a count below it.
func TestWaveFillProperties(t *testing.T) {
	eff := func(tiles, c, perWave int64) int64 {
		total := tiles * c
		return 100 * total / ((total + perWave - 1) / perWave * perWave)
	}
	for tiles := int64(1); tiles <= 70; tiles += 3 {
		for _, perWave := range []int64{1, 7, 66, 132, 396, 528} {
			for lo := int64(1); lo <= 5; lo++ {
				for hi := lo; hi <= 40; hi += 3 {
					got, err := waveFill([]int64{tiles, lo, hi, perWave})
					if err != nil {
						t.Fatal(err)
					}
					if got < lo || got > hi {
						t.Fatalf("wave_fill(%d, %d, %d, %d) = %d, outside [lo, hi]", tiles, lo, hi, perWave, got)
					}
					for c := lo; c < got; c++ {
						if eff(tiles, c, perWave) >= eff(tiles, got, perWave) {
							t.Fatalf("wave_fill(%d, %d, %d, %d) = %d, but %d fills as well (%d%% ≥ %d%%)",
								tiles, lo, hi, perWave, got, c, eff(tiles, c, perWave), eff(tiles, got, perWave))
						}
					}
					wider, err := waveFill([]int64{tiles, lo, hi + 10, perWave})
					if err != nil || wider < got {
						t.Fatalf("wave_fill(%d, %d, %d, %d) = %d, but hi + 10 gives %d (%v)", tiles, lo, hi, perWave, got, wider, err)
					}
				}
			}
		}
	}
}
