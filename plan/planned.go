package plan

import (
	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/spec"
)

// planned gives a point its variant's host-planned arrays with their
// entries at the point, and generates each once with every sequence at
// the capacity, the lengths that yield the most entries of a growing
// generator: an array too short for them, or a value its entry type
// cannot hold, is
// the plan's error rather than the probe's at the longest gate length.
func (b *builder) planned(v *spec.Variant, pt *Point) error {
	if len(v.Planned) == 0 {
		return nil
	}
	c := &pt.Config
	d := pt.Dims()
	env := d.Env(c.Defines)
	full := make([]int, c.Shape.Batch)
	for i := range full {
		full[i] = c.Shape.Capacity
	}
	pt.Planned = v.Planned
	pt.PlannedBufs = nil
	for i := range v.Planned {
		p := &v.Planned[i]
		buf, err := p.Buf(env)
		if err == nil {
			_, err = p.Generate(env, full)
		}
		if err != nil {
			return b.pointErrorf(v, &spec.Shape{Shape: c.Shape}, definesMap(c.Defines), c.NKV, "%w", err)
		}
		pt.PlannedBufs = append(pt.PlannedBufs, buf)
	}
	return nil
}

func definesMap(ds abi.Defines) map[string]string {
	m := map[string]string{}
	for _, d := range ds {
		m[d.Name] = d.Value
	}
	return m
}
