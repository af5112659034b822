package evidence

import (
	"math"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// okRecord is an ok record whose samples are the given times in µs (a
// time in ns below the launch floor would not be evidence).
func okRecord(hash string, samples ...float64) results.Record {
	ns := make([]float64, len(samples))
	for i, x := range samples {
		ns[i] = x * 1000
	}
	samples = ns
	return results.Record{Hash: hash, Status: results.StatusOK,
		Config: results.Config{Variant: "d2", NKV: 512,
			Shape: results.Shape{Heads: 28, KVHeads: 4, HeadDim: 128, Batch: 1, Capacity: 512}},
		Gates: []results.Gate{{Kind: results.GateTolerance, Pass: true}},
		Probes: []results.Measurement{{Probe: results.ProbeCold, SamplesNS: samples, Bytes: 1000,
			Summary: results.Summary{N: 99, Median: 1}}}}
}

func TestCheck(t *testing.T) {
	failing := okRecord("f")
	failing.Gates[0].Pass = false
	gateFailed := okRecord("g")
	gateFailed.Status, gateFailed.Probes, gateFailed.Gates[0].Pass = results.StatusGateFailed, nil, false
	unfailed := okRecord("u")
	unfailed.Status, unfailed.Probes = results.StatusGateFailed, nil
	badStatus := okRecord("s", 1, 2, 3)
	badStatus.Status = "OK"
	atZero := okRecord("z", 1, 2, 3)
	atZero.Config.NKV = 0
	beyond := okRecord("y", 1, 2, 3)
	beyond.Config.Shape.Capacity = 100
	// FuzzNeverMorePermissive: config.splits negated made "what to ship"
	// name SPLITS=-16, a configuration no sweep measured.
	negSplits := okRecord("ns", 1, 2, 3)
	negSplits.Config.Splits, negSplits.Config.Defines = -16, results.Defines{{Name: "SPLITS", Value: "16"}}
	otherSplits := okRecord("os", 1, 2, 3)
	otherSplits.Config.Splits, otherSplits.Config.Defines = 32, results.Defines{{Name: "SPLITS", Value: "16"}}
	noProbe := okRecord("p")
	noProbe.Probes = nil
	twice := okRecord("t", 1, 2, 3)
	twice.Probes = append(twice.Probes, twice.Probes[0])
	// A passing gate whose own evidence says it failed.
	contradicted := func(hash string, edit func(*results.Gate)) results.Record {
		r := okRecord(hash, 1, 2, 3)
		r.Gates = append(r.Gates, results.Gate{Kind: results.GateSanitizer, Pass: true, FirstDiff: -1, Detail: "memcheck: no errors"})
		edit(&r.Gates[len(r.Gates)-1])
		return r
	}
	cases := []struct {
		rec  results.Record
		want Problem
	}{
		{contradicted("sa", func(*results.Gate) {}), ""},
		{contradicted("sb", func(g *results.Gate) { g.Detail = "racecheck: no errors" }), ""},
		{contradicted("sc", func(g *results.Gate) { g.Detail = "memcheck: 915 error(s): Invalid __global__ read of size 8 bytes" }), ProblemContradiction},
		{contradicted("sd", func(g *results.Gate) { g.Detail = "racecheck: 0 error(s) and 75 warning-level hazard(s)" }), ProblemContradiction},
		{contradicted("se", func(g *results.Gate) { g.Detail = "memcheck: the run left no summary" }), ProblemContradiction},
		{contradicted("sf", func(g *results.Gate) { g.Detail = "" }), ProblemContradiction},
		{contradicted("sg", func(g *results.Gate) { g.Detail = "memchek: no errors" }), ProblemContradiction},
		{contradicted("sh", func(g *results.Gate) { g.Kind, g.Detail, g.DiffBytes, g.FirstDiff = results.GateBitwise, "", 12, 40 }), ProblemContradiction},
		{contradicted("si", func(g *results.Gate) { g.Kind, g.Detail, g.DiffBytes = results.GateBitwise, "", 1 }), ProblemContradiction},
		{contradicted("sj", func(g *results.Gate) { g.Kind, g.Detail, g.FirstDiff = results.GateBitwise, "", 0 }), ""},
		{contradicted("sk", func(g *results.Gate) { g.Kind, g.Detail, g.NaNs = results.GateTolerance, "", 3 }), ProblemContradiction},
		{okRecord("a", 3, 1, 2), ""},
		{okRecord("b"), ProblemNoSamples},
		{okRecord("c", 1, -2, 3), ProblemBadSample},
		{okRecord("d", 1, 0, 3), ProblemBadSample},
		{okRecord("e", 1, math.NaN(), 3), ProblemBadSample},
		{okRecord("i", 1, math.Inf(1), 3), ProblemBadSample},
		{okRecord("m", 1, 2), ProblemFewSamples},
		{failing, ProblemContradiction},
		{gateFailed, ""},
		{unfailed, ProblemContradiction},
		{noProbe, ProblemNoProbe},
		{twice, ProblemContradiction},
		{badStatus, ProblemUnknownStatus},
		{atZero, ProblemInvalidConfig},
		{beyond, ProblemInvalidConfig},
		{negSplits, ProblemInvalidConfig},
		{otherSplits, ProblemInvalidConfig},
	}
	for _, c := range cases {
		s := Check([]results.Record{c.rec}, nil, Options{MinSamples: 3})
		got := Problem("")
		if len(s.Excluded) > 0 {
			got = s.Excluded[0].Problem
		}
		if got != c.want || len(s.Records)+len(s.Excluded) != 1 {
			t.Errorf("record %s: problem %q, want %q", c.rec.Hash, got, c.want)
		}
	}
	// The summary is the samples', not the record's.
	s := Check([]results.Record{okRecord("a", 3, 1, 2)}, nil, Options{})
	if m := s.Records[0].Probes[0]; m.Summary.N != 3 || m.Summary.Median != 2000 || m.GBps != 0.5 {
		t.Errorf("summary %+v, GB/s %g: not recomputed from the samples", m.Summary, m.GBps)
	}
	// Failures count wherever they are, excluded records included.
	s = Check([]results.Record{failing, gateFailed, unfailed, okRecord("a", 1)}, nil, Options{})
	if len(s.Failures) != 3 {
		t.Errorf("failures %+v, want f, g and u", s.Failures)
	}
}

func TestEnvDiff(t *testing.T) {
	a := results.Env{Device: "NVIDIA H200", UUID: "GPU-1", Driver: "13.0", NVRTC: "13.0", ClockMHz: 1980, MemClockMHz: 3201, Host: "x"}
	b := a
	b.Host = "y"
	if d := EnvDiff(&a, &b); d != "" {
		t.Errorf("another host is no other machine: %q", d)
	}
	b.UUID, b.ClockMHz = "GPU-2", 1500
	if d := EnvDiff(&a, &b); d != "GPU GPU-1 vs GPU-2, SM clock 1980 vs 1500 MHz" {
		t.Errorf("EnvDiff = %q", d)
	}
}
