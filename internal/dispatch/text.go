package dispatch

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
)

// WriteText prints the table for a terminal: one row per measured nkv,
// grouped by shape and range, so that each choice shows its evidence.
// Warnings are not printed: they belong on the caller's error stream.
func (t *Table) WriteText(w io.Writer) error {
	header := []string{"shape", "nkv range", "configuration", "nkv", "median µs", "margin"}
	right := []bool{false, false, false, true, true, false}
	aligns := make([]tw.Align, len(header))
	for i, r := range right {
		aligns[i] = tw.AlignLeft
		if r {
			aligns[i] = tw.AlignRight
		}
	}
	// Headers keep their case ("µs", "nkv"); cells never wrap, so that a
	// margin stays on one greppable line.
	tbl := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
	)
	tbl.Header(header)
	for _, st := range t.Shapes {
		shape := shapeLabel(st.Shape)
		for _, r := range st.Ranges {
			rng := rangeLabel(r)
			cfg := configLabel(r)
			for _, p := range r.Picks {
				row := []string{shape, rng, cfg, strconv.Itoa(p.NKV),
					strconv.FormatFloat(p.MedianNS/1e3, 'f', 1, 64), p.Margin}
				if err := tbl.Append(row); err != nil {
					return fmt.Errorf("rendering dispatch table: %w", err)
				}
			}
		}
	}
	if err := tbl.Render(); err != nil {
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
