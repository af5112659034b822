package main

import (
	"fmt"
	"github.com/ktune/ktune/internal/spec"
	"io"
	"strings"

	"github.com/ktune/ktune/plan"
)

// writeCount prints a plan's size as plan --count shows it.
func writeCount(w io.Writer, c *plan.Count, rs []spec.Restriction) error {
	parts := make([]string, 0, len(c.Order))
	for _, v := range c.Order {
		parts = append(parts, fmt.Sprintf("%s %d", v, c.ByVariant[v]))
	}
	if c.Err != nil {
		return withCode(exitUsage, c.Err)
	}
	_, err := fmt.Fprintf(w, "points: %d (%s)\nskipped combinations: %d\n%s", c.Points, strings.Join(parts, ", "), c.Skipped,
		plan.RestrictedText(rs, c.Restricted))
	return err
}
