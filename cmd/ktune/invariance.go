package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

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
	if err := tuneWrite(dir, it.Fixed, createTemp); err != nil {
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
	return it.WritePrice(stdout, false)
}

// reportInvariance writes dir/invariance.md, the price of invariance,
// when the records hold both invariant and other configurations (passing
// their gates): per shape and nkv, the fastest invariant configuration
// and the invariant table's arm against the fastest overall. It says
// whether it wrote the file; a table that cannot be built (records of
// several devices) is a warning, not a failed report.
func reportInvariance(stderr io.Writer, recs []results.Record, dir string) (bool, error) {
	classed, other := 0, 0
	for i := range recs {
		r := &recs[i]
		if r.Status != results.StatusOK || !r.GatesPass() {
			continue
		}
		if _, ok := invarianceOf(r); ok {
			classed++
		} else {
			other++
		}
	}
	if classed == 0 || other == 0 {
		return false, nil
	}
	it, err := dispatch.BuildInvariant(recs, nil, dispatch.Options{}, invarianceOf)
	if err != nil {
		fmt.Fprintf(stderr, "ktune: warning: the price of invariance: %v\n", err)
		return false, nil
	}
	var b strings.Builder
	b.WriteString("# The price of invariance\n\n")
	b.WriteString("Per shape and measured nkv, the fastest configuration (cold probe, the dispatch table's rules) against the fastest whose output bits do not depend on the batch or the position in it (a built-in form's claim, variants.InvarianceClass, or a passing invariance gate), and against the arm of the invariant dispatch table, whose arms share one class per shape (`ktune tune --invariant` writes it). A claim by construction is checked on the device by the invariance gate (`invariant:` in a spec, experiments/invariance.yaml).\n\n")
	if err := it.WritePrice(&b, true); err != nil {
		return false, err
	}
	path := filepath.Join(dir, "invariance.md")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return false, fmt.Errorf("writing %s: %w", path, err)
	}
	return true, nil
}
