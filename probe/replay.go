package probe

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// capture records n pairs of the point's kernel, launched with geometry g,
// into a graph; with timed set they are the probes' pairs, alternating
// between the two q.
func (r *pointRun) capture(n int, g geometry, timed bool) (graph, error) {
	d := r.b.gpu
	// Capture refuses synchronous calls on the capturing thread: finish
	// everything pending first.
	if err := d.sync(); err != nil {
		return nil, fmt.Errorf("waiting for the stream: %w", err)
	}
	if err := d.beginCapture(); err != nil {
		return nil, fmt.Errorf("beginning graph capture: %w", err)
	}
	var lerr error
	for i := range n {
		r.alt = timed && i%2 == 1
		lerr = r.pair(r.k, &r.p.Config, g)
		r.alt = false
		if lerr != nil {
			break
		}
	}
	// endCapture runs on every path: it also unlocks the thread.
	gr, err := d.endCapture()
	if lerr != nil || err != nil {
		if gr != nil {
			gr.destroy()
		}
		return nil, fmt.Errorf("capturing %d launch pairs: %w", n, errors.Join(lerr, err))
	}
	return gr, nil
}

// replayGates checks that a graph captured once stays correct while nkv
// changes on the device, as an engine replaying its decode graph relies
// on. Replay safety belongs to the compiled kernel, not to the probes a
// spec asks for, so it runs for every gate group: one pair is captured at
// p.CaptureNKV (below every split boundary) and replayed at each of
// p.ReplayNKV in order; every replay must equal a fresh launch byte for
// byte and, at the lengths the uniform inputs cover, the oracle.
//
// A kernel whose grid reads nkv (p.Geometry) fails outright unless the
// spec says the engine never captures it: a replay keeps the grid of its
// capture whatever lengths a gate happens to try.
func (r *pointRun) replayGates(ctx context.Context, log *gateLog) error {
	p, c := r.p, &r.p.Config
	s := c.Shape
	if p.NeverCaptured {
		return nil
	}
	capN := min(max(1, p.CaptureNKV), s.Capacity)
	if p.Geometry != nil {
		log.add(results.Gate{Kind: results.GateReplay, NKV: capN, Seed: p.Seed, FirstDiff: -1,
			Detail: fmt.Sprintf("the partial grid %q reads nkv: a captured CUDA graph replays the grid of its capture; "+
				"say graph: never on the variant if the engine never captures this kernel", p.Geometry.Grid)})
	}
	var replays []int
	for _, n := range p.ReplayNKV {
		if n >= 1 && n <= s.Capacity {
			replays = append(replays, n)
		}
	}
	if len(replays) == 0 {
		return nil
	}
	rows := slices.Max(gateNKVs(p.GateNKV, s.Capacity))
	in, err := r.uploadSet(oracle.SetUniform, rows, shapeLengths(rows, s))
	if err != nil {
		return err
	}
	if err := r.setPositions(shapeLengths(capN, s)); err != nil {
		return err
	}
	g, err := r.capture(1, r.geometryAt(r.g, capN), false)
	if err != nil {
		return err
	}
	defer g.destroy()
	bounds := r.bounds()
	for _, n := range replays {
		if err := ctx.Err(); err != nil {
			return err
		}
		lengths := shapeLengths(n, s)
		if err := r.setPositions(lengths); err != nil {
			return err
		}
		if err := r.poison(); err != nil {
			return err
		}
		if err := r.sealInputs(); err != nil {
			return err
		}
		r.pairs++
		if err := g.launch(); err != nil {
			return fmt.Errorf("replaying the graph at nkv %d: %w", n, err)
		}
		replayed, err := r.readBack()
		if err != nil {
			return fmt.Errorf("replay at nkv %d: %w", n, err)
		}
		if err := r.afterLaunch(n); err != nil {
			return err
		}
		fresh, err := r.runOutputs(r.k, c, r.geometryAt(r.g, n), lengths)
		if err != nil {
			return fmt.Errorf("fresh launch at nkv %d: %w", n, err)
		}
		gate := outputsGate(results.GateReplay, n, p.Seed, replayed, fresh,
			fmt.Sprintf("graph captured at nkv %d, replayed at %d", capN, n))
		gate.Inputs = string(oracle.SetUniform)
		if n <= rows {
			t0 := time.Now()
			refs, err := r.b.inputCache().references(in, [][]int{lengths})
			r.tOracle += time.Since(t0)
			if err != nil {
				return err
			}
			m, err := oracle.Compare(floats(replayed.out), refs[0].Out, bounds)
			if err != nil {
				return err
			}
			gate.MaxAbs, gate.MaxRel, gate.NMSE, gate.NaNs = m.MaxAbs, m.MaxRel, m.NMSE, m.NaNs
			// Equal bytes are no proof: a fresh launch after the replays
			// shares whatever state the replays left. So the replay's out
			// and a declared lse are judged against the oracle too.
			against := []results.Gate{toleranceGate(n, p.Seed, m, bounds)}
			if replayed.lse != nil {
				t, err := r.lseTolerance(n, replayed.lse, refs[0].LSE)
				if err != nil {
					return err
				}
				against = append(against, t)
			}
			for _, t := range against {
				if t.Pass {
					continue
				}
				what := "out"
				if t.Buffer != "" {
					what = t.Buffer
				}
				if gate.Pass {
					gate.Buffer = what
				}
				gate.Pass = false
				if gate.Detail == "" {
					gate.Detail = fmt.Sprintf("graph captured at nkv %d, replayed at %d", capN, n)
				}
				gate.Detail += "; " + what + " against the oracle: " + t.Detail
			}
		}
		log.add(gate)
	}
	return nil
}

// geometryAt is g with the launches the point's geometry gives at nkv,
// for kernels whose grid, shared memory or arguments read nkv
// (plan.Point.Geometry); g itself for every other kernel. An expression
// that cannot be evaluated at nkv keeps the planned launches (the plan
// has evaluated them at every length the gates launch at): the gates then
// judge what that launch produces.
func (r *pointRun) geometryAt(g geometry, nkv int) geometry {
	if r.p.Geometry == nil {
		return g
	}
	if steps, err := r.p.Geometry.StepsAt(nkv, g.steps); err == nil {
		g.steps = steps
		if len(steps) > 0 {
			g.grid, g.shared = steps[0].Grid, steps[0].Shared
		}
		if len(steps) > 1 {
			g.cgrid = steps[1].Grid
		}
	}
	if r.p.Geometry.Args {
		g.nkv = nkv
	}
	return g
}
