package probe

import (
	"context"
	"fmt"
	"io"
	"syscall"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/variants"
)

// nullDevice is the fake device with the device's share taken out: no
// memory behind the workspace, launches that compute nothing, reads of
// zeros, digests that never change. What the gates then cost is the
// host's: drawing the inputs, the oracle, the comparisons, the record of
// the uploads, the guard and stale bookkeeping. The verdicts are
// meaningless (out reads back as zeros).
type nullDevice struct{ *fakeDevice }

func (n nullDevice) allocWorkspace(l layout) (*workspace, error) {
	w := &workspace{l: l}
	for _, e := range w.table() {
		if e.n > 0 {
			*e.p = n.next + guardBytes
			n.fakeDevice.next += cuda.DevPtr(e.n+2*guardBytes+0xffff) &^ 0xffff
		}
	}
	w.initInputs()
	return w, nil
}

// write counts the writes: on a GPU each is a synchronous copy and two
// stream waits, tens of microseconds however small.
func (n nullDevice) write(dst cuda.DevPtr, _ []byte) error {
	n.written = append(n.written, dst)
	return nil
}

// copyAsync and copyList count the copies: each copyAsync is a driver
// call, a copy list one launch however long.
func (n nullDevice) copyAsync(_, _ cuda.DevPtr, _ int64) error {
	n.copies++
	return nil
}
func (n nullDevice) copyList(cs []devCopy) error {
	n.lists = append(n.lists, len(cs))
	return nil
}
func (n nullDevice) read(b []byte, _ cuda.DevPtr) error {
	clear(b)
	return nil
}
func (n nullDevice) fill32(cuda.DevPtr, uint32, int64) error { return nil }
func (n nullDevice) digest(_ cuda.DevPtr, size, seg int64) ([]uint64, error) {
	n.digested += size
	return make([]uint64, (size+seg-1)/seg), nil
}
func (n nullDevice) holeCopy(p cuda.DevPtr, _ int64) (cuda.DevPtr, func(), error) {
	return p, func() {}, nil
}
func (n nullDevice) launch(*kernelPair, *results.Config, geometry, *workspace) error {
	n.pairs++
	return nil
}
func (n nullDevice) endCapture() (graph, error) {
	n.capturing = nil
	return nullGraph{}, nil
}

type nullGraph struct{}

func (nullGraph) launch() error { return nil }
func (nullGraph) destroy()      {}

// BenchmarkGateHost is the host's share of the gates per compiled kernel
// for the frontier's shape, 28/4/128 f16 at capacity 131072, at batch 1
// and 16: d2's first point of experiments/h200-fused.yaml, gate lengths and
// replay lengths as the plan gives them. cold is the first kernel of a
// shape on a backend; warm a later kernel with the same gate lengths (a
// sweep's other variants of that SPLITS), which finds the inputs and
// references the first one drew (inputcache.go). The splits cases are a
// sweep's later kernel of other SPLITS, hence other gate lengths (the
// plan puts them across each kernel's split boundaries): the tunings of
// experiments/h200-frontier3.yaml at batch 16, b16-s8-w4-pdl then
// b16-f1-pf, contiguous and paged (PAGE_SIZE 16 and 64); only the second
// kernel is measured. Targets on the H200 host's 16 cores: 1 s at batch 1,
// 2 s at batch 16.
//
//	go test ./probe -run '^$' -bench GateHost -benchtime 1x
func BenchmarkGateHost(b *testing.B) {
	fused := benchPlan(b, "../experiments/h200-fused.yaml")
	for _, batch := range []int{1, 16} {
		p := benchPoint(b, fused, "d2", batch, 0)
		for _, warm := range []bool{false, true} {
			name := p.Config.Shape.Name + "/cold"
			var first *plan.Point
			if warm {
				name, first = p.Config.Shape.Name+"/warm", p
			}
			b.Run(name, func(b *testing.B) { benchGates(b, first, p) })
		}
	}
	f3 := benchPlan(b, "../experiments/h200-frontier3.yaml")
	for _, page := range []int{0, 16, 64} {
		first, later := "b16-s8-w4-pdl", "b16-f1-pf"
		name := "b16/splits"
		if page > 0 {
			first, later, name = first+"-pg", later+"-pg", fmt.Sprintf("b16/splits-paged%d", page)
		}
		p0, p1 := benchPoint(b, f3, first, 16, page), benchPoint(b, f3, later, 16, page)
		b.Run(name, func(b *testing.B) { benchGates(b, p0, p1) })
	}
}

// benchPlan is the plan of a committed spec for sm_90.
func benchPlan(b *testing.B, path string) *plan.Plan {
	s, err := spec.Load(path, variants.Builtins())
	if err != nil {
		b.Fatal(err)
	}
	pl, err := plan.Build(s, "sm_90")
	if err != nil {
		b.Fatal(err)
	}
	return pl
}

// benchPoint is the plan's first point of the variant on a 28/4 f16 shape
// of the batch without attention options, at the page size (0: contiguous).
func benchPoint(b *testing.B, pl *plan.Plan, variant string, batch, page int) *plan.Point {
	for _, q := range pl.Points {
		s := q.Config.Shape
		if q.Config.Variant == variant && s.Batch == batch && s.Heads == 28 && s.KVType() == kvtype.F16 &&
			s.Attention == (abi.Attention{}) && q.PageSize == page {
			return q
		}
	}
	b.Fatalf("no %s point at batch %d, page size %d", variant, batch, page)
	return nil
}

// benchGates measures the gates of p's kernel on a fresh backend, after
// those of first's (nil: p is the first kernel of its shape).
func benchGates(b *testing.B, first, p *plan.Point) {
	var inputs, oracleT, cpu, writes, copies, listed, digested float64
	for range b.N {
		bk := &Backend{log: io.Discard, loaded: map[string]*kernelPair{}, gates: map[string]*gateVerdict{},
			env: results.Env{Device: "null", SMs: 132, L2Bytes: 50 << 20, ClockMHz: 1980, Arch: "sm_90"}}
		bk.haveBW = true
		if first != nil {
			b.StopTimer()
			gateHost(b, bk, first)
			b.StartTimer()
		}
		cpu0 := cpuSeconds()
		r := gateHost(b, bk, p)
		cpu += cpuSeconds() - cpu0
		f := bk.gpu.(nullDevice).fakeDevice
		writes += float64(len(f.written))
		copies += float64(f.copies)
		digested += float64(f.digested)
		for _, n := range f.lists {
			listed += float64(n)
		}
		inputs += r.tInputs.Seconds()
		oracleT += r.tOracle.Seconds()
		b.ReportMetric(float64(r.pairs), "pairs")
	}
	// Core-seconds: on a shared machine the wall time says little of
	// what the host's 16 cores would take.
	b.ReportMetric(cpu/float64(b.N), "cpu-s/op")
	b.ReportMetric(inputs/float64(b.N), "s-inputs")
	b.ReportMetric(oracleT/float64(b.N), "s-oracle")
	b.ReportMetric(writes/float64(b.N), "writes/op")
	// Device-to-device copies: copyAsync's driver calls, and the copies
	// that ride in copy lists.
	b.ReportMetric(copies/float64(b.N), "copies/op")
	b.ReportMetric(listed/float64(b.N), "listed/op")
	// The read-only checks' digests read these bytes on the device.
	b.ReportMetric(digested/1e9/float64(b.N), "digest-GB/op")
}

// gateHost runs the gates of one compiled kernel of p on a null device
// behind bk, as a kernel of its own (no GateKey: nothing of an earlier
// kernel's verdict is copied).
func gateHost(b *testing.B, bk *Backend, p *plan.Point) *pointRun {
	f := newFakeDevice()
	bk.gpu = nullDevice{f}
	q := *p
	q.Probes, q.GateKey = nil, ""
	r := &pointRun{session: session{b: bk, p: &q}, rec: &results.Record{}}
	var err error
	if r.l, err = pointLayout(&q); err != nil {
		b.Fatal(err)
	}
	r.k = &kernelPair{build: &build{}, fns: map[string]*cuda.Function{}}
	f.kernels[r.k] = &fakeKernel{}
	r.g = pointGeometry(&q)
	if r.ws, err = bk.gpu.allocWorkspace(r.l); err != nil {
		b.Fatal(err)
	}
	if _, err := r.gate(context.Background()); err != nil {
		b.Fatal(err)
	}
	return r
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
