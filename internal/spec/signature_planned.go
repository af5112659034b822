package spec

import (
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/expr"
	"gopkg.in/yaml.v3"
)

var plannedKeys = []string{"per_seq", "prefix", "expand", "value", "length", "pad", "type"}

// plannedNodes keeps the nodes of a host-planned array's expressions.
type plannedNodes struct {
	count, value, length *yaml.Node
}

// planned decodes a variant's host-planned arrays: a mapping of name to
// one generator key (per_seq: EXPR, prefix: EXPR or expand: EXPR with
// value: EXPR), and optionally length (the entries, an expression over the
// shape and the defines), pad (the entries past the generated ones) and
// type (the entries' C type: i32, the default, i64, u8 or bool).
func (d *decoder) planned(n *yaml.Node, where string, e *engineNodes) []abi.Planned {
	var out []abi.Planned
	d.fields(n, where, nil, func(name string, kn, pv *yaml.Node) {
		k := where + "." + name
		if abi.BufferNamed(name) != nil || abi.ScalarNamed(name) != nil {
			d.errorf(kn, "%s: %s is a name of the vocabulary; a planned array needs one of its own", k, name)
		}
		p := abi.Planned{Name: name}
		var pn plannedNodes
		kinds := 0
		seen := d.fields(pv, k, plannedKeys, func(key string, _, v *yaml.Node) {
			switch key {
			case "value":
				p.Value, pn.value = d.str(v, k+".value"), v
			case "length":
				p.Length, pn.length = d.str(v, k+".length"), v
			case "pad":
				if x, ok := d.integer(v, k+".pad"); ok {
					p.Pad = int64(x)
				}
			case "type":
				t := d.str(v, k+".type")
				if e, ok := abi.ParsePlannedElem(t); ok {
					p.Elem = e
				} else {
					d.errorf(v, "%s.type: %q is not an entry type (%s)", k, t, abi.PlannedElemNames())
				}
			default:
				kind, _ := abi.ParsePlannedKind(key)
				p.Kind, p.Count, pn.count = kind, d.str(v, k+"."+key), v
				kinds++
			}
		})
		if pad := seen["pad"]; pad != nil {
			if lo, hi := p.EntryBounds(); p.Pad < lo || p.Pad > hi {
				d.errorf(pad, "%s.pad: %d does not fit a %s entry", k, p.Pad, p.EntryType())
			}
		}
		if deref(pv).Kind == yaml.MappingNode {
			switch {
			case kinds != 1:
				d.errorf(pv, "%s: a planned array has one generator (%s), got %d", k, abi.PlannedKindNames(), kinds)
			case p.Kind == abi.PlanExpand && (seen["value"] == nil || seen["length"] == nil):
				d.errorf(pv, "%s: expand needs value (each entry, over i, j and nkv) and length (the entries the array holds)", k)
			case p.Kind != abi.PlanExpand && seen["value"] != nil:
				d.errorf(seen["value"], "%s.value: only expand has a value per entry", k)
			}
		}
		out, e.planned = append(out, p), append(e.planned, pn)
	})
	return out
}

// plannedArgs checks that every planned:NAME argument names an array the
// variant declares, and that the variant declares no array it never passes.
func (d *decoder) plannedArgs(v *Variant, e *engineNodes, where string) {
	passed := map[string]bool{}
	for j, l := range v.Launches {
		for _, a := range l.Args {
			for _, leaf := range a.Leaves() {
				if !leaf.IsPlanned() {
					continue
				}
				passed[leaf.Name] = true
				if !slices.ContainsFunc(v.Planned, func(p abi.Planned) bool { return p.Name == leaf.Name }) {
					d.errorf(e.launch[j].args, "%s.launches[%d]: planned:%s is not declared under planned", where, j, leaf.Name)
				}
			}
		}
	}
	for _, p := range v.Planned {
		if !passed[p.Name] {
			d.errorf(e.plannedKey, "%s.planned.%s: no launch passes it (planned:%s)", where, p.Name, p.Name)
		}
	}
}

// plannedExprs checks the symbols of variant i's planned arrays: count
// and value read the sequence's i and nkv and the step's max_nkv (value
// also j) besides the shape's symbols, the defines and the device's SM
// count (PointSymbols); length only the latter, since the array's size is
// fixed for the step.
func (d *decoder) plannedExprs(s *Spec, i int, w *where) {
	v, e := &s.Variants[i], &w.variants[i].engine
	fixed := append(abi.ScalarNames(), PointSymbols...)
	perSeq := append([]string{abi.PlanSeq, abi.PlanNKV, abi.PlanMaxNKV}, fixed...)
	for k, p := range v.Planned {
		pn := e.planned[k]
		key := "planned." + p.Name
		if pn.count != nil {
			d.checkExprWith(s, i, p.Count, pn.count, key+"."+string(p.Kind), perSeq)
		}
		if pn.value != nil {
			d.checkExprWith(s, i, p.Value, pn.value, key+".value", append([]string{abi.PlanEntry}, perSeq...))
		}
		if pn.length != nil {
			if x, err := expr.Parse(p.Length); err == nil && slices.Contains(x.Symbols(), NKV) {
				d.errorf(pn.length, "variants[%d] (%s).%s.length: %q reads nkv: the array's size is fixed for the step", i, v.Name, key, p.Length)
				continue
			}
			d.checkExprWith(s, i, p.Length, pn.length, key+".length", fixed)
		}
	}
}
