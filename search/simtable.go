package search

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// A SimSpace is the simulation of several strategies over one recorded
// space.
type SimSpace struct {
	Name    string // the results file
	Results []*SimResult
}

// WriteSimTable writes the simulation as text: per space, per strategy
// and threshold, the median over seeds of the timed points and of the
// GPU seconds until the table came within the threshold (a seed that
// never got there counts as more than any), their spread (the lowest and
// highest seed that got there), how many seeds got there, and how many
// times fewer points than random search's median that is; then where the
// strategy stopped on its own: the median points, the median GPU seconds
// (what a search that stops by itself pays) and the median gap of the
// worst cell to the full set's table.
func WriteSimTable(w io.Writer, spaces []SimSpace, seeds int) error {
	for i, sp := range spaces {
		if i > 0 {
			fmt.Fprintln(w)
		}
		if len(sp.Results) == 0 {
			continue
		}
		r0 := sp.Results[0]
		fmt.Fprintf(w, "%s: %d points, %d configurations, %d cells", sp.Name, r0.Points, r0.Configs, r0.Cells)
		if r0.Pruned > 0 {
			fmt.Fprintf(w, ", %d pruned before timing", r0.Pruned)
		}
		fmt.Fprintf(w, "; %d seeds\n", seeds)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "strategy\twithin\tpoints median\t[min–max]\tGPU s median\t[min–max]\treached\tvs random\tstops at\tGPU s then\tworst cell then")
		randomMedian := map[float64]float64{}
		for _, r := range sp.Results {
			if r.Strategy == "random" {
				for _, re := range r.Reached {
					randomMedian[re.Within] = re.median()
				}
			}
		}
		for _, r := range sp.Results {
			for _, re := range r.Reached {
				row := []string{string(r.Strategy), fmt.Sprintf("%g%%", 100*re.Within)}
				pts, gpu := re.median(), re.medianGPU()
				if math.IsInf(pts, 1) {
					row = append(row, "—", "", "—", "")
				} else {
					row = append(row, fmt.Sprintf("%g", pts), fmt.Sprintf("[%d–%d]", slices.Min(re.Points), slices.Max(re.Points)),
						fmt.Sprintf("%.1f", gpu), fmt.Sprintf("[%.1f–%.1f]", slices.Min(re.GPUSec), slices.Max(re.GPUSec)))
				}
				row = append(row, fmt.Sprintf("%d/%d", len(re.Points), re.Seeds))
				if rm, ok := randomMedian[re.Within]; ok && !math.IsInf(rm, 1) && !math.IsInf(pts, 1) {
					row = append(row, fmt.Sprintf("%.2f×", rm/pts))
				} else {
					row = append(row, "—")
				}
				row = append(row, ends(r.Ends)...)
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
}

// ends renders where a strategy stopped: the median points, the median
// GPU seconds, and the median worst cell's gap ("—" when some seed left
// a cell unmeasured).
func ends(es []End) []string {
	if len(es) == 0 {
		return []string{"", "", ""}
	}
	pts := make([]int, len(es))
	gpu := make([]float64, len(es))
	gaps := make([]float64, len(es))
	for i, e := range es {
		pts[i], gpu[i], gaps[i] = e.Points, e.GPUSec, e.Worst
	}
	gap := "—"
	if g := median(gaps); !math.IsInf(g, 1) {
		gap = fmt.Sprintf("+%.1f%%", 100*g)
	}
	return []string{fmt.Sprintf("%g", medianInts(pts)), fmt.Sprintf("%.1f", median(gpu)), gap}
}

// median is the median over every seed of the points to reach the
// threshold, a seed that never reached it counted as +Inf: a seed that
// stopped short would have needed more. The lowest and highest of the
// table are over the seeds that got there.
func (r Reach) median() float64 {
	v := make([]float64, r.Seeds)
	for i := range v {
		v[i] = math.Inf(1)
		if i < len(r.Points) {
			v[i] = float64(r.Points[i])
		}
	}
	return median(v)
}

// medianGPU is median's for the GPU seconds.
func (r Reach) medianGPU() float64 {
	v := make([]float64, r.Seeds)
	for i := range v {
		v[i] = math.Inf(1)
		if i < len(r.GPUSec) {
			v[i] = r.GPUSec[i]
		}
	}
	return median(v)
}

func medianInts(v []int) float64 {
	f := make([]float64, len(v))
	for i, x := range v {
		f[i] = float64(x)
	}
	return median(f)
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return sampleMedian(v)
}
