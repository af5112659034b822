// Package replay is a plan.Backend that serves recorded results instead of
// measuring, so that the sweep, resume, search and gate logic run end to
// end without a GPU: in tests (New), and from the command line (Load,
// `ktune sweep --backend replay`) to dry-run a spec or test a pipeline.
package replay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A Backend is a plan.Backend that serves recorded results instead of measuring:
// it lets the sweep, resume and gate logic run end to end without a GPU,
// and it can play a dying backend or an interrupt at a chosen point.
type Backend struct {
	recs     map[string]results.Record // by hash
	byConfig map[string]results.Record // by configKey; nil unless Match is MatchConfig
	env      results.Env
	has      bool // env is set: there was at least one record

	// Mark sets Record.Replayed on every record Run returns. Load sets it;
	// New leaves it off, so that a test's Backend can play a measuring one.
	Mark bool
	// FailAt, when > 0, makes the FailAt-th call of Run (1-based) play a
	// backend that died on that point: it returns a record with
	// FailStatus and an error.
	FailAt int
	// FailStatus is the status of the failing point's record; "" means
	// results.StatusFault (a sticky CUDA error kills the context).
	FailStatus results.Status
	// StopAt, when > 0, makes the StopAt-th call of Run (1-based) return
	// an error and no record: a backend lost in the middle of a point (a
	// node gone, a preempted job), so that nothing is recorded for it and
	// a resumed sweep runs it.
	StopAt int
	// Delay is how long each Run takes, as a measurement would, so that a
	// pipeline's watching, cancelling and preemption can be tested; a
	// cancelled context cuts it short.
	Delay time.Duration
	// Hook, if set, is called by every Run just before it returns, with
	// the 1-based call number; a test cancels its context from here to
	// interrupt a sweep mid-point.
	Hook func(call int, p *plan.Point)
	// Clock stamps the returned records; nil means time.Now.
	Clock func() time.Time

	calls []string // hashes asked for, in order
}

// New returns a Backend serving recs by hash; a later record of a hash
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

// Match says how Load's Backend finds the record of a point.
type Match string

const (
	// MatchHash serves only a record of the point's own hash: measured
	// with the same kernel sources, flags, architecture and settings.
	MatchHash Match = "hash"
	// MatchConfig also serves, for a point without a record of its hash,
	// the record of the same configuration (variant, kernel, defines,
	// shape and nkv) under another hash: results recorded before the
	// kernel sources or the measure settings changed. Good enough to test
	// a pipeline; the record says it (Replayed.Match "config").
	MatchConfig Match = "config"
)

// ParseMatch parses "hash" or "config".
func ParseMatch(s string) (Match, error) {
	switch m := Match(s); m {
	case MatchHash, MatchConfig:
		return m, nil
	}
	return "", fmt.Errorf("%q: want %s or %s", s, MatchHash, MatchConfig)
}

// Load returns a marked Backend serving the records of the results files
// (or sweep directories) at paths. Within a file and across files, a
// later record of a hash, or of a configuration with MatchConfig,
// replaces an earlier one. Unreadable lines come back as warnings.
func Load(match Match, paths ...string) (b *Backend, warnings []error, err error) {
	set, err := results.Load(paths...)
	if set != nil {
		warnings = set.Warnings
	}
	if err != nil {
		return nil, warnings, fmt.Errorf("loading recorded results to replay: %w", err)
	}
	if len(set.Records) == 0 {
		return nil, warnings, fmt.Errorf("loading recorded results to replay: no records in %v", paths)
	}
	b = New(set.Records)
	b.Mark = true
	if match == MatchConfig {
		b.byConfig = make(map[string]results.Record, len(set.Records))
		for _, rec := range set.Records {
			b.byConfig[configKey(&rec.Config)] = rec
		}
	}
	return b, warnings, nil
}

// configKey is a configuration's identity for MatchConfig: what a reader
// of a table takes a row to be. The spec's name is left out (the same
// configuration in two specs is the same kernel run), and so is the launch
// geometry, which the defines and the shape decide.
func configKey(c *results.Config) string {
	return fmt.Sprintf("%s\x00%s\x00%s\x00%+v\x00%d\x00%v", c.Variant, c.Kernel, c.Defines.String(), c.Shape, c.NKV, c.Lengths)
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

// notRecorded is the error text of a point the Backend has no record of.
const notRecorded = "not recorded"

// Run returns a copy of the record of p.Hash with a fresh time, or a record
// with StatusError "not recorded" when there is none.
func (r *Backend) Run(ctx context.Context, p *plan.Point) (results.Record, error) {
	r.calls = append(r.calls, p.Hash)
	n := len(r.calls)
	clock := r.Clock
	if clock == nil {
		clock = time.Now
	}
	if n == r.StopAt {
		return results.Record{}, fmt.Errorf("replay: backend lost at call %d (injected), before point %s was recorded", n, p.Hash)
	}
	var rec results.Record
	var err error
	replayed := &results.Replay{Match: results.ReplayNone}
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
		replayed = &results.Replay{Match: results.ReplayHash, Hash: old.Hash}
	} else if old, ok := r.byConfig[configKey(&p.Config)]; ok {
		// The point's own configuration, so that tables and the landed
		// mark read as the plan says; the numbers are the old record's.
		rec = clone(old)
		rec.Config = p.Config
		replayed = &results.Replay{Match: results.ReplayConfig, Hash: old.Hash}
	} else {
		rec = results.Record{Config: p.Config, Env: r.env, Status: results.StatusError, Error: notRecorded}
		if r.Mark {
			rec.Error = "not recorded: the replayed results hold no record of this point's hash"
			if r.byConfig != nil {
				rec.Error += " nor of its configuration"
			}
		}
	}
	rec.Hash = p.Hash
	rec.Time = clock()
	if r.Mark {
		rec.Replayed = replayed
		if !strings.HasPrefix(rec.Env.Host, results.ReplayedHostPrefix) {
			rec.Env.Host = results.ReplayedHostPrefix + rec.Env.Host
		}
	}
	if r.Hook != nil {
		r.Hook(n, p)
	}
	if r.Delay > 0 {
		t := time.NewTimer(r.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
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
	out.Replayed = nil
	return out
}
