package probe

import (
	"errors"
	"fmt"
)

// capture records n pairs of the point's kernel, launched with geometry g,
// into a graph; with timed set they are the probes' pairs, alternating
// between the two q.
func (r *session) capture(n int, g geometry, timed bool) (graph, error) {
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
		set := firstSet
		if timed {
			set = qSet(i % 2)
		}
		if lerr = r.pair(r.k, &r.p.Config, g, set); lerr != nil {
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

// geometryAt is g with the launches the point's geometry gives at nkv,
// for kernels whose grid, shared memory or arguments read nkv
// (plan.Point.Geometry); g itself for every other kernel. An expression
// that cannot be evaluated at nkv keeps the planned launches (the plan
// has evaluated them at every length the gates launch at): the gates then
// judge what that launch produces.
func (r *session) geometryAt(g geometry, nkv int) geometry {
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
