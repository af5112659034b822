package plan

import (
	"fmt"
	"github.com/ktune/ktune/internal/spec"
	"io"
	"strconv"
	"strings"

	"github.com/ktune/ktune/internal/table"
)

// WriteTable prints the plan: one row per point, then the counts, the
// skipped combinations with their reasons and the warnings. HEAD_DIM and
// KV_F16 are left out of the defines column: the shape column says them.
func (p *Plan) WriteTable(w io.Writer) error {
	var t table.Table
	for _, c := range []struct {
		name  string
		right bool
	}{{"#", true}, {"variant", false}, {"shape", false}, {"defines", false}, {"nkv", true},
		{"grid", false}, {"block", false}, {"numerics", false}, {"landed", false}, {"hash", false}} {
		t.Col(c.name, c.right)
	}
	dims := func(d [3]int) string { return fmt.Sprintf("%d×%d×%d", d[0], d[1], d[2]) }
	for _, pt := range p.Points {
		c := &pt.Config
		numerics := "tolerance"
		if c.BitwiseWith != "" {
			numerics = "bitwise_with " + c.BitwiseWith
		}
		landed := ""
		if pt.Landed {
			landed = "yes"
		}
		ds := c.Defines.Own()
		variant := c.Variant
		if p.Spec != nil {
			if v := p.Spec.Variant(c.Variant); v != nil && len(v.Dispatch) > 0 {
				variant += " → " + c.Kernel // the arm this nkv dispatches to
			}
		}
		t.Add(strconv.Itoa(pt.Index), variant, c.Shape.Name, ds.String(), strconv.Itoa(c.NKV),
			dims(c.Grid), dims(c.Block), numerics, landed, pt.Hash[:8])
	}
	if err := t.Render(w, false); err != nil {
		return fmt.Errorf("writing the plan table: %w", err)
	}
	perVariant := map[string]int{}
	keys := map[string]bool{}
	for _, pt := range p.Points {
		perVariant[pt.Config.Variant]++
		keys[pt.GateKey] = true
	}
	var counts []string
	if p.Spec != nil {
		for _, v := range p.Spec.Variants {
			counts = append(counts, fmt.Sprintf("%s %d", v.Name, perVariant[v.Name]))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\npoints: %d (%s)\n", len(p.Points), strings.Join(counts, ", "))
	fmt.Fprintf(&b, "compiled kernels: %d (distinct gate keys: one compile and one set of gates each)\n", len(keys))
	if len(p.Skipped) > 0 {
		fmt.Fprintf(&b, "\nskipped combinations: %d\n", len(p.Skipped))
		for _, s := range p.Skipped {
			fmt.Fprintf(&b, "  %s at %s (%s): %s\n", s.Variant, s.Shape, s.Defines.String(), s.Reason)
		}
	}
	if p.Spec != nil && len(p.Spec.Restrictions) > 0 {
		b.WriteString("\n")
		b.WriteString(RestrictedText(p.Spec.Restrictions, p.Restricted))
	}
	if len(p.Warnings) > 0 {
		b.WriteString("\nwarnings:\n")
		for _, wn := range p.Warnings {
			fmt.Fprintf(&b, "  %s\n", wn)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing the plan table: %w", err)
	}
	return nil
}

// RestrictedText says what each restriction removed, a line each:
// restrict[0] "SPLITS*NR <= 256": 12 points removed.
func RestrictedText(rs []spec.Restriction, removed []int) string {
	var b strings.Builder
	for i, r := range rs {
		n := 0
		if i < len(removed) {
			n = removed[i]
		}
		fmt.Fprintf(&b, "restrict[%d] %q: %d points removed\n", i, r.Text, n)
	}
	return b.String()
}
