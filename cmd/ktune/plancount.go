package main

import (
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/ktune/ktune/internal/spec"
)

// A planCount is the size of a plan, per variant, counted from the spec
// alone: which define combinations each kernel accepts at each shape, times
// the context lengths. It evaluates no geometry, reads no kernel source and
// hashes nothing, so it answers in a moment for a sweep of a million
// points, where building the plan takes minutes and gigabytes.
type planCount struct {
	total     int
	byVariant map[string]int
	order     []string
	skipped   int // define combinations a kernel refuses (times shapes)
}

// countPlan counts the points the plan of s holds, by the plan's rules:
// a combination runs when the variant's kernel accepts it at the shape
// (and its bitwise twin accepts the twin's combination); a dispatch
// variant runs, at each nkv, the arm serving it, and combinations that
// differ only in defines the arm does not take are one point.
func countPlan(s *spec.Spec) *planCount {
	c := &planCount{byVariant: map[string]int{}}
	nkvs := s.NKVs()
	for i := range s.Shapes {
		sh := &s.Shapes[i]
		for j := range s.Variants {
			v := &s.Variants[j]
			if _, ok := c.byVariant[v.Name]; !ok {
				c.order = append(c.order, v.Name)
				c.byVariant[v.Name] = 0
			}
			axes := s.DefineAxes(v)
			if len(v.Dispatch) > 0 {
				seen := map[string]bool{}
				spec.Combinations(axes, func(vals []string) bool {
					for _, nkv := range nkvs {
						a := v.Arm(nkv)
						defs := sh.ArmDefines(a, axes, vals)
						if a.Builtin != nil && a.Builtin.Accepts(sh.Results(), defs) != nil {
							continue
						}
						if key := fmt.Sprint(a.Kernel, defineKey(defs), nkv); !seen[key] {
							seen[key] = true
							c.byVariant[v.Name]++
						}
					}
					return true
				})
				continue
			}
			spec.Combinations(axes, func(vals []string) bool {
				if accepts(s, v, sh, sh.Defines(axes, vals)) {
					c.byVariant[v.Name] += len(nkvs)
				} else {
					c.skipped++
				}
				return true
			})
		}
	}
	for _, n := range c.byVariant {
		c.total += n
	}
	return c
}

// accepts is the plan's rule for one combination of a single-kernel
// variant: its kernel runs it, and so does its bitwise twin at the twin's
// defines (each the candidate's value where it has the define, else the
// twin's first).
func accepts(s *spec.Spec, v *spec.Variant, sh *spec.Shape, defs map[string]string) bool {
	if v.Builtin != nil && v.Builtin.Accepts(sh.Results(), defs) != nil {
		return false
	}
	if v.BitwiseWith == "" {
		return true
	}
	tv := s.Variant(v.BitwiseWith)
	if tv == nil {
		return true
	}
	axes := s.DefineAxes(tv)
	vals := make([]string, len(axes))
	for i, ax := range axes {
		vals[i] = ax.Values[0]
		if val, ok := defs[ax.Name]; ok {
			vals[i] = val
		}
	}
	return accepts(s, tv, sh, sh.Defines(axes, vals))
}

func defineKey(defs map[string]string) string {
	parts := make([]string, 0, len(defs))
	for k, v := range defs {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (c *planCount) write(w io.Writer) error {
	parts := make([]string, 0, len(c.order))
	for _, v := range c.order {
		parts = append(parts, fmt.Sprintf("%s %d", v, c.byVariant[v]))
	}
	_, err := fmt.Fprintf(w, "points: %d (%s)\nskipped combinations: %d\n", c.total, strings.Join(parts, ", "), c.skipped)
	return err
}
