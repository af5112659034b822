// Package replay is a plan.Backend that serves recorded results instead of
// measuring, so that the sweep, resume, search and gate logic run end to
// end without a GPU.
package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A Backend is a plan.Backend that serves recorded results instead of measuring:
// it lets the sweep, resume and gate logic run end to end without a GPU,
// and it can play a dying backend or an interrupt at a chosen point.
type Backend struct {
	recs map[string]results.Record
	env  results.Env
	has  bool // env is set: there was at least one record

	// FailAt, when > 0, makes the FailAt-th call of Run (1-based) play a
	// backend that died on that point: it returns a record with
	// FailStatus and an error.
	FailAt int
	// FailStatus is the status of the failing point's record; "" means
	// results.StatusFault (a sticky CUDA error kills the context).
	FailStatus results.Status
	// Hook, if set, is called by every Run just before it returns, with
	// the 1-based call number; a test cancels its context from here to
	// interrupt a sweep mid-point.
	Hook func(call int, p *plan.Point)
	// Clock stamps the returned records; nil means time.Now.
	Clock func() time.Time

	calls []string // hashes asked for, in order
}

// NewReplay returns a Backend serving recs; a later record of a hash
// replaces an earlier one, as in a results file.
func New(recs []results.Record) *Backend {
	r := &Backend{recs: make(map[string]results.Record, len(recs))}
	for _, rec := range recs {
		r.recs[rec.Hash] = rec
	}
	if len(recs) > 0 {
		r.env, r.has = recs[0].Env, true
	}
	return r
}

// errNoEnv is returned by Env when the Backend holds no record.
var errNoEnv = errors.New("replay: no records, so no device to describe")

// Env returns the device of the first record.
func (r *Backend) Env(ctx context.Context) (results.Env, error) {
	if !r.has {
		return results.Env{}, errNoEnv
	}
	return r.env, nil
}

// Run returns a copy of the record of p.Hash with a fresh time, or a record
// with StatusError "not recorded" when there is none.
func (r *Backend) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	r.calls = append(r.calls, p.Hash)
	n := len(r.calls)
	clock := r.Clock
	if clock == nil {
		clock = time.Now
	}
	var rec results.Record
	var err error
	if n == r.FailAt {
		status := r.FailStatus
		if status == "" {
			status = results.StatusFault
		}
		rec = results.Record{Hash: p.Hash, Config: p.Config, Env: r.env, Status: status,
			Error: "replay: injected failure (CUDA_ERROR_ILLEGAL_ADDRESS)"}
		err = fmt.Errorf("replay: backend died at call %d: %s", n, rec.Error)
	} else if old, ok := r.recs[p.Hash]; ok {
		rec = clone(old)
	} else {
		rec = results.Record{Config: p.Config, Env: r.env, Status: results.StatusError, Error: "not recorded"}
	}
	rec.Hash = p.Hash
	rec.Time = clock()
	if r.Hook != nil {
		r.Hook(n, p)
	}
	// A real backend notices the cancel and gives up on the point.
	if ctx.Err() != nil {
		return results.Record{}, ctx.Err()
	}
	return rec, err
}

// Calls returns the hashes Run was asked for, in order.
func (r *Backend) Calls() []string { return append([]string(nil), r.calls...) }

// Close does nothing.
func (r *Backend) Close() error { return nil }

// clone deep-copies a record so that callers may change the returned one.
func clone(rec results.Record) results.Record {
	out := rec
	out.Config.Defines = slices.Clone(rec.Config.Defines)
	out.Config.Lengths = slices.Clone(rec.Config.Lengths)
	out.Compile.Flags = slices.Clone(rec.Compile.Flags)
	out.Resources = slices.Clone(rec.Resources)
	out.Gates = slices.Clone(rec.Gates)
	out.Probes = slices.Clone(rec.Probes)
	for i := range out.Probes {
		out.Probes[i].SamplesNS = slices.Clone(rec.Probes[i].SamplesNS)
	}
	return out
}
