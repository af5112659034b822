package spec

import (
	"fmt"
	"math"
	"strconv"

	"gopkg.in/yaml.v3"
)

// A dispatch variant runs one of several kernels by context length, as an
// engine does on the host: each arm is its own compiled kernel with a
// static grid, and the engine switches between captured CUDA graphs at the
// thresholds. This file decodes and checks the construct; doc.go specifies
// it.

// armNodes keeps an arm's YAML nodes for validation messages.
type armNodes struct {
	node    *yaml.Node
	below   *yaml.Node // nil: the arm has no below (a catch-all)
	kernel  *yaml.Node
	defines map[string]*yaml.Node
	defKeys map[string]*yaml.Node
}

var armKeys = []string{"below", "kernel", "defines"}

// dispatch decodes a variant's dispatch list and checks the order of its
// thresholds. where names the list in messages ("variants[2].dispatch").
func (d *decoder) dispatch(n *yaml.Node, where string) ([]Arm, []*armNodes) {
	l, ok := d.list(n, where, false)
	if !ok {
		return nil, nil
	}
	if len(l) == 0 {
		d.errorf(n, "%s: empty list: a dispatch needs at least one arm, the last one without below", where)
		return nil, nil
	}
	arms := make([]Arm, 0, len(l))
	nodes := make([]*armNodes, 0, len(l))
	for j, e := range l {
		a, an := d.arm(e, fmt.Sprintf("%s[%d]", where, j))
		arms, nodes = append(arms, a), append(nodes, an)
	}
	d.armOrder(where, arms, nodes)
	return arms, nodes
}

func (d *decoder) arm(e *yaml.Node, where string) (Arm, *armNodes) {
	a := Arm{Pos: pos(e), Defines: map[string]string{}}
	an := &armNodes{node: e, defines: map[string]*yaml.Node{}, defKeys: map[string]*yaml.Node{}}
	seen := d.fields(e, where, armKeys, func(key string, _, val *yaml.Node) {
		k := where + "." + key
		switch key {
		case "below":
			an.below = val
			if x, ok := d.integer(val, k); ok {
				if x < 1 {
					d.errorf(val, "%s: want ≥ 1 (the arm serves nkv < below), got %d", k, x)
				}
				a.Below = x
			}
		case "kernel":
			a.Kernel, an.kernel = d.str(val, k), val
		case "defines":
			d.fields(val, k, nil, func(name string, kn, dv *yaml.Node) {
				dk := k + "." + name
				if !d.defineName(kn, dk) {
					return
				}
				if dv.Kind == yaml.SequenceNode {
					// An arm is one compiled kernel: a list here would make
					// the arms of one point disagree on what they sweep.
					d.errorf(dv, "%s: an arm's define is one value (each arm is one compiled kernel); sweep values in the variant's defines or the axes", dk)
					return
				}
				vals := d.defineValues(name, dk, dv, []*yaml.Node{dv})
				if len(vals) == 1 {
					a.DefineOrder = append(a.DefineOrder, name)
					a.Defines[name] = vals[0]
					an.defines[name], an.defKeys[name] = dv, kn
				}
			})
		}
	})
	if deref(e).Kind == yaml.MappingNode {
		d.require(e, where, seen, "kernel")
	}
	return a, an
}

// armOrder checks that thresholds strictly increase and that exactly the
// last arm has no below: the arms then partition the context lengths, so
// every nkv has exactly one kernel.
func (d *decoder) armOrder(where string, arms []Arm, nodes []*armNodes) {
	last := len(arms) - 1
	var catchAll []int
	for j, an := range nodes {
		if an.below == nil && deref(an.node).Kind == yaml.MappingNode {
			catchAll = append(catchAll, j)
		}
	}
	if an := nodes[last]; an.below != nil {
		d.errorf(an.below, "%s[%d]: no catch-all: the last arm serves every longer context and has no below (remove this below or add {kernel: NAME} after this arm)", where, last)
	}
	for _, j := range catchAll {
		if j == last {
			continue
		}
		other := -1
		for _, c := range catchAll {
			if c != j {
				other = c
				break
			}
		}
		if other >= 0 {
			d.errorf(nodes[j].node, "%s[%d]: catch-all repeated (the arm at line %d has no below either): only the last arm omits below", where, j, nodes[other].node.Line)
		} else {
			d.errorf(nodes[j].node, "%s[%d]: only the last arm may omit below (it is the catch-all): give this arm a below or move it to the end", where, j)
		}
	}
	prev := -1
	for j := range arms {
		if nodes[j].below == nil || arms[j].Below < 1 {
			continue
		}
		if prev >= 0 && arms[j].Below <= arms[prev].Below {
			d.errorf(nodes[j].below, "%s[%d].below: %d is not above the previous arm's %d (line %d): list arms by ascending below, each serving nkv from the previous below up to its own",
				where, j, arms[j].Below, arms[prev].Below, nodes[prev].below.Line)
		}
		prev = j
	}
}

// Arm returns the arm of a dispatch variant that serves context length
// nkv: the first whose Below exceeds nkv, else the catch-all. It returns
// nil for a single-kernel variant.
func (v *Variant) Arm(nkv int) *Arm {
	for i := range v.Dispatch {
		if a := &v.Dispatch[i]; a.Below == 0 || nkv < a.Below {
			return a
		}
	}
	return nil
}

// ArmRange describes the context lengths arm i of a dispatch variant
// serves, e.g. "nkv < 512", "512 ≤ nkv < 4096" or "nkv ≥ 4096".
func (v *Variant) ArmRange(i int) string {
	lo := 0
	if i > 0 {
		lo = v.Dispatch[i-1].Below
	}
	hi := v.Dispatch[i].Below
	switch {
	case lo <= 1 && hi == 0:
		return "every nkv"
	case lo <= 1:
		return "nkv < " + strconv.Itoa(hi)
	case hi == 0:
		return "nkv ≥ " + strconv.Itoa(lo)
	}
	return fmt.Sprintf("%d ≤ nkv < %d", lo, hi)
}

// ArmBounds returns the half-open range [lo, hi) of context lengths arm i
// serves; hi is math.MaxInt for the catch-all.
func (v *Variant) ArmBounds(i int) (lo, hi int) {
	if i > 0 {
		lo = v.Dispatch[i-1].Below
	}
	hi = v.Dispatch[i].Below
	if hi == 0 {
		hi = math.MaxInt
	}
	return lo, hi
}

// takes reports whether the arm's kernel receives the define: a user
// kernel takes every define, a built-in the ones it declares and SPLITS.
func (a *Arm) takes(name string) bool {
	if a.Builtin == nil || name == Splits {
		return true
	}
	_, ok := a.Builtin.Define(name)
	return ok
}

// sweeps reports whether the arm takes the define from the variant's axes:
// it takes it and does not fix it itself.
func (a *Arm) sweeps(name string) bool {
	_, fixed := a.Defines[name]
	return !fixed && a.takes(name)
}

// ArmDefines returns the defines arm a compiles with at one combination of
// its dispatch variant's axes (Spec.DefineAxes): the combination's values
// of the defines the arm takes and does not fix, the arm's own defines,
// for a built-in each declared define set nowhere at its default, and the
// shape's HEAD_DIM and KV_F16.
func (sh *Shape) ArmDefines(a *Arm, axes []Axis, vals []string) map[string]string {
	m := sh.Defines(nil, nil)
	for i, ax := range axes {
		if a.sweeps(ax.Name) {
			m[ax.Name] = vals[i]
		}
	}
	for name, val := range a.Defines {
		m[name] = val
	}
	if a.Builtin != nil {
		for _, def := range a.Builtin.Defines {
			if _, set := m[def.Name]; !set && def.Default != "" && !def.Unset {
				m[def.Name] = def.Default
			}
		}
	}
	return m
}

// dispatchAxes is DefineAxes for a dispatch variant: the global define
// axes that some arm sweeps, in file order (a variant-local define of the
// same name replaces the values), then the variant-local defines that are
// not global axes, in file order. Defines an arm fixes, and built-in
// defaults, are per arm (ArmDefines) and do not multiply the points.
func (s *Spec) dispatchAxes(v *Variant) []Axis {
	swept := func(name string) bool {
		for i := range v.Dispatch {
			if v.Dispatch[i].sweeps(name) {
				return true
			}
		}
		return false
	}
	var out []Axis
	set := map[string]bool{}
	for _, ax := range s.Axes {
		if ax.Name == NKV || !swept(ax.Name) {
			continue
		}
		if local, ok := v.Defines[ax.Name]; ok {
			ax = Axis{Name: ax.Name, Values: local, Pos: ax.Pos}
		}
		out = append(out, ax)
		set[ax.Name] = true
	}
	for _, name := range v.DefineOrder {
		if !set[name] && swept(name) {
			out = append(out, Axis{Name: name, Values: v.Defines[name], Pos: v.Pos})
			set[name] = true
		}
	}
	return out
}
