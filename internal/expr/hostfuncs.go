package expr

import (
	"fmt"
	"math/bits"
)

// The values engines compute on the host and pass to their kernels, as
// functions of the expressions: integer logarithms, and the constants of
// fast division by a run-time divisor, in the two layouts engines' kernels
// take them. Each is a pure function of its arguments, documented with its
// formula; hostfuncs_test.go checks each against a reference (Go's own
// division) over exhaustive and random divisors and dividends.
//
//	log2(x)        ⌊log₂ x⌋, x ≥ 1
//	ceil_log2(x)   ⌈log₂ x⌉, x ≥ 1
//
// uint_fastdiv (FlashInfer's struct {uint32_t d, m, s, a}, the unsigned
// "magic number" of Hacker's Delight, 2nd ed., §10-10, as its constructor
// computes it): for a 32-bit divisor d ≥ 1, p is the least exponent ≥ 32
// with 2^p > nc·(d − 1 − (2^p − 1) mod d), nc = 2³² − 1 − (2³² − d) mod d;
// then
//
//	fastdiv_m(d) = ⌊(2^p − 1)/d⌋ + 1 mod 2³²   (q2 + 1)
//	fastdiv_s(d) = p − 32
//	fastdiv_a(d) = 1 when the multiplier needs a 33rd bit, else 0
//
// and the kernel divides as q = (umulhi(m, n) + a·n) >> s (d = 1: q = n).
//
// cuda::fast_mod_div<uint32_t> (CCCL's struct {divisor, multiplier, add,
// shift}, unsigned): s = ⌊log₂ d⌋; for d a power of two multiplier 0 and
// add 0 (the kernel shifts); otherwise, with k = 32 + s,
//
//	fmd_shift(d) = s
//	fmd_mul(d)   = ⌊(2^k + 2^s)/d⌋
//	fmd_add(d)   = 1 when ⌊2^k/d⌋ = fmd_mul(d), else 0
//
// and the kernel divides as q = umulhi(n + add, multiplier) >> s (n + add
// not taken past 2³² − 1).
//
// wave_fill(tiles, lo, hi, per_wave) is the split count an engine picks
// so that tiles·c blocks fill whole waves of per_wave blocks (SMs times
// resident blocks per SM): over c from lo to hi, the waves are
// w = ⌈tiles·c / per_wave⌉ and the efficiency ⌊100·tiles·c / (w·per_wave)⌋
// percent; the first c of the highest efficiency wins, and the search
// stops at the first c of more waves than the best once the best reaches
// 95 percent (llama.cpp's launch_fattn, parallel_blocks of its vector and
// tile kernels). 1 ≤ lo ≤ hi, tiles and per_wave ≥ 1, all below 2³¹,
// and hi − lo below 2²⁰ (the search is a loop, as the engine's is).
var hostFuncs = map[string]struct {
	arity int
	f     func(args []int64) (int64, error)
}{
	"log2":      {1, func(a []int64) (int64, error) { return log2(a[0], false) }},
	"ceil_log2": {1, func(a []int64) (int64, error) { return log2(a[0], true) }},
	"fastdiv_m": {1, fastdivPart(func(m, _, _ uint32) uint32 { return m })},
	"fastdiv_s": {1, fastdivPart(func(_, s, _ uint32) uint32 { return s })},
	"fastdiv_a": {1, fastdivPart(func(_, _, a uint32) uint32 { return a })},
	"fmd_mul":   {1, fmdPart(func(m, _, _ uint32) uint32 { return m })},
	"fmd_add":   {1, fmdPart(func(_, a, _ uint32) uint32 { return a })},
	"fmd_shift": {1, fmdPart(func(_, _, s uint32) uint32 { return s })},
	"wave_fill": {4, waveFill},
}

func init() {
	for name, h := range hostFuncs {
		functions[name] = h.arity
	}
}

func log2(x int64, ceil bool) (int64, error) {
	if x < 1 {
		return 0, fmt.Errorf("log2 of %d: want x ≥ 1", x)
	}
	l := int64(63 - bits.LeadingZeros64(uint64(x)))
	if ceil && x&(x-1) != 0 {
		l++
	}
	return l, nil
}

func waveFill(a []int64) (int64, error) {
	tiles, lo, hi, perWave := a[0], a[1], a[2], a[3]
	for _, v := range a {
		if v < 1 || v >= 1<<31 {
			return 0, fmt.Errorf("arguments (%d, %d, %d, %d): want each 1 to 2³¹ − 1", tiles, lo, hi, perWave)
		}
	}
	if lo > hi || hi-lo >= 1<<20 {
		return 0, fmt.Errorf("lo %d, hi %d: want lo ≤ hi < lo + 2²⁰", lo, hi)
	}
	best, bestWaves, bestEff := lo, int64(0), int64(0)
	for c := lo; c <= hi; c++ {
		total := tiles * c
		waves := (total + perWave - 1) / perWave
		eff := 100 * total / (waves * perWave)
		if bestEff >= 95 && waves > bestWaves {
			break
		}
		if eff > bestEff {
			best, bestWaves, bestEff = c, waves, eff
		}
	}
	return best, nil
}

// divisor32 checks a fast-division divisor: a 32-bit unsigned integer ≥ 1.
func divisor32(d int64) (uint32, error) {
	if d < 1 || d > 1<<32-1 {
		return 0, fmt.Errorf("divisor %d: want 1 to 2³² − 1", d)
	}
	return uint32(d), nil
}

func fastdivPart(pick func(m, s, a uint32) uint32) func([]int64) (int64, error) {
	return func(args []int64) (int64, error) {
		d, err := divisor32(args[0])
		if err != nil {
			return 0, err
		}
		return int64(pick(UintFastdiv(d))), nil
	}
}

func fmdPart(pick func(mul, add, shift uint32) uint32) func([]int64) (int64, error) {
	return func(args []int64) (int64, error) {
		d, err := divisor32(args[0])
		if err != nil {
			return 0, err
		}
		return int64(pick(FastModDiv(d))), nil
	}
}

// UintFastdiv returns the multiplier, shift and add indicator of
// uint_fastdiv for divisor d ≥ 1 (the formula above), in 32-bit unsigned
// arithmetic as the engine's constructor computes them.
func UintFastdiv(d uint32) (m, s, a uint32) {
	nc := ^uint32(0) - (-d)%d
	p := uint32(31)
	q1 := uint32(0x80000000) / nc
	r1 := uint32(0x80000000) - q1*nc
	q2 := uint32(0x7FFFFFFF) / d
	r2 := uint32(0x7FFFFFFF) - q2*d
	for {
		p++
		if r1 >= nc-r1 {
			q1, r1 = 2*q1+1, 2*r1-nc
		} else {
			q1, r1 = 2*q1, 2*r1
		}
		if r2+1 >= d-r2 {
			if q2 >= 0x7FFFFFFF {
				a = 1
			}
			q2, r2 = 2*q2+1, 2*r2+1-d
		} else {
			if q2 >= 0x80000000 {
				a = 1
			}
			q2, r2 = 2*q2, 2*r2+1
		}
		delta := d - 1 - r2
		if !(p < 64 && (q1 < delta || (q1 == delta && r1 == 0))) {
			break
		}
	}
	return q2 + 1, p - 32, a
}

// FastModDiv returns the multiplier, add and shift of CCCL's
// fast_mod_div<uint32_t> for divisor d ≥ 1 (the formula above).
func FastModDiv(d uint32) (mul, add, shift uint32) {
	shift = uint32(31 - bits.LeadingZeros32(d))
	if d&(d-1) == 0 {
		return 0, 0, shift
	}
	k := 32 + shift
	hi := (uint64(1)<<k + uint64(1)<<shift) / uint64(d)
	lo := (uint64(1) << k) / uint64(d)
	if lo == hi {
		add = 1
	}
	return uint32(hi), add, shift
}
