package dispatch

import (
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/ktune/ktune/internal/results"
)

// The fixture is a small sweep made up by a deterministic function: two
// batch sizes of one shape, four configurations, one of which fails its
// gate while being the fastest, and ties built to be ties.

var (
	fixShape1  = results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 1, Capacity: 131072}
	fixShape16 = results.Shape{Name: "7b", Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: 16, Capacity: 32768}
	fixEnv     = results.Env{Device: "NVIDIA H200", Arch: "sm_90", SMs: 132, L2Bytes: 60 << 20, Driver: "13.0", NVRTC: "13.0", ReadBWGBps: 4560}
)

// A fixConfig is one configuration of the fixture.
type fixConfig struct {
	variant, kernel string
	nr, splits      int
	landed          bool
	gateFailed      bool
}

var (
	cfgA = fixConfig{variant: "r4", kernel: "r4", splits: 32, landed: true}
	cfgB = fixConfig{variant: "d2", kernel: "d2", nr: 4, splits: 32}
	cfgC = fixConfig{variant: "d2", kernel: "d2", nr: 4, splits: 64}
	// cfgF is the fastest everywhere and fails its tolerance gate.
	cfgF = fixConfig{variant: "d2x", kernel: "kernels/d2x.cu", nr: 8, splits: 64, gateFailed: true}
)

// fixSamples is one configuration's cold samples at one nkv.
type fixSamples struct {
	cfg fixConfig
	ns  []float64
}

const fixN = 15 // samples per probe: enough for the U test to reach p < 0.05

// noisy returns fixN sorted samples spread about ±1% around median, whose
// middle one is median, from a seeded generator.
func noisy(median float64, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 0x6b74756e65))
	out := make([]float64, fixN)
	for i := range out {
		out[i] = median * (1 + 0.02*(rng.Float64()-0.5))
	}
	slices.Sort(out)
	mid := out[fixN/2]
	for i := range out {
		out[i] *= median / mid
	}
	return out
}

// tieBelow and tieAbove return the samples of a configuration that is the
// same as base within noise but whose median is a little lower (higher):
// only the middle sample moves, so the rank test sees two nearly
// identical sets while a comparison of medians alone would pick a side.
func tieBelow(base []float64) []float64 {
	s := slices.Clone(base)
	s[fixN/2] = (s[fixN/2-1] + s[fixN/2]) / 2
	return s
}

func tieAbove(base []float64) []float64 {
	s := slices.Clone(base)
	s[fixN/2] = (s[fixN/2] + s[fixN/2+1]) / 2
	return s
}

// fixturePlan is the fixture's measurements (µs medians, before noise):
//
//	batch 1   nkv: 512      2048  8192  16384        32768  65536  131072
//	r4 SPLITS=32 (landed): 10  20    60    110          200    –      800
//	d2 NR=4 SPLITS=32:     ~r4↓ 15   45    80           150    –      600
//	d2 NR=4 SPLITS=64:     12   18   40    ~(d2/32)↑    100    –      300
//	d2x (gate failed):      5    5    5     5             5     5        5
//
//	batch 16  nkv: 1024  8192
//	r4 SPLITS=32:  400   3000
//	d2 NR=4 SPLITS=32:  300   2000
//	d2 NR=4 SPLITS=64:  ~(d2/32)↓ at both
//	d2x (ok, a failing gate): 100  100
func fixturePlan() map[results.Shape]map[int][]fixSamples {
	us := func(v float64, seed uint64) []float64 { return noisy(v*1e3, seed) }
	b1 := map[int][]fixSamples{}
	a512 := us(10, 1)
	b1[512] = []fixSamples{{cfgA, a512}, {cfgB, tieBelow(a512)}, {cfgC, us(12, 2)}}
	b1[2048] = []fixSamples{{cfgA, us(20, 3)}, {cfgB, us(15, 4)}, {cfgC, us(18, 5)}}
	b1[8192] = []fixSamples{{cfgA, us(60, 6)}, {cfgB, us(45, 7)}, {cfgC, us(40, 8)}}
	b16384 := us(80, 9)
	b1[16384] = []fixSamples{{cfgA, us(110, 10)}, {cfgB, b16384}, {cfgC, tieAbove(b16384)}}
	b1[32768] = []fixSamples{{cfgA, us(200, 11)}, {cfgB, us(150, 12)}, {cfgC, us(100, 13)}}
	b1[65536] = nil
	b1[131072] = []fixSamples{{cfgA, us(800, 14)}, {cfgB, us(600, 15)}, {cfgC, us(300, 16)}}
	for n := range b1 {
		b1[n] = append(b1[n], fixSamples{cfgF, us(5, uint64(n))})
	}

	b16 := map[int][]fixSamples{}
	for i, n := range []int{1024, 8192} {
		s := uint64(100 + 10*i)
		base := us([]float64{300, 2000}[i], s)
		b16[n] = []fixSamples{
			{cfgA, us([]float64{400, 3000}[i], s+1)},
			{cfgB, base},
			{cfgC, tieBelow(base)},
			{cfgF, us(100, s+2)},
		}
	}
	return map[results.Shape]map[int][]fixSamples{fixShape1: b1, fixShape16: b16}
}

// fixture returns the plan as records, in a fixed order.
func fixture() []results.Record {
	plan := fixturePlan()
	var recs []results.Record
	for _, shape := range []results.Shape{fixShape1, fixShape16} {
		byNKV := plan[shape]
		nkvs := make([]int, 0, len(byNKV))
		for n := range byNKV {
			nkvs = append(nkvs, n)
		}
		slices.Sort(nkvs)
		for _, n := range nkvs {
			for _, s := range byNKV[n] {
				recs = append(recs, fixRecord(shape, n, s))
			}
		}
	}
	return recs
}

func fixRecord(shape results.Shape, nkv int, s fixSamples) results.Record {
	c := s.cfg
	defs := []results.Define{{Name: "SPLITS", Value: itoa(c.splits)}}
	if c.nr != 0 {
		defs = []results.Define{{Name: "NR", Value: itoa(c.nr)}, defs[0]}
	}
	rec := results.Record{
		Schema: results.SchemaVersion,
		Hash:   c.variant + "/" + itoa(c.nr) + "/" + itoa(c.splits) + "/" + itoa(shape.Batch) + "/" + itoa(nkv),
		Config: results.Config{
			Spec: "fixture", Variant: c.variant, Kernel: c.kernel, Defines: defs,
			Shape: shape, NKV: nkv, Splits: c.splits,
			Grid: [3]int{c.splits, shape.Heads, shape.Batch}, Block: [3]int{32, 1, 1},
			CombineGrid: [3]int{shape.Heads, shape.Batch, 1}, CombineBlock: [3]int{shape.HeadDim, 1, 1},
		},
		Env:    fixEnv,
		Status: results.StatusOK,
		Gates:  []results.Gate{{Kind: results.GateTolerance, NKV: 512, Pass: true}},
		Landed: c.landed,
	}
	if c.gateFailed {
		rec.Gates[0].Pass = false
		// At batch 1 the record says so in its status, as the sweep
		// writes it; at batch 16 only the gate says so. Both must keep
		// the configuration out, and both carry timings that would win.
		if shape.Batch == 1 {
			rec.Status = results.StatusGateFailed
		}
	}
	if s.ns == nil {
		return rec
	}
	graph := make([]float64, len(s.ns))
	for i, v := range s.ns {
		graph[i] = v * 0.8
	}
	rec.Probes = []results.Measurement{
		{Probe: results.ProbeCold, SamplesNS: s.ns, Summary: summary(s.ns), Converged: true},
		{Probe: results.ProbeGraph, SamplesNS: graph, Summary: summary(graph), Converged: true, Batch: 20},
	}
	return rec
}

// summary is written here, not taken from the package: the fixture's
// medians must not come from the code under test.
func summary(ns []float64) results.Summary {
	s := slices.Clone(ns)
	slices.Sort(s)
	return results.Summary{N: len(s), Median: s[len(s)/2], Min: s[0], Max: s[len(s)-1]}
}

func itoa(v int) string { return strconv.Itoa(v) }
