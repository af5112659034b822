package spec

import (
	"slices"

	"gopkg.in/yaml.v3"
)

// An Invariance is one context a sequence's output bits must not depend
// on (the variant key invariant; doc.go, "Invariance"): what else is in
// the batch and how many sequences, where in the batch the sequence sits,
// and which dispatch arm serves it.
type Invariance string

const (
	// InvariantBatch: the same bits alone at batch 1 and inside batches
	// of other sizes, among other sequences of other lengths.
	InvariantBatch Invariance = "batch"
	// InvariantPosition: the same bits at every position of the batch.
	InvariantPosition Invariance = "position"
	// InvariantArm: the same bits under every arm of the variant's
	// dispatch that could serve the sequence.
	InvariantArm Invariance = "arm"
)

// Invariances are the values of the invariant key, in the order the gate
// runs them.
var Invariances = []Invariance{InvariantBatch, InvariantPosition, InvariantArm}

// invariant decodes a variant's invariant list: each value once, arm
// only for a dispatch variant (checked in variant, which knows).
func (d *decoder) invariant(n *yaml.Node, k string) []Invariance {
	l, ok := d.list(n, k, true)
	if !ok {
		return nil
	}
	var out []Invariance
	for _, e := range l {
		s, ok := d.scalar(e, k)
		if !ok {
			continue
		}
		iv := Invariance(s)
		switch {
		case !slices.Contains(Invariances, iv):
			d.errorf(e, "%s: want batch, position or arm (what a sequence's output bits must not depend on), got %q", k, s)
		case slices.Contains(out, iv):
			d.errorf(e, "%s: %s is listed twice", k, s)
		default:
			out = append(out, iv)
		}
	}
	if len(l) == 0 {
		d.errorf(n, "%s: empty list: name at least one of batch, position, arm", k)
	}
	return out
}
