package search

import (
	"math"
	"slices"
	"strconv"

	"github.com/ktune/ktune/plan"
)

// features maps each point of a space to a vector in [0,1]^d: what the
// surrogate model learns a kernel's time from. Every column is known
// before the point is timed: the axes (nkv, the shape, the variant and
// kernel, each define), the launch geometry the plan computed, and, when
// every point of the space was compiled first, what compiling told
// (registers, local memory, shared memory, occupancy). Numeric values
// enter as logarithms (times scale with sizes, not with their
// differences), names as one column each; constant columns are dropped.
//
// shared marks the columns that describe the configuration, every one but
// nkv's: the process's second kernel (gp.go) runs over them.
func features(points []*plan.Point, facts map[string]Facts, useFacts bool) (x [][]float64, shared []bool) {
	var cols []func(p *plan.Point) float64
	add := func(f func(p *plan.Point) float64) { cols = append(cols, f) }
	log2 := func(v float64) float64 { return math.Log2(1 + max(v, 0)) }

	add(func(p *plan.Point) float64 { return log2(float64(p.Config.NKV)) }) // column 0: nkv
	add(func(p *plan.Point) float64 { return log2(float64(p.Config.Shape.Heads)) })
	add(func(p *plan.Point) float64 { return log2(float64(p.Config.Shape.KVHeads)) })
	add(func(p *plan.Point) float64 { return log2(float64(p.Config.Shape.HeadDim)) })
	add(func(p *plan.Point) float64 { return log2(float64(p.Config.Shape.Batch)) })
	for _, name := range distinct(points, func(p *plan.Point) string { return string(p.Config.Shape.KVDtype) }) {
		add(func(p *plan.Point) float64 { return oneIf(string(p.Config.Shape.KVDtype) == name) })
	}
	for _, name := range distinct(points, func(p *plan.Point) string { return p.Config.Variant }) {
		add(func(p *plan.Point) float64 { return oneIf(p.Config.Variant == name) })
	}
	for _, name := range distinct(points, func(p *plan.Point) string { return p.Config.Kernel }) {
		add(func(p *plan.Point) float64 { return oneIf(p.Config.Kernel == name) })
	}
	var defines []string
	for _, p := range points {
		for _, d := range p.Config.Defines {
			if !slices.Contains(defines, d.Name) {
				defines = append(defines, d.Name)
			}
		}
	}
	slices.Sort(defines)
	for _, name := range defines {
		numeric := true
		values := distinct(points, func(p *plan.Point) string { v, _ := p.Config.Define(name); return v })
		for _, v := range values {
			if _, err := strconv.ParseFloat(v, 64); err != nil && v != "" {
				numeric = false
			}
		}
		if numeric {
			add(func(p *plan.Point) float64 {
				v, _ := p.Config.Define(name)
				f, _ := strconv.ParseFloat(v, 64)
				return log2(f)
			})
			// A define some points lack is not the same as its zero.
			add(func(p *plan.Point) float64 { _, ok := p.Config.Define(name); return oneIf(ok) })
			continue
		}
		for _, val := range values {
			add(func(p *plan.Point) float64 { v, _ := p.Config.Define(name); return oneIf(v == val) })
		}
	}
	add(func(p *plan.Point) float64 {
		g := p.Config.Grid
		return log2(float64(max(g[0], 1) * max(g[1], 1) * max(g[2], 1)))
	})
	add(func(p *plan.Point) float64 {
		b := p.Config.Block
		return log2(float64(max(b[0], 1) * max(b[1], 1) * max(b[2], 1)))
	})
	if useFacts && allKnown(points, facts) {
		res := func(p *plan.Point, f func(r resourceFacts) float64) float64 {
			return f(summarise(facts[p.Hash]))
		}
		add(func(p *plan.Point) float64 {
			return res(p, func(r resourceFacts) float64 { return float64(r.registers) })
		})
		add(func(p *plan.Point) float64 {
			return res(p, func(r resourceFacts) float64 { return log2(float64(r.local)) })
		})
		add(func(p *plan.Point) float64 {
			return res(p, func(r resourceFacts) float64 { return log2(float64(r.shared)) })
		})
		add(func(p *plan.Point) float64 { return res(p, func(r resourceFacts) float64 { return r.occupancy }) })
	}

	x = make([][]float64, len(points))
	for i := range x {
		x[i] = make([]float64, 0, len(cols))
	}
	for c, col := range cols {
		lo, hi := math.Inf(1), math.Inf(-1)
		vals := make([]float64, len(points))
		for i, p := range points {
			vals[i] = col(p)
			lo, hi = min(lo, vals[i]), max(hi, vals[i])
		}
		if !(hi > lo) {
			continue
		}
		for i := range x {
			x[i] = append(x[i], (vals[i]-lo)/(hi-lo))
		}
		shared = append(shared, c != 0)
	}
	return x, shared
}

// resourceFacts sums up a point's compiled entry points: the most
// registers and local memory any uses, the most shared memory, the
// lowest occupancy.
type resourceFacts struct {
	registers, local, shared int
	occupancy                float64
}

func summarise(f Facts) resourceFacts {
	r := resourceFacts{occupancy: 1}
	for _, e := range f.Resources {
		r.registers = max(r.registers, e.Registers)
		r.local = max(r.local, e.LocalBytes)
		r.shared = max(r.shared, e.StaticShared+e.DynamicShared)
		r.occupancy = min(r.occupancy, e.Occupancy)
	}
	return r
}

func allKnown(points []*plan.Point, facts map[string]Facts) bool {
	for _, p := range points {
		if _, ok := facts[p.Hash]; !ok {
			return false
		}
	}
	return len(points) > 0
}

func distinct(points []*plan.Point, key func(*plan.Point) string) []string {
	var out []string
	for _, p := range points {
		if k := key(p); !slices.Contains(out, k) {
			out = append(out, k)
		}
	}
	return out
}

func oneIf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
