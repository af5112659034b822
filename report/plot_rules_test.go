package report

import (
	"strings"
	"testing"
)

func TestLinearTicks(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		lo, hi float64
		want   string
	}{
		{6.9, 9.6, "7.0 7.5 8.0 8.5 9.0 9.5"},
		{920, 1060, "925 950 975 1000 1025 1050"},
		{0.31, 0.44, "0.325 0.350 0.375 0.400 0.425"},
		{60, 180, "60 80 100 120 140 160 180"},
		{0, 25, "0 5 10 15 20 25"},
	} {
		var got []string
		for _, tk := range (linearTicks{}).Ticks(c.lo, c.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != c.want {
			t.Errorf("[%g, %g]: labels %q, want %q", c.lo, c.hi, strings.Join(got, " "), c.want)
		}
	}
}

// Of six tunings of one kernel and two others, the panel draws the best
// of each family first, then the next best, five in all.
func TestPickSeriesBestPerFamily(t *testing.T) {
	t.Parallel()
	var rows []Row
	names := []string{"mma-a", "mma-b", "mma-c", "mma-d", "mma-e", "mma-f", "d2", "hybrid"}
	for _, n := range names {
		k := "mma"
		if !strings.HasPrefix(n, "mma") {
			k = n
		}
		rows = append(rows, Row{Variant: n, Kernel: k})
	}
	chosen, faint := pickSeries(rows, names)
	if strings.Join(chosen, " ") != "mma-a d2 hybrid mma-b mma-c" || strings.Join(faint, " ") != "mma-d mma-e mma-f" {
		t.Errorf("chosen %q, faint %q", chosen, faint)
	}
}
