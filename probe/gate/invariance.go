package gate

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// The invariance gate (opt-in: the variant's invariant key, whose contexts
// the plan resolved into plan.Invariance).
//
// A sequence's output bits must not depend on the batch it shares, its
// place in it, or the dispatch arm that served it: deterministic serving,
// reproducible evaluations and a sampler that must match its trainer bit
// for bit all rest on it, and split-KV decode is where it breaks (a split
// count that follows the batch or the arm changes the order of the
// softmax merge). For a few probe sequences, each a sequence of the
// uniform gate set at a gate length (those cross the split boundaries; a
// paged point's page boundary is added), the gate runs the sequence
//   - alone, at batch 1, and inside a batch of half the shape's (batch);
//   - inside seeded compositions of the shape's batch: other sequences
//     of the set at other lengths around it (batch);
//   - at every position of the shape's batch, up to
//     invarianceMaxPositions of them, seeded beyond (position);
//   - under every other arm of its dispatch at the shape's batch (arm),
// and compares its out rows, and its lse rows where the variant declares
// lse, byte for byte with those of the first context. The first
// difference fails the gate, naming the sequence, the two contexts and
// the element.
//
// What it cannot see: a batch larger than the shape's (the contexts run
// in the point's workspace), input sets other than uniform, a difference
// that shows only at lengths other than the probes', and arms of another
// variant or of a dispatch table the spec does not hold (tune --invariant
// builds such a table from one form, which a spec then gates).

const (
	// invarianceCompositions is how many seeded batches of the shape's
	// batch surround each probe sequence.
	invarianceCompositions = 3
	// invarianceMaxPositions bounds the positions a probe sequence takes
	// in one batch; a larger batch gets the first, the last and seeded
	// others.
	invarianceMaxPositions = 16
	// invarianceMaxProbes bounds the probe sequences.
	invarianceMaxProbes = 3
)

// invariance runs the point's invariance gate when its variant asks for
// one.
var invariance = Gate{
	Name:     "invariance",
	Kinds:    []results.GateKind{results.GateInvariance},
	Settings: []string{"GateNKV", "PageSize", "Invariance"},
	Run:      runInvariance,
	OptIn: func(p *plan.Point) string {
		if p.Invariance == nil {
			return ""
		}
		return p.Invariance.String()
	},
}

// An invContext is one batch a probe sequence runs in.
type invContext struct {
	name    string
	run     *invKernel
	seqs    []int // the set's sequence at each position
	lengths []int
	pos     int // the probe sequence's position
}

// An invKernel is a context's kernel: a point of plan.Invariance (or the
// point itself) as the session loaded it, with its name.
type invKernel struct {
	k    Kernel
	p    *plan.Point
	name string
}

func runInvariance(ctx context.Context, s Session, log *Log) error {
	p := s.Point()
	iv := p.Invariance
	if iv == nil {
		return nil
	}
	start, pairs := time.Now(), s.Pairs()
	// Every context writes its own inputs: whatever the gates after this
	// one need they upload again.
	defer s.ForgetUploads()
	shape := p.Config.Shape
	nkvs := NKVs(p.GateNKV, shape.Capacity)
	rows := slices.Max(nkvs)
	in, err := s.UploadSet(oracle.SetUniform, rows, Lengths(rows, shape))
	if err != nil {
		return fmt.Errorf("invariance gate: %w", err)
	}
	own := &invKernel{k: s.Kernel(), p: p, name: fmt.Sprintf("batch %d", shape.Batch)}
	var batches, arms []*invKernel
	for _, bp := range iv.Batches {
		k, err := s.Batch(bp)
		if err != nil {
			return fmt.Errorf("invariance gate: %w", err)
		}
		batches = append(batches, &invKernel{k: k, p: bp, name: fmt.Sprintf("batch %d", bp.Config.Shape.Batch)})
	}
	var releases []func()
	defer func() {
		for _, release := range releases {
			release()
		}
	}()
	for i, ap := range iv.Arms {
		k, release, err := s.Arm(ap)
		if err != nil {
			return fmt.Errorf("invariance gate, arm %s: %w", iv.ArmNames[i], err)
		}
		releases = append(releases, release)
		arms = append(arms, &invKernel{k: k, p: ap, name: "arm " + iv.ArmNames[i]})
	}
	rng := rand.New(rand.NewPCG(p.Seed, 0x696e76)) // "inv"
	ctxs := 0
	for pi, L := range invarianceLengths(nkvs, p.PageSize, shape.Attention.Queries()) {
		src := pi % shape.Batch
		runs := invarianceContexts(iv, own, batches, arms, src, L, rows, shape.Attention.Queries(), rng)
		var ref Outputs
		var refCtx invContext
		for i, c := range runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			sel, err := in.Sequences(c.seqs)
			if err != nil {
				return fmt.Errorf("invariance gate, sequence %d (nkv %d) %s: %w", src, L, c.name, err)
			}
			o, err := s.LaunchInputs(c.run.k, sel, c.lengths)
			if err != nil {
				return fmt.Errorf("invariance gate, sequence %d (nkv %d) %s: %w", src, L, c.name, err)
			}
			ctxs++
			row := probeRow(o, c)
			if i == 0 {
				ref, refCtx = row, c
				continue
			}
			if g, ok := invarianceDiff(p, src, L, refCtx, c, ref, row); !ok {
				log.Add(g)
				s.Logf("%s: invariance gate failed: %s", p.Config.Variant, g.Detail)
				return nil
			}
			s.Recycle(o.Partial)
		}
	}
	var kinds []string
	for _, k := range iv.Kinds {
		kinds = append(kinds, string(k))
	}
	detail := fmt.Sprintf("%s: %d contexts, %d launch pairs, %.2fs", strings.Join(kinds, ", "), ctxs, s.Pairs()-pairs, time.Since(start).Seconds())
	if len(iv.Refused) > 0 {
		detail += "; arms left out: " + strings.Join(iv.Refused, "; ")
	}
	log.Add(results.Gate{Kind: results.GateInvariance, NKV: rows, Seed: p.Seed, Pass: true, FirstDiff: -1,
		Inputs: string(oracle.SetUniform), Buffer: "out", Detail: detail})
	s.Logf("%s: invariance gate: %s", p.Config.Variant, detail)
	return nil
}

// invarianceLengths are the probe sequences' lengths: the shortest,
// middle and longest gate lengths (the split boundaries are among them)
// and, for a paged point, one past the first page; each at least the
// query tokens, at most invarianceMaxProbes.
func invarianceLengths(nkvs []int, pageSize, queries int) []int {
	ns := slices.Clone(nkvs)
	slices.Sort(ns)
	cand := []int{ns[0], ns[len(ns)-1], ns[len(ns)/2]}
	if pageSize > 0 && pageSize+1 <= ns[len(ns)-1] {
		cand = append(cand[:2], pageSize+1)
	}
	var out []int
	for _, n := range cand {
		n = max(n, queries)
		if !slices.Contains(out, n) && len(out) < invarianceMaxProbes {
			out = append(out, n)
		}
	}
	return out
}

// invarianceContexts are the batches probe sequence src (length L) runs
// in, the first being the one the others are compared with: alone at
// batch 1 when batch invariance is asked, else the shape's batch with the
// sequence first.
func invarianceContexts(iv *plan.Invariance, own *invKernel, batches, arms []*invKernel, src, L, rows, queries int, rng *rand.Rand) []invContext {
	compose := func(k *invKernel, comp, pos int) invContext {
		n := k.p.Config.Shape.Batch
		c := invContext{run: k, seqs: make([]int, n), lengths: make([]int, n), pos: pos}
		batch := own.p.Config.Shape.Batch
		for i := range n {
			// Another sequence of the set, at another length.
			c.seqs[i] = (src + 1 + rng.IntN(max(1, batch-1))) % batch
			c.lengths[i] = queries + rng.IntN(rows-queries+1)
		}
		c.seqs[pos], c.lengths[pos] = src, L
		c.name = fmt.Sprintf("%s (composition %d), position %d", k.name, comp, pos)
		if n == 1 {
			c.name = k.name + " (alone)"
		}
		return c
	}
	var out []invContext
	for _, b := range batches {
		out = append(out, compose(b, 0, rng.IntN(b.p.Config.Shape.Batch)))
	}
	// Each position with a composition of its own (position); else
	// seeded compositions at seeded positions (batch), or the sequence
	// first in one batch (arm alone).
	B := own.p.Config.Shape.Batch
	switch {
	case iv.Positions():
		for i, p := range invariancePositions(B, rng) {
			out = append(out, compose(own, i, p))
		}
	case iv.Compositions():
		for c := range invarianceCompositions {
			out = append(out, compose(own, c, rng.IntN(B)))
		}
	default:
		out = append(out, compose(own, 0, 0))
	}
	for _, a := range arms {
		out = append(out, compose(a, 0, 0))
	}
	return out
}

// invariancePositions are the positions of a batch of n the probe
// sequence takes: all of them up to invarianceMaxPositions, else the
// first, the last and seeded others.
func invariancePositions(n int, rng *rand.Rand) []int {
	if n <= invarianceMaxPositions {
		out := make([]int, n)
		for i := range out {
			out[i] = i
		}
		return out
	}
	out := []int{0, n - 1}
	for _, p := range rng.Perm(n - 2)[:invarianceMaxPositions-2] {
		out = append(out, p+1)
	}
	slices.Sort(out)
	return out
}

// probeRow keeps the probe sequence's rows of a context's outputs: out
// [batch][q_len][heads][dv] as f32, lse [batch][q_len][heads].
func probeRow(o Outputs, c invContext) Outputs {
	n := len(c.seqs)
	row := func(b []byte) []byte {
		if b == nil {
			return nil
		}
		w := len(b) / n
		return slices.Clone(b[c.pos*w : (c.pos+1)*w])
	}
	return Outputs{Out: row(o.Out), LSE: row(o.LSE)}
}

// invarianceDiff compares the probe sequence's rows of two contexts:
// out, then lse. A difference is a failing gate naming both contexts
// and the first differing element (an f32 of the row).
func invarianceDiff(p *plan.Point, src, L int, a, b invContext, x, y Outputs) (results.Gate, bool) {
	for _, buf := range []struct {
		name string
		a, b []byte
	}{{"out", x.Out, y.Out}, {"lse", x.LSE, y.LSE}} {
		n, first := diffBytes(buf.a, buf.b)
		if n == 0 {
			continue
		}
		e := first / 4
		g := results.Gate{Kind: results.GateInvariance, NKV: L, Seed: p.Seed, Buffer: buf.name, DiffBytes: n, FirstDiff: first,
			Inputs: string(oracle.SetUniform)}
		g.Detail = fmt.Sprintf("sequence %d of the uniform set at nkv %d: its %s row differs between %s and %s, first at element %d (%s): %s against %s (%d bytes differ)",
			src, L, buf.name, a.name, b.name, e, elementName(p, buf.name, e), f32At(buf.a, e), f32At(buf.b, e), n)
		return g, false
	}
	return results.Gate{}, true
}

// elementName locates element e of a sequence's out or lse row.
func elementName(p *plan.Point, buf string, e int) string {
	s := p.Config.Shape
	if buf == "lse" {
		return fmt.Sprintf("token %d, head %d", e/s.Heads, e%s.Heads)
	}
	dv := s.Attention.VDim(s.HeadDim)
	return fmt.Sprintf("token %d, head %d, dim %d", e/(s.Heads*dv), e/dv%s.Heads, e%dv)
}

// f32At prints element e of an f32 row, "missing" past its end.
func f32At(b []byte, e int) string {
	if 4*e+4 > len(b) {
		return "missing"
	}
	return fmt.Sprintf("%g", math.Float32frombits(binary.LittleEndian.Uint32(b[4*e:])))
}
