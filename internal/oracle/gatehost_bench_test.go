package oracle

import (
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/ktune/ktune/internal/abi"
)

// gateLengthsFor are the gate lengths the planner gives the default gates
// (1, 29, 52, 512, 1641) at SPLITS 32: the spec's plus the split boundaries.
var benchGateNKV = []int{1, 16, 29, 31, 32, 33, 52, 63, 64, 65, 512, 1641, 1663, 1665}

// benchLengths is probe's gateLengths: a ragged batch below nkv.
func benchLengths(nkv, batch int) []int {
	out := make([]int, batch)
	for b := range out {
		out[b] = max(1, nkv-b*nkv/(2*batch))
	}
	return out
}

// BenchmarkGateHostBefore is the host side of one compiled kernel's
// numeric gates in the call pattern they had before the multi-length
// oracle: one uniform base, every set from it (the peaked set at every
// length) and one oracle call per length. Measured on the tree before the
// change (2 shared cores, core-seconds per op): 0.31 at batch 1, 4.4 at
// batch 16.
func BenchmarkGateHostBefore(b *testing.B) {
	for _, batch := range []int{1, 16} {
		s := abi.Shape{Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: batch, Capacity: 131072}
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			rows := benchGateNKV[len(benchGateNKV)-1]
			defer reportCPU(b, cpuSeconds())
			for b.Loop() {
				base, err := Generate(s, rows, 1)
				if err != nil {
					b.Fatal(err)
				}
				for _, set := range Sets {
					var in *Inputs
					for _, nkv := range benchGateNKV {
						lengths := benchLengths(nkv, batch)
						if in == nil || set.PerLength() {
							r := rows
							if set.PerLength() {
								r = nkv
							}
							if in, err = FromBase(set, base, r, lengths, 32); err != nil {
								b.Fatal(err)
							}
						}
						if _, err := Reference(in, lengths); err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
	}
}

// BenchmarkGateHost is the host side of one compiled kernel's numeric
// gates with the multi-length oracle: one uniform base, every set from it
// and one oracle call per set for all its lengths (the peaked set, whose
// needles move with the length, one per length). capacity=1 adds what the
// gates need to cover every timed length: the uniform set tiled to the
// capacity, judged at the longest timed length (32768) and the capacity.
func BenchmarkGateHost(b *testing.B) {
	for _, batch := range []int{1, 16} {
		for _, capacity := range []bool{false, true} {
			s := abi.Shape{Heads: 28, KVHeads: 4, HeadDim: 128, KVDtype: "f16", Batch: batch, Capacity: 131072}
			b.Run(fmt.Sprintf("batch=%d/capacity=%v", batch, capacity), func(b *testing.B) {
				defer reportCPU(b, cpuSeconds())
				for b.Loop() {
					gateHost(b, s, capacity)
				}
			})
		}
	}
}

func gateHost(b *testing.B, s abi.Shape, capacity bool) {
	rows := benchGateNKV[len(benchGateNKV)-1]
	base, err := Generate(s, rows, 1)
	if err != nil {
		b.Fatal(err)
	}
	var launches [][]int
	for _, nkv := range benchGateNKV {
		launches = append(launches, benchLengths(nkv, s.Batch))
	}
	for _, set := range Sets {
		if set.PerLength() {
			for _, l := range launches {
				in, err := FromBase(set, base, slices.Max(l), l, 32)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := References(in, [][]int{l}); err != nil {
					b.Fatal(err)
				}
			}
			continue
		}
		in, err := FromBase(set, base, rows, nil, 32)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := References(in, launches); err != nil {
			b.Fatal(err)
		}
	}
	if capacity {
		in := *base
		in.Tiled = true
		if _, err := References(&in, [][]int{benchLengths(32768, s.Batch), benchLengths(s.Capacity, s.Batch)}); err != nil {
			b.Fatal(err)
		}
	}
}

// cpuSeconds is the process's user and system CPU time: the machine that
// runs the benchmark may be shared, and core-seconds per op say what the
// host's cores would do with it where wall time does not.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// reportCPU reports the core-seconds per op since start.
func reportCPU(b *testing.B, start float64) {
	b.ReportMetric((cpuSeconds()-start)/float64(b.N), "cpu-s/op")
}
