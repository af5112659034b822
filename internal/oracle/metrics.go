package oracle

import (
	"fmt"
	"math"
)

// RelFloor is the |ref| below which an element is left out of MaxRel: a
// relative error against a near-zero reference says nothing about the
// kernel, and the absolute bound already covers those elements.
const RelFloor = 1e-3

// Metrics compare a device output with the reference.
type Metrics struct {
	MaxAbs float64 // max |out − ref|
	MaxRel float64 // max |out − ref| / |ref| over |ref| > RelFloor
	NMSE   float64 // Σ(out − ref)² / Σ ref²
	NaNs   int     // NaN or ±Inf elements of out
}

// Bounds are the limits of a tolerance gate.
type Bounds struct {
	MaxAbs, MaxRel, NMSE float64
}

// Compare computes the metrics of out against ref. The NaN/Inf elements
// are counted and left out of the other metrics, so that one NaN does not
// hide how far the rest of the output is off.
func Compare(out []float32, ref []float64) (Metrics, error) {
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

// Pass reports whether m is within b. A NaN or Inf never passes.
func (m Metrics) Pass(b Bounds) bool {
	return m.NaNs == 0 && m.MaxAbs <= b.MaxAbs && m.MaxRel <= b.MaxRel && m.NMSE <= b.NMSE
}
