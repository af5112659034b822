package spec

import (
	"fmt"

	"github.com/ktune/ktune/internal/catalog"
	"gopkg.in/yaml.v3"
)

// dispatchKeys reports the keys a dispatch variant cannot have beside
// dispatch.
func (d *decoder) dispatchKeys(where string, seen map[string]*yaml.Node) {
	if k, ok := seen["kernel"]; ok {
		d.errorf(k, "%s: kernel and dispatch both given: a variant runs one kernel, or dispatches between kernels by nkv; remove one", where)
	}
	for _, key := range []string{"grid", "block", "shared", "cluster"} {
		if k, ok := seen[key]; ok {
			d.errorf(k, "%s: %s with dispatch: each arm launches with its own kernel's geometry", where, key)
		}
	}
}

// armKernels resolves the kernels of dispatch variant i and checks the
// arms' own defines and the variant's defines against them.
func (d *decoder) armKernels(s *Spec, i int, w *where, kernels catalog.Set) {
	v, vn := &s.Variants[i], w.variants[i]
	for j := range v.Dispatch {
		a, an := &v.Dispatch[j], vn.arms[j]
		where := fmt.Sprintf("variants[%d] (%s).dispatch[%d]", i, v.Name, j)
		d.resolve(s, &a.KernelRef, an.kernel, where, kernels, a.DefineOrder, an.defKeys,
			func(name string) ([]string, []*yaml.Node) {
				return []string{a.Defines[name]}, []*yaml.Node{an.defines[name]}
			})
	}
	if len(d.errs) > 0 {
		return
	}
	// The variant's own defines apply to every arm that takes them and
	// does not fix them; one that reaches no arm is a mistake.
	where := fmt.Sprintf("variants[%d] (%s)", i, v.Name)
	for _, name := range v.DefineOrder {
		reached := false
		for j := range v.Dispatch {
			a := &v.Dispatch[j]
			if !a.sweeps(name) {
				continue
			}
			reached = true
			if a.Builtin == nil {
				continue
			}
			def, ok := a.Builtin.Define(name)
			if !ok {
				continue // SPLITS on a built-in that does not declare it
			}
			for n, val := range v.Defines[name] {
				if err := def.CheckValue(val); err != nil {
					d.errorf(vn.defines[name][n], "%s: arm %d, kernel %s: %v", where, j, a.Builtin.Name, err)
				}
			}
		}
		if !reached {
			d.errorf(vn.defKeys[name], "%s: no arm takes define %s without fixing it in its own defines", where, name)
		}
	}
}

// armCoverage checks that every arm of dispatch variant i has a value for
// SPLITS and for each define its built-in declares without a default. has
// reports whether the variant's axes (DefineAxes) sweep a define.
func (d *decoder) armCoverage(s *Spec, i int, w *where, has func(string) bool) {
	v, vn := &s.Variants[i], w.variants[i]
	for j := range v.Dispatch {
		a, an := &v.Dispatch[j], vn.arms[j]
		where := fmt.Sprintf("variants[%d] (%s).dispatch[%d] (%s)", i, v.Name, j, a.Kernel)
		set := func(name string) bool {
			_, fixed := a.Defines[name]
			return fixed || (a.takes(name) && has(name))
		}
		if !set(Splits) {
			d.errorf(an.node, "%s: no value for SPLITS: add an axis SPLITS, defines: {SPLITS: …} to the variant or to the arm", where)
		}
		if a.Builtin == nil {
			continue
		}
		for _, def := range a.Builtin.Defines {
			if def.Default == "" && !set(def.Name) {
				d.errorf(an.node, "%s: kernel %s needs a value for %s (%s): add it to the axes, the variant's or the arm's defines", where, a.Builtin.Name, def.Name, def.Doc)
			}
		}
	}
}

// armRunnable refuses a dispatch variant with a built-in arm that can run
// no combination of the sweep at any shape.
func (d *decoder) armRunnable(s *Spec, i int, w *where) {
	v := &s.Variants[i]
	axes := s.DefineAxes(v)
	for j := range v.Dispatch {
		a := &v.Dispatch[j]
		if a.Builtin == nil {
			continue
		}
		ok, first := runnable(a.Builtin, s.Shapes, axes, func(sh *Shape, vals []string) map[string]string { return sh.ArmDefines(a, axes, vals) })
		if !ok {
			d.errorf(w.variants[i].arms[j].kernel, "variants[%d] (%s).dispatch[%d]: kernel %s cannot run any point of this sweep: %v", i, v.Name, j, a.Builtin.Name, first)
		}
	}
}
