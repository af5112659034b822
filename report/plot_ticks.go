package report

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// maxLabels is the most labels logTicks puts on an axis.
const maxLabels = 10

// dataHeight is a lower bound of the height of a plot's data area: the
// image's data part less the title (two lines at most), the x axis with
// its labels and title, and the padding.
const dataHeight = plotHeight - 3*vg.Centimeter

// logTicks labels a log axis at readable values, at least three within
// the axis range, never two labels closer than their own size: every
// m × 10^k, else 1, 2 and 5 × 10^k, else the powers of ten, whichever is
// the densest that fits with at most maxLabels, else (an axis spanning
// less than about a factor of two) multiples of a 1, 2 or 5 × 10^k step. Unlabelled marks stay at
// every m × 10^k in range. Powers of ten alone left an axis from 100 to
// 600 µs with one label, and 1-2-5 alone an axis from 1850 to 1880 µs
// with none.
type logTicks struct {
	axis     vg.Length // a lower bound of the axis length
	vertical bool      // labels stack by height, not width
}

// Ticks implements plot.Ticker.
func (t logTicks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	// The densest set whose labels fit, up to maxLabels: more labels
	// read values more closely, past a dozen they only crowd.
	// Inside a decade the m × 10^k marks leave the part above the last
	// power of ten bare (800, 900, 1000 on an axis up to 1400): there a
	// linear step covers the whole range.
	var labels []float64
	if hi/lo < 10 {
		labels = t.linear(lo, hi)
	}
	for _, ms := range [][]float64{{1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 2, 5}, {1}} {
		if labels != nil {
			break
		}
		if vs := decadeValues(lo, hi, ms); len(vs) >= 3 && len(vs) <= maxLabels && t.fits(lo, hi, vs) {
			labels = vs
		}
	}
	if labels == nil {
		labels = t.linear(lo, hi)
	}
	var out []plot.Tick
	labelled := map[float64]bool{}
	for _, v := range labels {
		labelled[v] = true
		out = append(out, plot.Tick{Value: v, Label: tickLabel(v)})
	}
	for _, v := range decadeValues(lo, hi, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}) {
		if !labelled[v] {
			out = append(out, plot.Tick{Value: v})
		}
	}
	return out
}

// decadeValues are the values m × 10^k within [lo, hi] for m in ms,
// ascending.
func decadeValues(lo, hi float64, ms []float64) []float64 {
	var out []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for _, m := range ms {
			// Rounded to 12 significant digits, so that 3 × 0.1 is 0.3.
			v, _ := strconv.ParseFloat(strconv.FormatFloat(m*p, 'g', 12, 64), 64)
			if v >= lo && v <= hi {
				out = append(out, v)
			}
		}
	}
	return out
}

// linear is the finest step of 1, 2 or 5 × 10^k whose labels in [lo, hi]
// fit, at most maxLabels of them and at least three (the first step with
// three when none fits), and those labels.
func (t logTicks) linear(lo, hi float64) []float64 {
	var first []float64
	for e := math.Floor(math.Log10(hi - lo)); e > math.Floor(math.Log10(hi))-15; e-- {
		for _, m := range []float64{5, 2, 1} {
			d := m * math.Pow(10, e)
			var vs []float64
			for k := math.Ceil(lo / d); k*d <= hi; k++ {
				v, _ := strconv.ParseFloat(strconv.FormatFloat(k*d, 'g', 12, 64), 64)
				vs = append(vs, v)
			}
			if len(vs) < 3 {
				continue
			}
			if first == nil {
				first = vs
			}
			if len(vs) > maxLabels || !t.fits(lo, hi, vs) {
				return first
			}
			first = vs
		}
	}
	return first
}

// fits reports whether labels at vs (ascending) keep a gap between
// neighbours on an axis of length t.axis from lo to hi.
func (t logTicks) fits(lo, hi float64, vs []float64) bool {
	sty := plot.New().Y.Tick.Label
	gap := vg.Points(3)
	size := func(v float64) vg.Length {
		if t.vertical {
			return sty.Height(tickLabel(v))
		}
		return sty.Width(tickLabel(v))
	}
	pos := func(v float64) vg.Length {
		return vg.Length(math.Log(v/lo)/math.Log(hi/lo)) * t.axis
	}
	for i := 1; i < len(vs); i++ {
		if pos(vs[i])-pos(vs[i-1]) < (size(vs[i])+size(vs[i-1]))/2+gap {
			return false
		}
	}
	return true
}

func tickLabel(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
