package main

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ktune/ktune/internal/dispatch"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/variants"
)

// invarianceOf classes a record's configuration for the price of
// invariance (dispatch.Invariance): a built-in form's claim
// (variants.InvarianceClass), else a passing invariance gate that checked
// both the batch and the position, which makes the configuration
// invariant alone (its own class: no other configuration is known to
// give its bits).
func invarianceOf(r *results.Record) (string, bool) {
	defs := map[string]string{}
	for _, d := range r.Config.Defines {
		defs[d.Name] = d.Value
	}
	if c, ok := variants.InvarianceClass(r.Config.Kernel, defs); ok {
		return c, true
	}
	for _, g := range r.Gates {
		if in := g.InvariantIn(); slices.Contains(in, "batch") && slices.Contains(in, "position") {
			return "gated " + r.Config.Kernel + " " + r.Config.Defines.Sorted().String(), true
		}
	}
	return "", false
}

// tuneInvariant exports the table whose arms are invariant with one
// another into dir and prints it, with the price of invariance against
// the unconstrained table.
func tuneInvariant(stdout, stderr io.Writer, files []string, opt dispatch.Options, dir string) error {
	recs, sources, err := tuneRecords(stderr, files, &opt)
	if err != nil {
		return err
	}
	it, err := dispatch.BuildInvariant(recs, sources, opt, invarianceOf)
	if err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	if it.Fixed == nil {
		return errors.New("tune: --invariant: no configuration among the records is invariant (a built-in form that claims it, or a passing invariance gate on batch and position): no table written")
	}
	for _, w := range append(it.Free.Warnings, it.Fixed.Warnings...) {
		fmt.Fprintf(stderr, "ktune: warning: %s\n", w)
	}
	if err := tuneWrite(dir, it.Fixed); err != nil {
		return fmt.Errorf("tune: %w", err)
	}
	if err := it.Fixed.WriteText(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	labels := make([]string, 0, len(it.Class))
	for l := range it.Class {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	fmt.Fprintln(stdout, "Each shape's arms share one class (configurations whose output bits are equal):")
	for _, l := range labels {
		fmt.Fprintf(stdout, "  %s: %s\n", l, it.Class[l])
	}
	fmt.Fprintln(stdout)
	fmt.Fprintln(stdout, "The price of invariance:")
	return it.WritePrice(stdout)
}
