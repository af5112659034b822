package probe

import (
	"context"
	"fmt"
	"strings"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
)

// Reads past the end.
//
// The guard regions catch a write past a buffer, not a read: a kernel
// that reads a row past K's end (a prefetch of the next chunk's first row,
// a tile loaded whole) gets canary and computes right, and in an engine
// reads the next tensor or faults there. So one launch of the gates runs
// at nkv equal to the capacity for every sequence, where such a read
// leaves the buffer, on copies of every read-only buffer that end against
// address space with nothing mapped (cuda.Context.AllocBeforeHole): the
// read faults inside the gate. The copies live only for that launch, so
// the workspace the probes time is allocated as before.

// boundsGate runs that launch. A fault is returned (it is sticky: the
// point's record is a fault) after the failure is logged; a workspace too
// large to copy leaves the gate out, logged, rather than passed.
func (r *pointRun) boundsGate(ctx context.Context, log *gateLog) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c, s := &r.p.Config, r.p.Config.Shape
	lengths := make([]int, s.Batch)
	for i := range lengths {
		lengths[i] = s.Capacity
	}
	if err := r.setPositions(lengths); err != nil {
		return err
	}
	if err := r.poison(); err != nil {
		return err
	}
	view := *r.ws
	var names []string
	for _, e := range view.table() {
		if e.role != abi.RoleInput || e.n == 0 {
			continue
		}
		p, release, err := r.b.gpu.holeCopy(*e.p, e.n)
		if err != nil {
			if cuda.IsOutOfMemory(err) {
				r.b.logf("%s: bounds gate not run: no room for copies of the read-only buffers (%v)", c.Variant, err)
				return nil
			}
			return fmt.Errorf("copying %s before unmapped memory: %w", e.name, err)
		}
		defer release()
		*e.p = p
		names = append(names, e.name)
	}
	g := r.geometryAt(r.g, s.Capacity)
	r.pairs++
	err := r.b.gpu.launch(r.k, c, g, &view)
	if err == nil {
		err = r.b.gpu.sync()
	}
	gate := results.Gate{Kind: results.GateBounds, NKV: s.Capacity, Seed: r.p.Seed, FirstDiff: -1, Buffer: strings.Join(names, ",")}
	if err != nil {
		if cuda.IsSticky(err) {
			gate.Detail = fmt.Sprintf("the launch at nkv %d (every sequence at the capacity) with %s ending against unmapped memory faulted: a read or write past a buffer's end: %v",
				s.Capacity, gate.Buffer, err)
			log.add(gate)
		}
		return fmt.Errorf("bounds gate at nkv %d: %w", s.Capacity, err)
	}
	gate.Pass = true
	gate.Detail = fmt.Sprintf("a launch at nkv %d with %s ending against unmapped memory ran without a fault", s.Capacity, gate.Buffer)
	log.add(gate)
	// The outputs and scratch are the workspace's own: their guards.
	return r.afterLaunch(s.Capacity)
}
