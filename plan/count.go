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
}

// CountPoints counts the points and skips Build would make of s.
func CountPoints(s *spec.Spec) *Count {
	b := &builder{s: s, arms: map[*spec.Arm]*spec.Variant{}}
	c := &Count{ByVariant: map[string]int{}}
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
					if b.refuse(v, sh, sh.Defines(axes, vals)) != "" {
						c.Skipped++
					} else {
						c.ByVariant[v.Name] += len(nkvs)
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
						c.ByVariant[v.Name]++
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
