package gate

import (
	"context"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// fresh runs the shortest gate length once more on the module that ran
// every gate so far and on a freshly loaded module of the same CUBIN:
// their bytes must agree. A kernel that keeps state in __device__ memory
// (the longest length seen, a counter) gives itself away here even when
// each gate length alone looked right. The first launch is the log's
// Reference, which the probe runs again after timing.
var fresh = Gate{
	Name:     "fresh",
	Kinds:    []results.GateKind{results.GateFresh},
	Settings: []string{"GateNKV"},
	Run: func(ctx context.Context, s Session, log *Log) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := s.Point()
		shape := p.Config.Shape
		nkvs := NKVs(p.GateNKV, shape.Capacity)
		nkv := slices.Min(nkvs)
		lengths := Lengths(nkv, shape)
		if _, err := s.UploadSet(oracle.SetUniform, slices.Max(nkvs), lengths); err != nil {
			return err
		}
		before, err := s.Launch(s.Kernel(), nkv, lengths)
		if err != nil {
			return fmt.Errorf("fresh-module gate at nkv %d: %w", nkv, err)
		}
		k, release, err := s.Fresh(nkv)
		if err != nil {
			return err
		}
		defer release()
		after, err := s.Launch(k, nkv, lengths)
		if err != nil {
			return fmt.Errorf("fresh-module gate at nkv %d, fresh module: %w", nkv, err)
		}
		log.Reference = &Launch{NKV: nkv, Outputs: before}
		g := Same(results.GateFresh, nkv, p.Seed, after, before,
			"a freshly loaded module differs from the module that ran the gates (state kept in device memory between launches)")
		g.Inputs = string(oracle.SetUniform)
		log.Add(g)
		return nil
	},
}
