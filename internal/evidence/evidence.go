// Package evidence turns results records into the evidence a decision may
// rest on, once, before any command decides anything: the gate's verdict,
// tune's dispatch table, the report's "what to ship", compare and export.
//
// A record is a claim, not a fact: any field may have been edited, cut or
// left over from a crash. Check keeps a record as evidence only when it is
// internally consistent (its status agrees with its gates and probes,
// every sample is finite, positive and no faster than the device that
// recorded it can run the point (floor.go), and there are at least the
// minimum number of them) and replaces what can be derived (the summaries, the
// bandwidth) by what its samples say. Every other record is excluded with
// its reason, never dropped in silence, so that a command can refuse,
// count or say it. Failures are collected over every line read,
// superseded and excluded ones included: a kernel that failed a gate
// anywhere in the input stays failed whatever another line says.
package evidence

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/sanitizer"
	"github.com/ktune/ktune/internal/stats"
)

// A Problem is why a record is not evidence.
type Problem string

const (
	// ProblemUnknownStatus: the status is none this build writes.
	ProblemUnknownStatus Problem = "unknown status"
	// ProblemInvalidConfig: a configuration no sweep can have measured
	// (no variant, nkv below 1 or above the capacity, a shape dimension
	// below 1).
	ProblemInvalidConfig Problem = "impossible configuration"
	// ProblemNoProbe: an ok record without a measured probe.
	ProblemNoProbe Problem = "ok without a measured probe"
	// ProblemNoSamples: a probe without samples.
	ProblemNoSamples Problem = "probe without samples"
	// ProblemBadSample: a sample that is not a finite, positive time.
	ProblemBadSample Problem = "sample not a finite positive time"
	// ProblemBelowFloor: a sample faster than the device that recorded it
	// can run the point (floor.go): positive, but impossible.
	ProblemBelowFloor Problem = "sample below the physical floor"
	// ProblemFewSamples: fewer samples than the minimum asked for.
	ProblemFewSamples Problem = "fewer samples than the minimum"
	// ProblemContradiction: the status says one thing and the gates or
	// probes another (ok with a failing gate, gate_failed with every gate
	// passed, a probe measured twice), or a passing gate's own evidence
	// says it failed (passContradicted).
	ProblemContradiction Problem = "status contradicts the record"
)

// An Exclusion is a record that is not evidence, with why.
type Exclusion struct {
	File    string          `json:"file,omitempty"`
	Hash    string          `json:"hash"`
	Variant string          `json:"variant"`
	NKV     int             `json:"nkv"`
	Status  results.Status  `json:"status"`
	Problem Problem         `json:"problem"`
	Detail  string          `json:"detail"`
	Config  *results.Config `json:"-"`
}

func (e Exclusion) String() string {
	at := ""
	if e.File != "" {
		at = e.File + ": "
	}
	return fmt.Sprintf("%s%s %s nkv=%d (%s): %s: %s", at, e.Variant, e.Config.Defines.Own(), e.NKV, e.Status, e.Problem, e.Detail)
}

// A Failure is a record that says its kernel is wrong: a failing gate or a
// fault. It counts wherever it appears in the input.
type Failure struct {
	Hash   string
	Config results.Config
	Device string
	Reason string
}

// Options says what evidence must hold.
type Options struct {
	// MinSamples is the fewest samples a probe may have (the spec's
	// stopping rule, when the caller knows it); below 1 means 1.
	MinSamples int
}

// A Set is the evidence of one or more results files.
type Set struct {
	// Records are the records that are evidence, in input order, with
	// summaries and bandwidth recomputed from their samples.
	Records []results.Record
	// Sources holds the file of each record, when known.
	Sources []string
	// Damaged lists the input lines that could not be read as records.
	Damaged []error
	// Excluded lists the records read that are not evidence.
	Excluded []Exclusion
	// Failures lists every failing record read, superseded or excluded
	// ones included.
	Failures []Failure
	// Replaced counts the records superseded by a later line of their
	// hash in the same file.
	Replaced int
}

// Incomplete reports whether anything in the input could not be used: a
// decision drawn from the set is then at best undecided.
func (s *Set) Incomplete() bool { return len(s.Damaged) > 0 || len(s.Excluded) > 0 }

// Check validates recs (sources: the file of each, or nil) into a Set.
// The records are copied; recs is left as it was.
func Check(recs []results.Record, sources []string, opt Options) *Set {
	s := &Set{}
	for i := range recs {
		src := ""
		if len(sources) == len(recs) {
			src = sources[i]
		}
		s.noteFailure(&recs[i])
		s.add(recs[i], src, opt)
	}
	return s
}

// add checks one record into s.
func (s *Set) add(r results.Record, src string, opt Options) {
	r.Probes = cloneProbes(r.Probes)
	if p, detail := problem(&r, opt); p != "" {
		cfg := r.Config
		s.Excluded = append(s.Excluded, Exclusion{File: src, Hash: r.Hash, Variant: r.Config.Variant, NKV: r.Config.NKV,
			Status: r.Status, Problem: p, Detail: detail, Config: &cfg})
		return
	}
	s.Records = append(s.Records, r)
	s.Sources = append(s.Sources, src)
}

// noteFailure records r in s.Failures when it says its kernel is wrong.
func (s *Set) noteFailure(r *results.Record) {
	reason := ""
	for _, g := range r.Gates {
		if !g.Pass {
			reason = fmt.Sprintf("%s gate failed at nkv=%d", g.Kind, g.NKV)
			break
		}
	}
	switch {
	case reason != "":
	case r.Status == results.StatusFault:
		reason = "fault at nkv=" + fmt.Sprint(r.Config.NKV)
	case r.Status == results.StatusGateFailed:
		reason = "recorded gate_failed at nkv=" + fmt.Sprint(r.Config.NKV)
	default:
		return
	}
	s.Failures = append(s.Failures, Failure{Hash: r.Hash, Config: r.Config, Device: r.Env.Device, Reason: reason})
}

// problem returns why r is not evidence, or "".
func problem(r *results.Record, opt Options) (Problem, string) {
	if msg := configProblem(&r.Config); msg != "" {
		return ProblemInvalidConfig, msg
	}
	switch r.Status {
	case results.StatusOK:
	case results.StatusGateFailed:
		if r.GatesPass() {
			return ProblemContradiction, "gate_failed, but every recorded gate passed"
		}
		return "", ""
	case results.StatusCompileFailed, results.StatusFault, results.StatusTimeout, results.StatusOOM, results.StatusError, results.StatusOverBudget:
		return "", ""
	default:
		return ProblemUnknownStatus, fmt.Sprintf("status %q", r.Status)
	}
	for _, g := range r.Gates {
		if !g.Pass {
			return ProblemContradiction, fmt.Sprintf("ok, but its %s gate failed at nkv=%d", g.Kind, g.NKV)
		}
		if why := passContradicted(&g); why != "" {
			return ProblemContradiction, fmt.Sprintf("its %s gate at nkv=%d passed, but %s", g.Kind, g.NKV, why)
		}
	}
	if len(r.Probes) == 0 {
		return ProblemNoProbe, "no probes"
	}
	minN := max(opt.MinSamples, 1)
	seen := map[results.Probe]bool{}
	for i := range r.Probes {
		m := &r.Probes[i]
		if seen[m.Probe] {
			return ProblemContradiction, fmt.Sprintf("probe %s measured twice", m.Probe)
		}
		seen[m.Probe] = true
		if len(m.SamplesNS) == 0 {
			return ProblemNoSamples, fmt.Sprintf("%s has none", m.Probe)
		}
		for j, x := range m.SamplesNS {
			if math.IsNaN(x) || math.IsInf(x, 0) || x <= 0 {
				return ProblemBadSample, fmt.Sprintf("%s sample %d is %g", m.Probe, j, x)
			}
		}
		if want := r.Config.KVBytes(); want > 0 && m.Bytes != want {
			// The probe records what its configuration reads
			// (Config.KVBytes): a record whose figures disagree was
			// edited, its configuration (an nkv, a shape) or its bytes.
			return ProblemContradiction, fmt.Sprintf("its %s probe read %d bytes, but its configuration (nkv %d) reads %d", m.Probe, m.Bytes, r.Config.NKV, want)
		}
		if why := belowFloor(r, m); why != "" {
			return ProblemBelowFloor, why
		}
		if len(m.SamplesNS) < minN {
			return ProblemFewSamples, fmt.Sprintf("%s has %d, the minimum is %d", m.Probe, len(m.SamplesNS), minN)
		}
		// Derived figures are derived here, never read: a summary is
		// one edit away from any value.
		m.Summary = stats.Summarize(m.SamplesNS)
		m.GBps, m.PctBW = m.Bandwidth(r.Env.ReadBWGBps)
	}
	return "", ""
}

// passContradicted says what in a passing gate's own evidence says it
// failed, or "": NaNs in the output, bytes that differed, or a
// sanitizer's detail other than a clean report's. (FirstDiff 0 is the
// field left out, not a difference at byte 0, and is not read.)
func passContradicted(g *results.Gate) string {
	switch {
	case g.NaNs > 0:
		return fmt.Sprintf("it counts %d NaN(s)", g.NaNs)
	case g.DiffBytes > 0 || g.FirstDiff > 0:
		return fmt.Sprintf("it records %d byte(s) differing, the first at %d", g.DiffBytes, g.FirstDiff)
	case g.Kind == results.GateSanitizer && !sanitizer.IsCleanDetail(g.Detail):
		return fmt.Sprintf("its detail, %q, is no clean sanitizer report's", g.Detail)
	}
	return ""
}

// configProblem says what makes c a configuration no sweep measures, or "".
func configProblem(c *results.Config) string {
	sh := &c.Shape
	switch {
	case c.Variant == "":
		return "no variant"
	case c.NKV < 1:
		return fmt.Sprintf("nkv %d", c.NKV)
	case sh.Heads < 1 || sh.KVHeads < 1 || sh.HeadDim < 1 || sh.Batch < 1:
		return fmt.Sprintf("shape %d heads, %d kv_heads, head_dim %d, batch %d", sh.Heads, sh.KVHeads, sh.HeadDim, sh.Batch)
	case sh.Capacity < c.NKV:
		return fmt.Sprintf("nkv %d above the capacity %d", c.NKV, sh.Capacity)
	case c.Splits < 0:
		return fmt.Sprintf("splits %d", c.Splits)
	}
	// The table and every label read splits; the kernel was built with
	// the define. A record where they differ names a configuration no
	// sweep measured.
	if v, ok := c.Define(abi.DefineSplits); ok && v != strconv.Itoa(c.Splits) {
		return fmt.Sprintf("splits %d, but its SPLITS define is %s", c.Splits, v)
	}
	return ""
}

func cloneProbes(ps []results.Measurement) []results.Measurement {
	if ps == nil {
		return nil
	}
	out := make([]results.Measurement, len(ps))
	copy(out, ps)
	for i := range out {
		out[i].SamplesNS = append([]float64(nil), ps[i].SamplesNS...)
	}
	return out
}
