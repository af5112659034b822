package gate

import (
	"context"
	"fmt"
	"strings"

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
// address space with nothing mapped (Session.BoundsLaunch): the read
// faults inside the gate.

// bounds runs that launch. A fault is returned (it is sticky: the point's
// record is a fault) after the failure is logged; a workspace too large to
// copy leaves the gate out, logged by the session, rather than passed.
var bounds = Gate{
	Name:  "bounds",
	Kinds: []results.GateKind{results.GateBounds},
	Run: func(ctx context.Context, s Session, log *Log) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := s.Point()
		capacity := p.Config.Shape.Capacity
		names, ran, err := s.BoundsLaunch()
		if !ran {
			return err
		}
		gate := results.Gate{Kind: results.GateBounds, NKV: capacity, Seed: p.Seed, FirstDiff: -1, Buffer: strings.Join(names, ",")}
		if err != nil {
			if cuda.IsSticky(err) {
				gate.Detail = fmt.Sprintf("the launch at nkv %d (every sequence at the capacity) with %s ending against unmapped memory faulted: a read or write past a buffer's end: %v",
					capacity, gate.Buffer, err)
				log.Add(gate)
			}
			return fmt.Errorf("bounds gate at nkv %d: %w", capacity, err)
		}
		gate.Pass = true
		gate.Detail = fmt.Sprintf("a launch at nkv %d with %s ending against unmapped memory ran without a fault", capacity, gate.Buffer)
		log.Add(gate)
		// The outputs and scratch are the workspace's own: their guards.
		return s.AfterLaunch(capacity)
	},
}
