package search

import (
	"fmt"
	"io"
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
// GPU seconds until the table came within the threshold, their spread
// (the lowest and highest seed), how many seeds got there, and how many
// times fewer points than random search's median that is.
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
		fmt.Fprintln(tw, "strategy\twithin\tpoints median\t[min–max]\tGPU s median\t[min–max]\treached\tvs random")
		randomMedian := map[float64]float64{}
		for _, r := range sp.Results {
			if r.Strategy == "random" {
				for _, re := range r.Reached {
					if len(re.Points) == re.Seeds {
						randomMedian[re.Within] = medianInts(re.Points)
					}
				}
			}
		}
		for _, r := range sp.Results {
			for _, re := range r.Reached {
				row := []string{string(r.Strategy), fmt.Sprintf("%g%%", 100*re.Within)}
				if len(re.Points) == 0 {
					row = append(row, "—", "", "—", "")
				} else {
					pts := medianInts(re.Points)
					row = append(row, fmt.Sprintf("%g", pts), fmt.Sprintf("[%d–%d]", slices.Min(re.Points), slices.Max(re.Points)),
						fmt.Sprintf("%.1f", median(re.GPUSec)), fmt.Sprintf("[%.1f–%.1f]", slices.Min(re.GPUSec), slices.Max(re.GPUSec)))
				}
				row = append(row, fmt.Sprintf("%d/%d", len(re.Points), re.Seeds))
				// A median over seeds that did not all get there is not
				// comparable: a seed that never reached it took more.
				if rm, ok := randomMedian[re.Within]; ok && len(re.Points) == re.Seeds {
					row = append(row, fmt.Sprintf("%.2f×", rm/medianInts(re.Points)))
				} else {
					row = append(row, "—")
				}
				fmt.Fprintln(tw, strings.Join(row, "\t"))
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	return nil
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
