package dispatch

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/table"
)

// WriteText prints the table for a terminal: one row per measured nkv,
// grouped by shape and range, so that each choice shows its evidence.
// Warnings are not printed: they belong on the caller's error stream.
func (t *Table) WriteText(w io.Writer) error {
	tbl := table.Table{
		Header: []string{"shape", "nkv range", "configuration", "nkv", "median µs", "margin"},
		Right:  []bool{false, false, false, true, true, false},
	}
	for _, st := range t.Shapes {
		shape := shapeLabel(st.key())
		for _, r := range st.Ranges {
			rng := rangeLabel(r)
			cfg := configLabel(r)
			for _, p := range r.Picks {
				med := "-" // not measured here (RuleUnmeasured)
				if p.MedianNS > 0 {
					med = strconv.FormatFloat(p.MedianNS/1e3, 'f', 1, 64)
				}
				row := []string{shape, rng, cfg, strconv.Itoa(p.NKV), med, p.Margin}
				tbl.Add(row...)
			}
		}
	}
	if err := tbl.Render(w, false); err != nil {
		return fmt.Errorf("rendering dispatch table: %w", err)
	}
	return nil
}

func rangeLabel(r Range) string {
	if r.MaxNKV == 0 {
		return fmt.Sprintf("[%d, ∞)", r.MinNKV)
	}
	return fmt.Sprintf("[%d, %d)", r.MinNKV, r.MaxNKV)
}

func configLabel(r Range) string {
	parts := []string{r.Variant}
	for _, d := range r.Defines {
		parts = append(parts, d.Name+"="+d.Value)
	}
	return strings.Join(parts, " ")
}
