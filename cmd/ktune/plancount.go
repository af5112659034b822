package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/ktune/ktune/plan"
)

// writeCount prints a plan's size as plan --count shows it.
func writeCount(w io.Writer, c *plan.Count) error {
	parts := make([]string, 0, len(c.Order))
	for _, v := range c.Order {
		parts = append(parts, fmt.Sprintf("%s %d", v, c.ByVariant[v]))
	}
	_, err := fmt.Fprintf(w, "points: %d (%s)\nskipped combinations: %d\n", c.Points, strings.Join(parts, ", "), c.Skipped)
	return err
}
