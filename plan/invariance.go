package plan

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/spec"
)

// An Invariance is what a point's invariance gate runs (the variant's
// invariant key; probe/gate/invariance.go): the contexts a probe sequence is
// placed in, as points of their own whose launches the plan resolved.
type Invariance struct {
	// Kinds are the contexts the spec asked for, in spec.Invariances'
	// order.
	Kinds []spec.Invariance
	// Batches are the point's kernel at the other batch sizes the gate
	// runs (batch 1, and half the shape's batch from batch 4 on), each at
	// its own shape: the shape with that batch. The workspace is the
	// point's, so a batch above the shape's is never run.
	Batches []*Point `json:",omitempty"`
	// Arms are the other arms of the point's dispatch variant at the
	// point's shape and nkv (each arm may serve the sequence, as the
	// step's longest sequence picks the arm); ArmNames their kernels
	// and ranges, for messages. A refused arm is left out and named in
	// Refused.
	Arms     []*Point `json:",omitempty"`
	ArmNames []string `json:",omitempty"`
	Refused  []string `json:",omitempty"`
}

// String is what the gate suite records of the invariance gate: the
// kinds, the batch sizes and the arms' gate keys (what they compile).
func (iv *Invariance) String() string {
	var kinds []string
	for _, k := range iv.Kinds {
		kinds = append(kinds, string(k))
	}
	var ctx []string
	for _, p := range iv.Batches {
		ctx = append(ctx, fmt.Sprintf("batch %d", p.Config.Shape.Batch))
	}
	for _, p := range iv.Arms {
		ctx = append(ctx, "arm "+p.GateKey)
	}
	return strings.Join(kinds, ",") + " (" + strings.Join(ctx, ", ") + ")"
}

// Has reports whether the gate checks kind k.
func (iv *Invariance) Has(k spec.Invariance) bool { return iv != nil && slices.Contains(iv.Kinds, k) }

// Positions reports whether the gate runs the probe sequence at every
// position of the shape's batch (position), and Compositions whether in
// seeded batches of other sequences (batch): the probe's questions, so
// that it reads the spec's vocabulary through the plan.
func (iv *Invariance) Positions() bool    { return iv.Has(spec.InvariantPosition) }
func (iv *Invariance) Compositions() bool { return iv.Has(spec.InvariantBatch) }

// invarianceBatches are the batch sizes other than the shape's batch
// that the gate runs a probe sequence in: alone, and half the batch.
func invarianceBatches(batch int) []int {
	out := []int{1}
	if h := batch / 2; batch >= 4 && h != 1 {
		out = append(out, h)
	}
	return out
}

// invariance attaches the invariance gate's contexts to pt, a point of
// variant v (of dispatch parent, its arms' variant, when parent is set)
// at shape sh with defines defs (before PDL and cluster defines), when
// the variant asks for one. armDefs gives each arm's defines at the same
// combination.
func (b *builder) invariance(v, parent *spec.Variant, sh *spec.Shape, defs map[string]string, nkv int, pt *Point,
	armDefs func(a *spec.Arm) map[string]string) error {
	asked := v.Invariant
	if parent != nil {
		asked = parent.Invariant
	}
	if len(asked) == 0 || pt.Invariance != nil {
		return nil
	}
	iv := &Invariance{}
	for _, k := range spec.Invariances {
		if slices.Contains(asked, k) {
			iv.Kinds = append(iv.Kinds, k)
		}
	}
	owner := v
	if parent != nil {
		owner = parent
	}
	if (iv.Has(spec.InvariantBatch) || iv.Has(spec.InvariantPosition)) && sh.Batch < 2 {
		return fmt.Errorf("%s:%d:%d: variant %s: invariant: %s needs a shape of batch 2 or more, and shape %s has batch %d: a sequence alone has no batch to differ from",
			b.s.Path, owner.Pos.Line, owner.Pos.Col, owner.Name, iv.Kinds[0], sh.Name, sh.Batch)
	}
	if iv.Has(spec.InvariantBatch) {
		for _, n := range invarianceBatches(sh.Batch) {
			s2 := *sh
			s2.Batch = n
			s2.Name = fmt.Sprintf("%s/batch%d", sh.Name, n)
			p, err := b.point(v, &s2, defs, nkv)
			if err != nil {
				return fmt.Errorf("the invariance gate's batch %d context: %w", n, err)
			}
			iv.Batches = append(iv.Batches, p)
		}
	}
	if iv.Has(spec.InvariantArm) && parent != nil {
		for i := range parent.Dispatch {
			a := &parent.Dispatch[i]
			av := b.armVariant(parent, a)
			if av == v {
				continue
			}
			name := fmt.Sprintf("%s (%s)", a.Kernel, parent.ArmRange(i))
			ad := armDefs(a)
			if reason := b.refuse(av, sh, ad); reason != "" {
				iv.Refused = append(iv.Refused, name+": "+reason)
				continue
			}
			p, err := b.point(av, sh, ad, nkv)
			if err != nil {
				return fmt.Errorf("the invariance gate's arm %s: %w", name, err)
			}
			iv.Arms, iv.ArmNames = append(iv.Arms, p), append(iv.ArmNames, name)
		}
	}
	pt.Invariance = iv
	// A verdict with the gate is not one without it.
	pt.GateKey += "+invariance"
	return nil
}
