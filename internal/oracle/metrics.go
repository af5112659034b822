package oracle

import (
	"fmt"
	"math"

	"github.com/ktune/ktune/internal/abi"
)

// RelFloor is the |ref| below which an element is left out of MaxRel: a
// relative error against a near-zero reference says nothing about the
// kernel, and the absolute bound already covers those elements.
const RelFloor = 1e-3

// Metrics compare a device output with the reference.
type Metrics struct {
	MaxAbs float64 // max |out − ref|
	// MaxRel and NMSE, and the element-wise rule, count only the error
	// beyond the output format's own rounding (Bounds.OutDtype).
	MaxRel float64 // max |out − ref| / |ref| over |ref| > RelFloor
	NMSE   float64 // Σ(out − ref)² / Σ ref²
	NaNs   int     // NaN or ±Inf elements of out
	// Outside counts the elements outside the element-wise bound
	// |out − ref| ≤ MaxAbs + MaxRel·|ref| of the Bounds given to Compare.
	Outside int
	// Worst is the largest |out − ref| / (MaxAbs + MaxRel·|ref|): ≤ 1 passes.
	Worst float64
}

// Bounds are the limits of a tolerance gate.
type Bounds struct {
	MaxAbs, MaxRel, NMSE float64
	// OutDtype is the dtype the kernel stores out in ("f16", "bf16"; ""
	// or "f32": no allowance). A kernel that stores f16 cannot be closer
	// to the reference than half a unit in the last place of f16 at that
	// value, so that much of every element's error is the format's, not
	// the kernel's: Compare subtracts it before applying the bounds and
	// before summing the NMSE. Without it a correct f16-out kernel fails
	// on small outputs (the subnormal input set: on the H200 a three-launch
	// f16-out test kernel had NMSE 4e-4, all of it f16's spacing of 2^-24).
	OutDtype abi.Dtype
}

// HalfULP is half the spacing of the dtype's representable values at |x|:
// the largest error of a correctly rounded store. 0 for f32 (and ""): an
// f32 store's rounding is far below any bound, and no allowance keeps the
// f32 verdicts what they were.
func HalfULP(dtype abi.Dtype, x float64) float64 {
	if dtype == "" || dtype == abi.F32 {
		return 0
	}
	return dtype.Type().HalfULP(x)
}

// Compare computes the metrics of out against ref, and how many elements
// lie outside b. The NaN/Inf elements are counted and left out of the
// other metrics, so that one NaN does not hide how far the rest of the
// output is off.
//
// The element-wise rule is the one numpy's allclose uses: an element
// passes when |out − ref| ≤ MaxAbs + MaxRel·|ref|. Requiring the absolute
// AND the relative bound of every element, as a first version did, fails
// f16-input kernels on outputs that happen to sit near zero: on the H200
// the tensor-core kernel had max |err| 1.6e-4 and NMSE 3e-8 at batch 16,
// yet a 7.6% relative error on an output of 2e-3 — no kernel error, just a
// small reference. MaxAbs and MaxRel are still reported on their own.
func Compare(out []float32, ref []float64, b Bounds) (Metrics, error) {
	if len(out) != len(ref) {
		return Metrics{}, fmt.Errorf("oracle: comparing %d outputs with %d reference values", len(out), len(ref))
	}
	var m Metrics
	var num, den float64
	for i, o := range out {
		f := float64(o)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			m.NaNs++
			continue
		}
		r := ref[i]
		d := math.Abs(f - r)
		m.MaxAbs = math.Max(m.MaxAbs, d)
		d = math.Max(0, d-HalfULP(b.OutDtype, r)) // the output format's share
		if lim := b.MaxAbs + b.MaxRel*math.Abs(r); d > lim {
			m.Outside++
			if lim > 0 {
				m.Worst = math.Max(m.Worst, d/lim)
			} else {
				m.Worst = math.Inf(1)
			}
		} else if lim > 0 {
			m.Worst = math.Max(m.Worst, d/lim)
		}
		if math.Abs(r) > RelFloor {
			m.MaxRel = math.Max(m.MaxRel, d/math.Abs(r))
		}
		num += d * d
		den += r * r
	}
	switch {
	case den > 0:
		m.NMSE = num / den
	case num > 0:
		// An all-zero reference: any error is infinitely relative. Report
		// the raw squared error rather than Inf, which JSON cannot carry;
		// MaxAbs still fails the gate.
		m.NMSE = num
	}
	return m, nil
}

// Pass reports whether m is within b: no NaN or Inf, every element within
// MaxAbs + MaxRel·|ref| (Compare must have been given the same b), and the
// NMSE within its bound.
func (m Metrics) Pass(b Bounds) bool {
	return m.NaNs == 0 && m.Outside == 0 && m.NMSE <= b.NMSE
}
