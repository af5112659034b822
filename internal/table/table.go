// Package table renders ktune's tables: a header, an alignment per
// column and rows of cells, drawn by tablewriter for a terminal or as
// Markdown. Every printed table (the plan, the report's, compare's and
// gate's, the dispatch table) goes through it, so they read alike: headers
// keep their case ("µs" and "SPLITS" mean something, and tablewriter
// upper-cases by default), numbers align right, and cells never wrap, so
// that a row stays one greppable line.
package table

import (
	"fmt"
	"io"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// A Table is a table before rendering.
type Table struct {
	Header []string
	Right  []bool // right-align the column (numbers)
	Rows   [][]string
}

// Col adds a column.
func (t *Table) Col(name string, right bool) {
	t.Header = append(t.Header, name)
	t.Right = append(t.Right, right)
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Render writes the table to w, as Markdown when markdown is set.
func (t *Table) Render(w io.Writer, markdown bool) error {
	aligns := make([]tw.Align, len(t.Header))
	for i := range aligns {
		aligns[i] = tw.AlignLeft
		if i < len(t.Right) && t.Right[i] {
			aligns[i] = tw.AlignRight
		}
	}
	opts := []tablewriter.Option{
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
		tablewriter.WithHeaderAlignmentConfig(tw.CellAlignment{PerColumn: aligns}),
	}
	if markdown {
		opts = append(opts, tablewriter.WithRenderer(renderer.NewMarkdown()))
	}
	tw := tablewriter.NewTable(w, opts...)
	tw.Header(t.Header)
	for _, r := range t.Rows {
		if err := tw.Append(r); err != nil {
			return fmt.Errorf("rendering table: %w", err)
		}
	}
	if err := tw.Render(); err != nil {
		return fmt.Errorf("rendering table: %w", err)
	}
	return nil
}

// US renders a duration in ns as µs with three significant figures or
// more: kernel times span 5 µs to 2 ms and a fixed number of decimals
// would either hide differences or print noise.
func US(ns float64) string {
	us := ns / 1000
	// The bounds sit half a unit of the next format's last digit below
	// 100 and 10, so that 9.9999 prints as 10.00, not 10.000.
	switch {
	case us >= 99.95:
		return fmt.Sprintf("%.1f", us)
	case us >= 9.995:
		return fmt.Sprintf("%.2f", us)
	default:
		return fmt.Sprintf("%.3f", us)
	}
}
