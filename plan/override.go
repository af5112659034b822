package plan

import (
	"io"
	"slices"

	"github.com/ktune/ktune/internal/results"
)

// An Override changes what points measure, against their spec: for
// cross-checks with an outside instrument (running under ncu, say) where
// the gates or some probes would only add launches to the profile. The
// builder applies it to each point before hashing, so an overridden point
// gets its hash through the one path every point's hash takes (keys): its
// record lacks gates or probes a full point has, so it must not stand in
// for the full point when the directory is swept again without it.
type Override struct {
	Probes []results.Probe // non-nil: measure these probes only
	// NoGates gates at one length only (the longest of the point's gate
	// lengths), without the other lengths, the replay gate and the bitwise
	// twin: a point is never measured ungated. Not at the capacity: at
	// batch 16, 64/8 heads and 131072 rows the inputs are 8.6 GB and the
	// float64 oracle some 70 GFLOP per input set, far more than every gate
	// length together (a timing screen on the H200 gated that way ran no
	// point in two minutes).
	NoGates bool
	// SMs and BlocksPerSM are the values of the device symbols sms and
	// blocks_per_sm that grid expressions may read (devicesyms.go); 0:
	// the architecture's default SM count, and DefaultBlocksPerSM.
	SMs, BlocksPerSM int
	// RunBuilds lets the plan run a variant's build command (spec.Build)
	// when BuildDir holds no artifact for it; BuildDir is the build
	// cache (empty: builds are neither run nor looked up).
	RunBuilds bool
	BuildDir  string
	// BuildLog, when set, hears when a build starts and how long it took:
	// an engine's build can run for minutes (vLLM's paged_attention_v2.cu
	// instantiates every head size, block size and cache type: nearly
	// 8 minutes of nvcc on an H100 host), and a command silent that long
	// reads as hung.
	BuildLog io.Writer
}

// apply changes one point before it is hashed.
func (o Override) apply(p *Point) {
	if o.Probes != nil {
		p.Probes = slices.Clone(o.Probes)
	}
	if o.NoGates {
		var one []int
		if len(p.GateNKV) > 0 {
			one = []int{slices.Max(p.GateNKV)}
		}
		p.GateNKV, p.Twin, p.CaptureNKV, p.ReplayNKV = one, nil, 0, nil
	}
}

// WithSamples returns a copy of p that takes exactly n samples (at most the
// spec's maximum), hashed through keys like every point: its record has
// fewer samples than a full one and must never stand in for it. The
// screening rounds of a search measure such copies.
func (p *Point) WithSamples(n int) *Point {
	q := *p
	if q.Measure.MaxSamples > 0 {
		n = min(n, q.Measure.MaxSamples)
	}
	q.Measure.MinSamples, q.Measure.MaxSamples = n, n
	b := builder{arch: p.arch}
	q.GateKey, q.Hash = b.keys(&q)
	return &q
}
