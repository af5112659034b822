package probe

import (
	"context"
	"errors"
	"fmt"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// replayNKVs returns the lengths the replay gate replays at, after a
// capture at nkv: nkv itself, a single row, SPLITS−1 (fewer rows than
// splits, so some splits are idle), a third of nkv (shorter than captured)
// and the full capacity (longer), without repeats or values outside
// 1..capacity.
func replayNKVs(nkv, splits, capacity int) []int {
	var out []int
	for _, n := range []int{nkv, 1, splits - 1, nkv / 3, capacity} {
		if n >= 1 && n <= capacity && !containsInt(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// capture records one partial+combine pair (times n) into a graph.
func (r *pointRun) capture(n int) (*cuda.Graph, error) {
	b := r.b
	// Capture refuses synchronous calls on the capturing thread: finish
	// everything pending first.
	if err := b.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("waiting for the stream: %w", err)
	}
	if err := b.stream.BeginCapture(); err != nil {
		return nil, fmt.Errorf("beginning graph capture: %w", err)
	}
	var lerr error
	for range n {
		if lerr = b.launchPair(r.k, &r.p.Config, r.g, r.ws); lerr != nil {
			break
		}
	}
	// EndCapture runs on every path: it also unlocks the thread.
	g, err := b.stream.EndCapture()
	if lerr != nil || err != nil {
		if g != nil {
			g.Destroy()
		}
		return nil, fmt.Errorf("capturing %d launch pairs: %w", n, errors.Join(lerr, err))
	}
	return g, nil
}

// replayGates checks that a graph captured once stays correct while nkv
// changes on the device, as an engine replaying its decode graph relies
// on: after the capture, at every length of replayNKVs, out and partial of
// a replay must equal those of a fresh launch byte for byte.
func (r *pointRun) replayGates(ctx context.Context) ([]results.Gate, error) {
	p, c := r.p, &r.p.Config
	s := c.Shape
	nkv := min(c.NKV, s.Capacity)
	if err := r.setPositions(gateLengths(nkv, s.Batch)); err != nil {
		return nil, err
	}
	g, err := r.capture(1)
	if err != nil {
		return nil, err
	}
	defer g.Destroy()
	var gates []results.Gate
	for _, n := range replayNKVs(nkv, r.l.splits, s.Capacity) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		lengths := gateLengths(n, s.Batch)
		if err := r.setPositions(lengths); err != nil {
			return nil, err
		}
		if err := r.poison(); err != nil {
			return nil, err
		}
		if err := g.Launch(r.b.stream); err != nil {
			return nil, fmt.Errorf("replaying the graph at nkv %d: %w", n, err)
		}
		gp, gout, err := r.readBack()
		if err != nil {
			return nil, fmt.Errorf("replay at nkv %d: %w", n, err)
		}
		fp, fout, err := r.runOnce(r.k, c, r.geometryAt(r.g, n), lengths)
		if err != nil {
			return nil, fmt.Errorf("fresh launch at nkv %d: %w", n, err)
		}
		gates = append(gates, replayGate(n, p.Seed, gp, fp, gout, fout, nkv))
	}
	return gates, nil
}

// replayGate is one replay verdict: the partial buffer is reported when it
// differs, since out derives from it.
func replayGate(nkv int, seed uint64, gp, fp, gout, fout []byte, captured int) results.Gate {
	g := diffGate(results.GateReplay, nkv, seed, "partial", gp, fp)
	if g.Pass {
		g = diffGate(results.GateReplay, nkv, seed, "out", gout, fout)
	}
	if !g.Pass {
		g.Detail = fmt.Sprintf("graph captured at nkv %d, replayed at %d: %s", captured, nkv, g.Detail)
	}
	return g
}

// geometryAt is g with the partial grid the point's geometry gives at nkv,
// for kernels whose grid reads nkv (plan.Point.Geometry); g itself for
// every other kernel. An expression that cannot be evaluated at nkv keeps
// the planned grid: the gates then judge what that launch produces.
func (r *pointRun) geometryAt(g geometry, nkv int) geometry {
	if r.p.Geometry == nil {
		return g
	}
	if grid, err := r.p.Geometry.At(nkv); err == nil {
		g.grid = grid
	}
	return g
}
