package plan

import (
	"github.com/ktune/ktune/internal/spec"
)

// A Count is the size of a spec's plan, counted by the builder's own rules
// (refuse, the dispatch arms, one point per identity) without building a
// point: it evaluates no geometry, reads no kernel source and hashes
// nothing, so it answers in a moment for a sweep of a million points,
// where building the plan takes minutes and gigabytes.
type Count struct {
	Points    int
	ByVariant map[string]int
	Order     []string // the variants in spec order
	Skipped   int      // what Plan.Skipped would hold
	// Restricted is what Plan.Restricted would hold; an evaluation error
	// (a division by zero in a restriction) stops the count there.
	Restricted []int
	Err        error
}

// CountPoints counts the points and skips Build would make of s.
func CountPoints(s *spec.Spec) *Count {
	b := &builder{s: s, arms: map[*spec.Arm]*spec.Variant{}}
	c := &Count{ByVariant: map[string]int{}, Restricted: make([]int, len(s.Restrictions))}
	// kept counts a point unless a restriction removes it.
	kept := func(sh *spec.Shape, defs map[string]string, nkv int) bool {
		if c.Err != nil {
			return false
		}
		r, err := b.restricted(sh, defs, nkv)
		switch {
		case err != nil:
			c.Err = err
			return false
		case r >= 0:
			c.Restricted[r]++
			return false
		}
		return true
	}
	nkvs := s.NKVs()
	for _, v := range s.Variants {
		c.Order = append(c.Order, v.Name)
		c.ByVariant[v.Name] = 0
	}
	for i := range s.Shapes {
		sh := &s.Shapes[i]
		for j := range s.Variants {
			v := &s.Variants[j]
			axes := s.DefineAxes(v)
			if len(v.Dispatch) == 0 {
				spec.Combinations(axes, func(vals []string) bool {
					defs := sh.Defines(axes, vals)
					if b.refuse(v, sh, defs) != "" {
						c.Skipped++
						return true
					}
					for _, nkv := range nkvs {
						if kept(sh, defs, nkv) {
							c.ByVariant[v.Name]++
						}
					}
					return true
				})
				continue
			}
			seen, skipped := map[string]bool{}, map[string]bool{}
			spec.Combinations(axes, func(vals []string) bool {
				for _, nkv := range nkvs {
					a := v.Arm(nkv)
					av := b.armVariant(v, a)
					defs := sh.ArmDefines(a, axes, vals)
					if b.refuse(av, sh, defs) != "" {
						if key := a.Kernel + "\x00" + sorted(defs, false).String(); !skipped[key] {
							skipped[key] = true
							c.Skipped++
						}
						continue
					}
					if id := pointID(av, sh, sorted(defs, true), nkv); !seen[id] {
						seen[id] = true
						if kept(sh, defs, nkv) {
							c.ByVariant[v.Name]++
						}
					}
				}
				return true
			})
		}
	}
	for _, n := range c.ByVariant {
		c.Points += n
	}
	return c
}
