package report

// This file generates the results fixtures under testdata/: small,
// deterministic stand-ins for a real sweep (fixed seeds, a simple
// bandwidth model), so that the golden files exercise every column and
// flag. They are regenerated with `go test ./report/... -update` and a
// test checks the committed files still equal the generator's output.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/results"
)

var fixtureEnv = results.Env{
	Device: "NVIDIA H200", Arch: "sm_90", SMs: 132, L2Bytes: 60 << 20, MemBytes: 141 << 30,
	Driver: "13.0", NVRTC: "13.0", ClockMHz: 1980, MemClockMHz: 3201, ReadBWGBps: 4560, Ktune: "fixture",
}

var fixtureShape = results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 32768}

// fixtureVariant describes one configuration of the fixture: its
// efficiency (fraction of the read bandwidth it reaches at large nkv) and
// how its point ends.
type fixtureVariant struct {
	variant, twin string
	splits        int
	defines       []results.Define
	eff           float64 // fraction of read bandwidth reached
	landed        bool
	failGate      *results.Gate // the point fails this gate
	spill         int
	throttle      bool // the hot probe ran throttled at the largest nkv
	unconverged   bool // the graph probe ran out of budget at the smallest nkv
}

var fixtureNKV = []int{2048, 8192, 32768}

func kvBytes(s results.Shape, nkv int) int64 {
	elem := int64(2)
	if s.KVDtype == "f32" {
		elem = 4
	}
	return 2 * int64(s.Batch) * int64(nkv) * int64(s.KVHeads) * int64(s.HeadDim) * elem
}

// quantile is the linear-interpolation quantile of sorted xs.
func quantile(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i >= len(xs)-1 {
		return xs[len(xs)-1]
	}
	f := pos - float64(i)
	return xs[i]*(1-f) + xs[i+1]*f
}

func measurement(p results.Probe, samples []float64, bytes int64) results.Measurement {
	s := append([]float64(nil), samples...)
	sort.Float64s(s)
	med := quantile(s, 0.5)
	m := results.Measurement{
		Probe: p, SamplesNS: samples, Converged: true, Bytes: bytes,
		Summary: results.Summary{N: len(s), Median: med, Min: s[0], Max: s[len(s)-1],
			Q1: quantile(s, 0.25), Q3: quantile(s, 0.75)},
	}
	m.Summary.RelNoise = (m.Summary.Q3 - m.Summary.Q1) / med
	m.GBps = float64(bytes) / med
	m.PctBW = m.GBps / fixtureEnv.ReadBWGBps * 100
	return m
}

// samples draws n times around median with relative noise rel; rounded to
// 0.1 ns so that the JSON text is short and exact.
func samples(rng *rand.Rand, n int, median, rel float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Round(median*(1+rel*rng.NormFloat64())*10) / 10
	}
	return out
}

// fixtureRecord builds the record of one fixture configuration at nkv.
// scale multiplies every time (1 for the base fixture).
func fixtureRecord(rng *rand.Rand, v fixtureVariant, nkv int, scale float64, idx int) results.Record {
	defs := append([]results.Define{{Name: "HEAD_DIM", Value: "128"}, {Name: "KV_F16", Value: "1"},
		{Name: "SPLITS", Value: fmt.Sprint(v.splits)}}, v.defines...)
	defs = sortedDefines(defs)
	r := results.Record{
		Schema: results.SchemaVersion, Hash: fmt.Sprintf("%016x", rng.Uint64()),
		Time: time.Date(2026, 11, 30, 22, 0, idx, 0, time.UTC),
		Config: results.Config{
			Spec: "fixture", Variant: v.variant, Kernel: v.variant, Defines: defs, Shape: fixtureShape,
			NKV: nkv, Splits: v.splits, Grid: [3]int{v.splits, 28, 1}, Block: [3]int{32, 1, 1},
			CombineGrid: [3]int{28, 1, 1}, CombineBlock: [3]int{128, 1, 1}, BitwiseWith: v.twin,
		},
		Env: fixtureEnv, Status: results.StatusOK, Landed: v.landed,
		Compile: results.Compile{Seconds: 0.25},
		Resources: []results.Resource{
			{Kernel: "attn_partial", Registers: 40 + v.splits/4, LocalBytes: v.spill, MaxBlocksPerSM: 32, Occupancy: 0.5, LoadsBeforeChain: 4},
			{Kernel: "attn_combine", Registers: 24, MaxBlocksPerSM: 16, Occupancy: 1},
		},
		WallSec: 3,
	}
	kind := results.GateTolerance
	if v.twin != "" {
		kind = results.GateBitwise
	}
	for _, g := range []int{1, 29, 1641} {
		r.Gates = append(r.Gates, results.Gate{Kind: kind, NKV: g, Pass: true, Seed: 1, Twin: v.twin, FirstDiff: -1, MaxAbs: 1e-4})
	}
	if v.failGate != nil {
		r.Gates = append(r.Gates, *v.failGate)
		r.Status = results.StatusGateFailed
		return r
	}
	bytes := kvBytes(fixtureShape, nkv)
	// A launch costs ~4 µs; the rest is streaming K/V at eff × bandwidth,
	// less efficient when few splits leave SMs idle at short contexts.
	cold := 4000 + float64(bytes)/(fixtureEnv.ReadBWGBps*v.eff)
	for _, p := range probeOrder {
		med := cold
		switch p {
		case results.ProbeHot:
			med = cold * 0.8 // K/V partly in L2
		case results.ProbeGraph:
			med = cold*0.8 - 1500 // launch overhead amortised
		}
		m := measurement(p, samples(rng, 15, med*scale, 0.01), bytes)
		if p != results.ProbeCold {
			m.Batch = 20
		}
		if v.throttle && p == results.ProbeHot && nkv == fixtureNKV[len(fixtureNKV)-1] {
			m.Throttled = 3
		}
		if v.unconverged && p == results.ProbeGraph && nkv == fixtureNKV[0] {
			m.Converged = false
			m.Note = "budget spent before the noise bound"
		}
		r.Probes = append(r.Probes, m)
	}
	return r
}

func baseVariants() []fixtureVariant {
	return []fixtureVariant{
		{variant: "r4", splits: 32, eff: 0.05, landed: true},
		{variant: "d2", twin: "r4", splits: 32, defines: []results.Define{{Name: "NR", Value: "4"}}, eff: 0.09},
		{variant: "d2", twin: "r4", splits: 64, defines: []results.Define{{Name: "NR", Value: "4"}}, eff: 0.16, throttle: true},
		{variant: "tc", splits: 16, eff: 0.4, spill: 16, unconverged: true},
		{variant: "tc", splits: 64, eff: 0.3, failGate: &results.Gate{Kind: results.GateTolerance, NKV: 1641, Seed: 1,
			MaxAbs: 3.1e-2, MaxRel: 0.41, NMSE: 2.2e-5, FirstDiff: -1, Detail: "worst at head 5, dim 17"}},
	}
}

// fixtureRecords is the main fixture: five configurations × three nkv.
// scale and seed produce the "new" side of compare tests; d2Scale scales
// only d2 (the change under comparison).
func fixtureRecords(seed uint64, d2Scale float64) []results.Record {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []results.Record
	for _, v := range baseVariants() {
		for _, nkv := range fixtureNKV {
			s := 1.0
			if v.variant == "d2" {
				s = d2Scale
			}
			out = append(out, fixtureRecord(rng, v, nkv, s, len(out)))
		}
	}
	return out
}

// gateRecords is the gate fixture: the landed r4 and three candidates
// measured against it. "slow" is 10% slower, "onebyte" differs from its
// twin by one byte at nkv=29, "same" is r4 again within noise.
func gateRecords() []results.Record {
	rng := rand.New(rand.NewPCG(11, 13))
	var out []results.Record
	vs := []struct {
		v     fixtureVariant
		scale float64
	}{
		{fixtureVariant{variant: "r4", splits: 32, eff: 0.05, landed: true}, 1},
		{fixtureVariant{variant: "slow", twin: "r4", splits: 32, eff: 0.05}, 1.10},
		{fixtureVariant{variant: "onebyte", twin: "r4", splits: 32, eff: 0.05, failGate: &results.Gate{
			Kind: results.GateBitwise, NKV: 29, Seed: 1, Twin: "r4", DiffBytes: 1, FirstDiff: 4242, Buffer: "out"}}, 1},
		{fixtureVariant{variant: "same", twin: "r4", splits: 32, eff: 0.05}, 1},
		{fixtureVariant{variant: "same", twin: "r4", splits: 64, eff: 0.05}, 1.3},
	}
	for _, x := range vs {
		for _, nkv := range fixtureNKV {
			out = append(out, fixtureRecord(rng, x.v, nkv, x.scale, len(out)))
		}
	}
	return out
}

func encodeJSONL(recs []results.Record) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for i := range recs {
		if err := enc.Encode(&recs[i]); err != nil {
			panic(err)
		}
	}
	return b.Bytes()
}

// fixtureFiles maps each fixture file to its generated content.
func fixtureFiles() map[string][]byte {
	return map[string][]byte{
		"fixture.jsonl":     encodeJSONL(fixtureRecords(1, 1)),
		"fixture_new.jsonl": encodeJSONL(fixtureRecords(2, 0.9)),
		"gate.jsonl":        encodeJSONL(gateRecords()),
	}
}

func TestFixturesUpToDate(t *testing.T) {
	for name, want := range fixtureFiles() {
		path := filepath.Join("testdata", name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./report/... -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from its generator; run go test ./report/... -update", path)
		}
	}
}
