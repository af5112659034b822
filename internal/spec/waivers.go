package spec

import (
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/oracle"
	"gopkg.in/yaml.v3"
)

// Decisions about one input set of the gates. A kernel may be judged on
// an input set with bounds of its own (vLLM keeps its partial outputs in
// f16, so on subnormal V it loses what f16 cannot hold), or the set may
// not apply to it at all; either is the kernel owner's decision, so it
// carries a reason, and everything downstream states it: the point's
// hash, its record (waivers), the gates it loosened and the gate log.
//
//	gates:
//	  inputs:
//	    subnormal: {max_abs: 2e-6, nmse: 0.1, reason: "tmp_out is f16 (vLLM's choice)"}
//	    outliers: {skip: true, reason: "the engine clamps K upstream"}

// An InputWaiver is one such decision.
type InputWaiver struct {
	// Set names the input set (oracle.Sets).
	Set string
	// Bounds are the set's own bounds, used as written (not scaled by
	// the set's largest |V|); a zero field keeps the point's bound, as it
	// applies to the set.
	Bounds Bounds
	// Skip says the set does not apply to the kernel: it is not run.
	Skip bool
	// Reason is why, as the owner wrote it.
	Reason string
	Pos    Pos
}

var waiverKeys = []string{"max_abs", "max_rel", "nmse", "skip", "reason"}

// inputWaivers decodes gates.inputs.
func (d *decoder) inputWaivers(n *yaml.Node, where string) []InputWaiver {
	var out []InputWaiver
	d.fields(n, where, nil, func(set string, kn, v *yaml.Node) {
		k := where + "." + set
		if !slices.Contains(oracle.Sets, oracle.InputSet(set)) {
			var names []string
			for _, s := range oracle.Sets {
				names = append(names, string(s))
			}
			d.errorf(kn, "%s: no input set is named %s (the sets: %s)", k, set, strings.Join(names, ", "))
			return
		}
		w := InputWaiver{Set: set, Pos: pos(kn)}
		var skipNode *yaml.Node
		bounds := 0
		d.fields(v, k, waiverKeys, func(key string, _, bv *yaml.Node) {
			switch key {
			case "max_abs", "max_rel", "nmse":
				bounds++
				d.bound(bv, k+"."+key, map[string]*float64{"max_abs": &w.Bounds.MaxAbs, "max_rel": &w.Bounds.MaxRel, "nmse": &w.Bounds.NMSE}[key])
			case "skip":
				skipNode = bv
				if p, ok := d.scalar(bv, k+".skip"); ok && p != "true" {
					d.errorf(bv, "%s.skip: want true (the set does not apply to the kernel), got %q", k, p)
				}
				w.Skip = true
			case "reason":
				w.Reason = strings.TrimSpace(d.str(bv, k+".reason"))
			}
		})
		if deref(v).Kind != yaml.MappingNode {
			return
		}
		switch {
		case w.Reason == "":
			d.errorf(kn, "%s: a decision about an input set needs a reason (reason: why the kernel is judged otherwise on it)", k)
		case w.Skip && bounds > 0:
			d.errorf(skipNode, "%s: skip says the set does not apply; bounds of its own say how it is judged: give one or the other", k)
		case !w.Skip && bounds == 0:
			d.errorf(kn, "%s: give the set bounds of its own (max_abs, max_rel, nmse) or skip: true", k)
		case w.Skip && set == string(oracle.SetUniform):
			d.errorf(skipNode, "%s: the uniform set cannot be skipped: it carries the determinism, stale-rows and fresh-module gates", k)
		}
		out = append(out, w)
	})
	return out
}

// StaleRows is what a spec declares its engine's cache holds in the rows
// past each sequence's length (gates.stale.rows).
type StaleRows string

// StaleFinite declares that the engine's cache holds finite values past
// each length, never NaN or Inf (llama.cpp clears its KV buffers at
// allocation, and a cell past the length holds zeros or an earlier
// finite row): the stale gate then writes finite values there only, and
// still requires outputs identical to the bit.
const StaleFinite StaleRows = "finite"

// staleRowsKinds are the values gates.stale.rows takes.
var staleRowsKinds = []StaleRows{StaleFinite}

// A StaleDecision is the kernel owner's declaration about the rows past
// each length (gates.stale), with its reason. Without one the stale gate
// writes NaN, ±Inf and ±the largest finite value there.
//
//	gates:
//	  stale: {rows: finite, reason: "the cache is cleared at allocation; cells past the length hold finite rows"}
type StaleDecision struct {
	Rows   StaleRows
	Reason string
	Pos    Pos
}

var staleKeys = []string{"rows", "reason"}

// staleDecision decodes gates.stale.
func (d *decoder) staleDecision(kn, n *yaml.Node, where string) *StaleDecision {
	s := &StaleDecision{Pos: pos(kn)}
	seen := d.fields(n, where, staleKeys, func(key string, _, v *yaml.Node) {
		switch key {
		case "rows":
			r, ok := d.scalar(v, where+".rows")
			if !ok {
				return
			}
			if !slices.Contains(staleRowsKinds, StaleRows(r)) {
				var names []string
				for _, k := range staleRowsKinds {
					names = append(names, string(k))
				}
				d.errorf(v, "%s.rows: unknown value %q (known: %s; without gates.stale the rows past each length hold NaN and Inf too)", where, r, strings.Join(names, ", "))
				return
			}
			s.Rows = StaleRows(r)
		case "reason":
			s.Reason = strings.TrimSpace(d.str(v, where+".reason"))
		}
	})
	if deref(n).Kind != yaml.MappingNode {
		return nil
	}
	d.require(n, where, seen, "rows")
	if s.Reason == "" {
		d.errorf(kn, "%s: a declaration about the rows past each length needs a reason (reason: why the engine's cache never holds NaN or Inf there)", where)
	}
	return s
}
