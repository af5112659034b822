package probe

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
)

// withBatch sets a fake point's batch and the grid dimensions that read it.
func withBatch(p *plan.Point, n int) *plan.Point {
	p.Config.Shape.Batch = n
	p.Launches[0].Grid[2], p.Launches[1].Grid[1] = n, n
	return p
}

// withSplits sets a fake point's SPLITS (and, when size > 0, its
// SPLITSIZE define: rows per split, fixed).
func withSplits(p *plan.Point, splits, size int) *plan.Point {
	p.Config.Splits = splits
	p.Config.Defines = abi.Defines{{Name: "SPLITS", Value: strconv.Itoa(splits)}}
	if size > 0 {
		p.Config.Defines = append(p.Config.Defines, abi.Define{Name: "SPLITSIZE", Value: strconv.Itoa(size)})
	}
	p.Launches[0].Grid[0] = splits
	return p
}

// invariantPoint is a fake point of batch 4 whose invariance gate checks
// kinds, with the contexts the plan gives (plan.Invariance): the kernel
// at batches 1 and 2, and the given arms' points at batch 4.
func invariantPoint(variant string, splits, size int, kinds []spec.Invariance, arms ...*plan.Point) *plan.Point {
	p := withSplits(withBatch(fakePoint(variant, 100), 4), splits, size)
	p.Probes = nil
	iv := &plan.Invariance{Kinds: kinds}
	if slices.Contains(kinds, spec.InvariantBatch) {
		for _, n := range []int{1, 2} {
			q := withSplits(withBatch(fakePoint(variant, 100), n), splits, size)
			q.Config.Shape.Name = fmt.Sprintf("tiny/batch%d", n)
			iv.Batches = append(iv.Batches, q)
		}
	}
	for _, a := range arms {
		iv.Arms = append(iv.Arms, a)
		iv.ArmNames = append(iv.ArmNames, a.Config.Variant)
	}
	p.Invariance = iv
	p.GateKey += "+invariance"
	return p
}

// armPoint is another arm's point at the invariant point's shape.
func armPoint(variant string, splits, size int) *plan.Point {
	return withSplits(withBatch(fakePoint(variant, 100), 4), splits, size)
}

// invarianceGates returns the record's invariance verdicts.
func invarianceGates(rec results.Record) []results.Gate {
	var out []results.Gate
	for _, g := range rec.Gates {
		if g.Kind == results.GateInvariance {
			out = append(out, g)
		}
	}
	return out
}

var allInvariances = []spec.Invariance{spec.InvariantBatch, spec.InvariantPosition, spec.InvariantArm}

// TestInvarianceDefectsCaught: each kernel whose bits follow a context
// fails the invariance gate, which names the sequence, the two contexts
// and the element, and nothing else; without the gate the same kernel
// passes every other gate.
func TestInvarianceDefectsCaught(t *testing.T) {
	for _, c := range []struct {
		name  string
		m     fakeModel
		kinds []spec.Invariance
		arm   *plan.Point // another arm, correct, of another split count
		want  []string    // in the failure's detail
	}{
		{"split count follows the batch", fakeModel{splitsByBatch: true}, []spec.Invariance{spec.InvariantBatch},
			nil, []string{"batch 1 (alone)", "batch 2 (composition"}},
		{"reduction indexed by batch position", fakeModel{splitsByPos: true}, []spec.Invariance{spec.InvariantPosition},
			nil, []string{"batch 4 (composition 0), position 0", ", position 1"}},
		{"arms of different split counts", fakeModel{}, []spec.Invariance{spec.InvariantArm},
			armPoint("arm4", 4, 0), []string{"arm arm4"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = c.m
			var arms []*plan.Point
			if c.arm != nil {
				arms = append(arms, c.arm)
			}
			rec := run(t, fakeBackend(t, f), invariantPoint(c.name, 8, 0, c.kinds, arms...))
			if got := failedKinds(rec.Gates); rec.Status != results.StatusGateFailed || !slices.Equal(got, []string{"invariance/uniform"}) {
				t.Fatalf("status %s, failed %v: want only the invariance gate failed", rec.Status, got)
			}
			g := invarianceGates(rec)[0]
			for _, w := range append([]string{"sequence ", "nkv ", "first at element", "head"}, c.want...) {
				if !strings.Contains(g.Detail, w) {
					t.Errorf("detail %q does not say %q", g.Detail, w)
				}
			}
			if g.Buffer != "out" || g.FirstDiff < 0 || g.DiffBytes == 0 {
				t.Errorf("gate %+v", g)
			}

			// The same kernel without the gate passes: no other gate sees it.
			p := invariantPoint(c.name, 8, 0, nil, arms...)
			p.Invariance, p.GateKey = nil, "gate-plain"
			if rec := run(t, fakeBackend(t, f), p); rec.Status != results.StatusOK {
				t.Errorf("without the invariance gate: %s (%v)", rec.Status, failedKinds(rec.Gates))
			}
		})
	}
}

// TestInvarianceFixedSplitSize: a kernel of a fixed split size passes
// every kind of context, arms of other split counts of the same size
// included, and the gate reports its cost; the same arms by split count
// fail.
func TestInvarianceFixedSplitSize(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	pairs := f.pairs
	rec := run(t, b, invariantPoint("fixed", 16, 16, allInvariances, armPoint("fixed32", 32, 16)))
	if rec.Status != results.StatusOK {
		t.Fatalf("status %s: %s", rec.Status, rec.Error)
	}
	gs := invarianceGates(rec)
	if len(gs) != 1 || !gs[0].Pass || !strings.Contains(gs[0].Detail, "batch, position, arm") || !strings.Contains(gs[0].Detail, "launch pairs") {
		t.Fatalf("invariance verdicts %+v", gs)
	}
	// Bounded: per probe sequence (3) batches 1 and 2, 4 positions, 1 arm.
	if n := f.pairs - pairs; n > 200 {
		t.Errorf("%d launch pairs", n)
	}
	t.Logf("%s", gs[0].Detail)
	// A kernel split by count instead: its arms disagree.
	rec = run(t, fakeBackend(t, newFakeDevice()), invariantPoint("bycount", 16, 0, allInvariances, armPoint("bycount32", 32, 0)))
	if rec.Status != results.StatusGateFailed || !strings.Contains(rec.Error, "arm bycount32") {
		t.Errorf("split by count across arms of 16 and 32 splits: %s: %s", rec.Status, rec.Error)
	}
}

// TestLaunchCountCaught: a kernel that corrupts one launch in 300 (a
// counter that wraps) passes every gate before the probes and the timed
// gate's last launches, and fails the launch-count check, which names the
// launch; a correct kernel passes it, and the long run runs once per
// compiled kernel.
func TestLaunchCountCaught(t *testing.T) {
	f := newFakeDevice()
	f.models["wraps"] = fakeModel{corruptEvery: 300}
	b := fakeBackend(t, f)
	b.opts.LaunchRun = launchRunTotal
	rec := run(t, b, fakePoint("wraps", 100))
	if got := failedKinds(rec.Gates); rec.Status != results.StatusGateFailed || !slices.Equal(got, []string{string(results.GateLaunches) + "/"}) {
		t.Fatalf("status %s, failed %v: want only the launch-count check", rec.Status, got)
	}
	for _, g := range rec.Gates {
		if g.Kind == results.GateLaunches && !strings.Contains(g.Detail, "of a run of") {
			t.Errorf("detail %q does not name the launch", g.Detail)
		}
	}

	good := fakeBackend(t, f)
	good.opts.LaunchRun = 400
	rec = run(t, good, fakePoint("good", 100))
	var detail string
	for _, g := range rec.Gates {
		if g.Kind == results.GateLaunches {
			detail = g.Detail
		}
	}
	if rec.Status != results.StatusOK || !strings.Contains(detail, "a run of") {
		t.Fatalf("good kernel: %s, launch-count detail %q", rec.Status, detail)
	}
	pairs := f.pairs
	rec = run(t, good, fakePoint("good", 29))
	if rec.Status != results.StatusOK || f.pairs-pairs > 400/launchRunMinFrac {
		t.Errorf("second point of the group: %s after %d pairs: the long run ran again", rec.Status, f.pairs-pairs)
	}
}

// TestLaunchSampled: the samples read between are few, spread over the
// whole run.
func TestLaunchSampled(t *testing.T) {
	var got []int
	for n := 1; n <= 1000; n++ {
		if launchSampled(n) {
			got = append(got, n)
		}
	}
	if !slices.Equal(got, []int{1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610, 987}) {
		t.Errorf("sampled %v", got)
	}
}

// TestLaunchCountSampled: a kernel wrong in the hot probe's first samples
// and right in its last is seen by the outputs read between samples, and
// by nothing else after the probes (the long run is the group's, done).
func TestLaunchCountSampled(t *testing.T) {
	f := newFakeDevice()
	// Warm-up: 2 samples of 3 launches; then the samples, 3 launches each.
	f.models["k"] = fakeModel{corruptWindow: [2]int{7, 13}}
	r := probeRun(t, f, sampling)
	r.b.gates[r.p.GateKey] = &gateVerdict{pass: true, longRun: true}
	m, err := r.probe(context.Background(), results.ProbeHot)
	if err != nil || len(m.SamplesNS) != 5 {
		t.Fatalf("%d samples, %v", len(m.SamplesNS), err)
	}
	if len(r.sampled) != 2*4 {
		t.Errorf("%d outputs read, want both sets after samples 1, 2, 3 and 5", len(r.sampled))
	}
	gs, err := r.launchCountGates()
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || gs[0].Pass || gs[0].Kind != results.GateLaunches || !strings.Contains(gs[0].Detail, "after sample 1") {
		t.Fatalf("verdicts %+v", gs)
	}
	// The last sample's launches are right: the timed gate's view.
	if g, err := r.readTimed(results.ProbeHot); err != nil || len(g) != 0 {
		t.Fatalf("last launches: %+v, %v", g, err)
	}
	fresh, err := r.freshTimed()
	if err != nil || len(fresh) != 1 || !fresh[0].Pass {
		t.Errorf("timed gate %+v, %v: should not see it", fresh, err)
	}
}

// TestInvariancePaged: in a paged pool (shuffled pages, sequences of the
// smaller batches through the pool's own pages), a kernel that reads the
// block table passes, and one whose split count follows the batch fails.
func TestInvariancePaged(t *testing.T) {
	for _, c := range []struct {
		name string
		m    fakeModel
		want results.Status
	}{{"paged", fakeModel{}, results.StatusOK}, {"paged by batch", fakeModel{splitsByBatch: true}, results.StatusGateFailed}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = c.m
			paged := func(q *plan.Point) *plan.Point {
				q.IO = abi.ABIIO
				q.IO.KVLayout, q.IO.Paging = abi.Paged, abi.Paging{PageSize: "16", Order: abi.PageNHD, Pages: abi.PagesShuffled}
				q.PageSize = 16
				return q
			}
			p := paged(invariantPoint(c.name, 8, 0, allInvariances[:2]))
			for _, q := range p.Invariance.Batches {
				paged(q)
			}
			rec := run(t, fakeBackend(t, f), p)
			if rec.Status != c.want || len(invarianceGates(rec)) == 0 {
				t.Fatalf("status %s, failed %v, invariance %+v", rec.Status, failedKinds(rec.Gates), invarianceGates(rec))
			}
		})
	}
}

// TestInvarianceLSE: a kernel whose out is invariant and whose declared
// lse is not fails on lse; the same kernel with a right lse passes.
func TestInvarianceLSE(t *testing.T) {
	for _, c := range []struct {
		name string
		o    fakeOptions
		want results.Status
	}{{"lse good", fakeOptions{}, results.StatusOK}, {"lse by batch", fakeOptions{lseByBatch: true}, results.StatusGateFailed}} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = fakeModel{options: &c.o}
			p := withBatch(optionPoint(c.name), 4)
			p.Probes = nil
			p.Invariance = &plan.Invariance{Kinds: []spec.Invariance{spec.InvariantBatch},
				Batches: []*plan.Point{withBatch(optionPoint(c.name), 1), withBatch(optionPoint(c.name), 2)}}
			p.GateKey += "+invariance"
			rec := run(t, fakeBackend(t, f), p)
			gs := invarianceGates(rec)
			if rec.Status != c.want || len(gs) != 1 {
				t.Fatalf("status %s, failed %v, invariance %+v", rec.Status, failedKinds(rec.Gates), gs)
			}
			if c.want != results.StatusOK && (gs[0].Buffer != "lse" || !strings.Contains(gs[0].Detail, "lse row differs")) {
				t.Errorf("gate %+v: want a difference in lse", gs[0])
			}
		})
	}
}

// TestInvarianceArmLayouts: arms whose split counts give them partial
// buffers of another size run in a workspace of their own (armKernel);
// what the gate compares is each arm's own launch. A kernel of a fixed
// split size passes across such arms (no false alarm from the workspace
// an arm runs in), and a kernel split by count fails across them with
// both values of the first differing element written and a rounding
// apart: neither the point's row nor the arm's reads as a row no launch
// wrote (out's poison) or as an empty merge (0).
func TestInvarianceArmLayouts(t *testing.T) {
	layoutOf := func(p *plan.Point) layout {
		l, err := pointLayout(p)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	fixed := invariantPoint("fixed", 16, 16, []spec.Invariance{spec.InvariantArm}, armPoint("fixed32", 32, 16))
	if layoutOf(fixed) == layoutOf(fixed.Invariance.Arms[0]) {
		t.Fatal("arms of 16 and 32 splits share a layout: the test would not reach an arm's own workspace")
	}
	if rec := run(t, fakeBackend(t, newFakeDevice()), fixed); rec.Status != results.StatusOK {
		t.Fatalf("fixed split size across arms of 16 and 32 splits: %s: %s", rec.Status, rec.Error)
	}

	rec := run(t, fakeBackend(t, newFakeDevice()), invariantPoint("bycount", 16, 0, []spec.Invariance{spec.InvariantArm}, armPoint("bycount32", 32, 0)))
	gs := invarianceGates(rec)
	if rec.Status != results.StatusGateFailed || len(gs) != 1 || gs[0].Pass {
		t.Fatalf("split by count across arms of 16 and 32 splits: %s: %s", rec.Status, rec.Error)
	}
	m := regexp.MustCompile(`\): (\S+) against (\S+) \(\d+ bytes differ\)$`).FindStringSubmatch(gs[0].Detail)
	if m == nil {
		t.Fatalf("detail %q names no two values", gs[0].Detail)
	}
	x, errX := strconv.ParseFloat(m[1], 32)
	y, errY := strconv.ParseFloat(m[2], 32)
	if errX != nil || errY != nil {
		t.Fatalf("detail %q: values %q and %q do not parse", gs[0].Detail, m[1], m[2])
	}
	poisoned := float64(math.Float32frombits(poison))
	for _, v := range []float64{x, y} {
		if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) || v == poisoned {
			t.Errorf("detail %q: a value reads %g, not a written row", gs[0].Detail, v)
		}
	}
	if d := math.Abs(x-y) / math.Max(math.Abs(x), math.Abs(y)); d > 1e-4 {
		t.Errorf("detail %q: the arms differ by %.2g relative, more than a merge's rounding", gs[0].Detail, d)
	}
}
