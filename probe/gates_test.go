package probe

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe/gate"
)

func run(t *testing.T, b *Backend, p *plan.Point) results.Record {
	t.Helper()
	rec, err := b.Run(context.Background(), p)
	if err != nil {
		t.Fatalf("Run %s nkv %d: %v", p.Config.Variant, p.Config.NKV, err)
	}
	return rec
}

// TestFakeRunGood: a correct kernel passes every gate on every input set,
// and is measured by every probe.
func TestFakeRunGood(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	rec := run(t, b, fakePoint("good", 100))
	if rec.Status != results.StatusOK || rec.Error != "" {
		t.Fatalf("status %s: %s", rec.Status, rec.Error)
	}
	kinds := map[results.GateKind]bool{}
	inputs := map[string]bool{}
	for _, g := range rec.Gates {
		if !g.Pass {
			t.Errorf("failed gate %+v", g)
		}
		kinds[g.Kind] = true
		inputs[g.Inputs] = true
	}
	// Every registered kind runs, but the bitwise gate (the point has no
	// twin), the opt-in ones (it asks for none) and the sanitizer (a run
	// of its own, ktune sweep --sanitize); and every kind recorded is
	// registered, so that the gate suite names it.
	var registered []results.GateKind
	for _, g := range gate.Registry {
		for _, k := range g.Kinds {
			registered = append(registered, k)
			if !kinds[k] && k != results.GateBitwise && k != results.GateSanitizer && g.OptIn == nil {
				t.Errorf("no %s gate recorded", k)
			}
		}
	}
	for k := range kinds {
		if !slices.Contains(registered, k) {
			t.Errorf("a %s gate was recorded, which gate.Registry does not list", k)
		}
	}
	for _, s := range oracle.Sets {
		if !inputs[string(s)] {
			t.Errorf("no gate on the %s inputs", s)
		}
	}
	if len(rec.Probes) != 3 {
		t.Fatalf("%d probes, want cold, hot and graph", len(rec.Probes))
	}
	for _, m := range rec.Probes {
		if !m.Converged || len(m.SamplesNS) != 5 || m.Summary.Median != 1000/float64(m.Batch) || m.ClockMHz != 1980 || m.GBps <= 0 || m.PctBW <= 0 {
			t.Errorf("%s: %+v", m.Probe, m)
		}
	}
	if rec.Env.ReadBWGBps != 4000 || rec.Resources[0].Registers != 40 {
		t.Errorf("env %+v resources %+v", rec.Env, rec.Resources)
	}
	// The fresh gate's module, the timed check's and the launch-count
	// check's; the replay gate's capture and the graph probe's.
	if f.reloads != 3 || f.captures != 2 {
		t.Errorf("%d fresh modules, %d captures", f.reloads, f.captures)
	}

	// A second point of the group copies the verdict: no gate launches.
	pairs := f.pairs
	rec2 := run(t, b, fakePoint("good", 29))
	if rec2.Status != results.StatusOK || len(rec2.Gates) != len(rec.Gates) || rec2.GateSec > rec.GateSec {
		t.Errorf("second point: %s, %d gates (first %d)", rec2.Status, len(rec2.Gates), len(rec.Gates))
	}
	// Measurement only: warm-up and samples of three probes.
	if n := f.pairs - pairs; n > 3*(1+20)*4 {
		t.Errorf("second point launched %d pairs: the gates ran again", n)
	}
}

// TestFakeDefectsCaught runs each planted defect through the gates and
// checks the verdict names the gate built for it.
func TestFakeDefectsCaught(t *testing.T) {
	for _, c := range []struct {
		name  string
		m     fakeModel
		edit  func(p *plan.Point)
		wants []string // kind/inputs that must be among the failures
	}{
		{"wrong values", fakeModel{offset: 0.01}, nil, []string{"tolerance/uniform"}},
		{"idle splits unwritten", fakeModel{skipIdle: true}, nil, []string{"written/uniform"}},
		{"nondeterministic", fakeModel{noise: true}, nil, []string{"determinism/uniform"}},
		{"keeps the longest nkv in device memory", fakeModel{keepMax: true}, nil,
			[]string{"fresh/uniform", "tolerance/peaked", "replay/uniform"}},
		{"skips the newest row past 64", fakeModel{skipNewest: 64}, nil, []string{"tolerance/peaked"}},
		{"flushes f16 subnormals", fakeModel{ftz: true}, nil, []string{"tolerance/subnormal"}},
		{"reads one row past its chunk", fakeModel{readPast: true}, nil, []string{"tolerance/peaked"}},
		{"nkv by value", fakeModel{nkvByValue: true}, nil, []string{"replay/uniform"}},
		{"weights rows past the length by zero", fakeModel{zeroTail: 16}, nil, []string{"stale/uniform"}},
		{"grid reads nkv, cold probe only", fakeModel{gridRows: 16}, func(p *plan.Point) {
			p.Geometry = &plan.Geometry{Grid: [3]string{"cdiv(nkv, 16)", "heads", "batch"}, Symbols: map[string]int64{"heads": 4, "batch": 2}}
			p.Probes = []results.Probe{results.ProbeCold}
		}, []string{"replay/"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = c.m
			b := fakeBackend(t, f)
			p := fakePoint(c.name, 100)
			if c.edit != nil {
				c.edit(p)
			}
			rec := run(t, b, p)
			got := failedKinds(rec.Gates)
			if rec.Status != results.StatusGateFailed || len(rec.Probes) != 0 {
				t.Fatalf("status %s with %d probes, failed %v", rec.Status, len(rec.Probes), got)
			}
			for _, w := range c.wants {
				if !slices.Contains(got, w) {
					t.Errorf("failed gates %v, want %s among them", got, w)
				}
			}
			if !strings.Contains(rec.Error, "gate(s) failed") {
				t.Errorf("error %q", rec.Error)
			}
		})
	}
}

// TestFakeGridReadingNKV: a kernel whose grid reads nkv fails every point
// of its group, at every length, whatever the probes; graph: never lets it
// through and skips the graph probe.
func TestFakeGridReadingNKV(t *testing.T) {
	geo := &plan.Geometry{Grid: [3]string{"cdiv(nkv, 16)", "heads", "batch"}, Symbols: map[string]int64{"heads": 4, "batch": 2}}
	f := newFakeDevice()
	f.models["grid"] = fakeModel{gridRows: 16}
	b := fakeBackend(t, f)
	for _, nkv := range []int{256, 1, 29} { // the first point is at the capacity: its own grid is full
		p := fakePoint("grid", nkv)
		p.Geometry = geo
		p.Probes = []results.Probe{results.ProbeCold}
		if rec := run(t, b, p); rec.Status != results.StatusGateFailed {
			t.Errorf("nkv %d: %s", nkv, rec.Status)
		}
	}
	// The replay itself disagrees, not only the outright verdict.
	p := fakePoint("grid", 256)
	p.Geometry, p.GateKey = geo, "other"
	rec := run(t, b, p)
	diff := 0
	for _, g := range rec.Gates {
		if g.Kind == results.GateReplay && !g.Pass && g.DiffBytes > 0 {
			diff++
		}
	}
	if diff == 0 {
		t.Errorf("no replay disagreed with a fresh launch: %v", failedKinds(rec.Gates))
	}

	f = newFakeDevice()
	f.models["never"] = fakeModel{gridRows: 16}
	b = fakeBackend(t, f)
	p = fakePoint("never", 100)
	p.Geometry, p.NeverCaptured = geo, true
	rec = run(t, b, p)
	if rec.Status != results.StatusOK || f.captures != 0 {
		t.Fatalf("graph: never: %s (%v), %d captures", rec.Status, failedKinds(rec.Gates), f.captures)
	}
	for _, m := range rec.Probes {
		if m.Probe == results.ProbeGraph {
			t.Error("graph probe ran on a kernel the engine never captures")
		}
	}
}

// TestFakeLargeShared: every module a point launches, the fresh one of
// the fresh-module gate included, is opted into its dynamic shared memory.
func TestFakeLargeShared(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	p := fakePoint("big", 100)
	p.Launches[0].Shared = 64 << 10
	if rec := run(t, b, p); rec.Status != results.StatusOK {
		t.Errorf("%s: %s", rec.Status, rec.Error)
	}
}

// TestFakeStateNeedsOrders: the kernel that keeps the longest length seen
// passes an ascending walk on one set; the other orders catch it.
func TestFakeStateNeedsOrders(t *testing.T) {
	f := newFakeDevice()
	f.models["state"] = fakeModel{keepMax: true}
	b := fakeBackend(t, f)
	rec := run(t, b, fakePoint("state", 100))
	for _, g := range rec.Gates {
		if g.Inputs == string(oracle.SetUniform) && g.Kind == results.GateTolerance && !g.Pass {
			t.Errorf("uniform set, ascending: failed at nkv %d; the test premise is gone", g.NKV)
		}
	}
	if rec.Status != results.StatusGateFailed {
		t.Errorf("status %s", rec.Status)
	}
}

func TestFakeBitwiseTwin(t *testing.T) {
	for _, c := range []struct {
		twin fakeModel
		want results.Status
	}{{fakeModel{}, results.StatusOK}, {fakeModel{offset: 1e-6}, results.StatusGateFailed}} {
		f := newFakeDevice()
		f.models["twin"] = c.twin
		b := fakeBackend(t, f)
		p := fakePoint("cand", 100)
		p.Twin = fakePoint("twin", 100)
		p.Config.BitwiseWith = "twin"
		rec := run(t, b, p)
		if rec.Status != c.want {
			t.Errorf("twin %+v: %s (%v)", c.twin, rec.Status, failedKinds(rec.Gates))
		}
		n := 0
		for _, g := range rec.Gates {
			if g.Kind == results.GateBitwise && g.Twin == "twin" {
				n++
			}
		}
		if n == 0 {
			t.Error("no bitwise gate recorded")
		}
	}
}

// TestGateLaunchCount is the gates' cost per compiled kernel, in launch
// pairs, for the point's lengths: every set at every gate length, the
// repeat and the stale-rows launch on the uniform set, two fresh-module
// runs, the capture and two pairs (replay, fresh launch) per replay length,
// two launches at the capacity on tiled inputs (the first sequence alone,
// then all of them) and the bounds gate's launch; then, with no probe,
// the launch-count check's.
func TestGateLaunchCount(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	p := fakePoint("count", 100)
	p.Probes = nil
	run(t, b, p)
	L, R := len(p.GateNKV), len(p.ReplayNKV)
	want := len(oracle.Sets)*L + 2*L + 2 + 2*R + 2 + 1
	// After the gates, with no probe: the launch-count check's fresh
	// launch and its long run (launchcount.go).
	total, least := b.launchRun()
	want += 1 + max(least, total-want-1)
	if f.pairs != want {
		t.Errorf("%d pairs launched, want %d", f.pairs, want)
	}
	// Before the input sets: L pairs, plus 1 + 2·5 only with the graph probe.
	t.Logf("gate launch pairs per compiled kernel: %d (L=%d gate lengths, R=%d replays); %d before, %d with the graph probe",
		f.pairs, L, R, L, L+1+2*5)
}

// TestFakeMemoryDefectsCaught: a kernel that writes a read-only input or
// past a buffer's end fails the readonly or guard gate naming the buffer
// and the first changed byte, and the workspace is put back for the next
// point: a correct kernel run after it on the same workspace passes.
func TestFakeMemoryDefectsCaught(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name   string
		m      fakeModel
		kind   results.GateKind
		buffer string
		first  int
		detail string
	}{
		{"writes K", fakeModel{writeInput: "k"}, results.GateReadOnly, "k", 0, "sequence 0, row 0, KV head 0, dim 0"},
		{"clears seqlens", fakeModel{writeInput: "positions"}, results.GateReadOnly, "positions", 8, "seqlens[0]"},
		{"writes past out", fakeModel{writePastOut: true}, results.GateGuard, "out", 4 * 2 * 4 * 16, "after out"},
		{"writes before partial", fakeModel{writeBefore: true}, results.GateGuard, "partial", -4, "before partial"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = c.m
			b := fakeBackend(t, f)
			rec := run(t, b, fakePoint(c.name, 100))
			if rec.Status != results.StatusGateFailed {
				t.Fatalf("status %s, failed %v", rec.Status, failedKinds(rec.Gates))
			}
			var g *results.Gate
			for i := range rec.Gates {
				if !rec.Gates[i].Pass && rec.Gates[i].Kind == c.kind {
					g = &rec.Gates[i]
				}
			}
			if g == nil {
				t.Fatalf("no failed %s gate among %v", c.kind, failedKinds(rec.Gates))
			}
			if g.Buffer != c.buffer || g.FirstDiff != c.first || !strings.Contains(g.Detail, c.detail) {
				t.Errorf("%s gate: buffer %q first %d detail %q; want %q, %d, %q", c.kind, g.Buffer, g.FirstDiff, g.Detail, c.buffer, c.first, c.detail)
			}
			good := run(t, b, fakePoint("good", 100))
			if good.Status != results.StatusOK {
				t.Errorf("a correct kernel after it on the same workspace: %s (%s)", good.Status, good.Error)
			}
		})
	}
}

// TestFakeTimedDefectsCaught: a kernel that behaves in the gates and not
// in the timed launches (a memo of the previous launch, skipped work,
// drift with the launch count) fails the timed gate after its probes, its
// timings are dropped, and the next point of its gate group is not timed.
func TestFakeTimedDefectsCaught(t *testing.T) {
	for _, c := range []struct {
		name string
		m    fakeModel
	}{
		{"copies the previous launch", fakeModel{memoAfter: 8}},
		{"skips a repeated launch", fakeModel{memoAfter: 8, memoSkip: true}},
		{"drifts after 100 launches", fakeModel{breakAfter: 100}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models[c.name] = c.m
			b := fakeBackend(t, f)
			rec := run(t, b, fakePoint(c.name, 100))
			got := failedKinds(rec.Gates)
			if rec.Status != results.StatusGateFailed || len(rec.Probes) != 0 {
				t.Fatalf("status %s with %d probes, failed %v", rec.Status, len(rec.Probes), got)
			}
			for _, k := range got {
				if !strings.HasPrefix(k, string(results.GateTimed)+"/") && !strings.HasPrefix(k, string(results.GateLaunches)+"/") {
					t.Errorf("failed %v: the gates before the probes should not see it", got)
				}
			}
			pairs := f.pairs
			next := run(t, b, fakePoint(c.name, 29))
			if next.Status != results.StatusGateFailed || f.pairs != pairs {
				t.Errorf("next point of the group: %s after %d launches", next.Status, f.pairs-pairs)
			}
		})
	}
}

// TestFakeBoundsGate: a kernel that reads the row after its chunk reads
// canary in the guard region at the capacity and computes right; on the
// bounds gate's copies, which end against unmapped memory, it faults
// inside the gates, and the record keeps the evidence. A workspace with no
// room for the copies leaves the gate out rather than passing it.
func TestFakeBoundsGate(t *testing.T) {
	f := newFakeDevice()
	f.models["prefetch"] = fakeModel{prefetchPast: true}
	b := fakeBackend(t, f)
	rec, err := b.Run(context.Background(), fakePoint("prefetch", 100))
	if err == nil || rec.Status != results.StatusFault {
		t.Fatalf("status %s, %v; want a fault", rec.Status, err)
	}
	if got := failedKinds(rec.Gates); !slices.Equal(got, []string{"bounds/"}) {
		t.Errorf("failed %v, want the bounds gate alone", got)
	}
	for _, g := range rec.Gates {
		if g.Kind == results.GateBounds && (g.NKV != 256 || !strings.Contains(g.Detail, "faulted") || !strings.Contains(g.Buffer, "k")) {
			t.Errorf("bounds gate %+v", g)
		}
	}
	if f.holes != 0 {
		t.Errorf("%d hole copies left", f.holes)
	}

	f = newFakeDevice()
	f.holeErr = errOOM
	rec = run(t, fakeBackend(t, f), fakePoint("good", 100))
	if rec.Status != results.StatusOK {
		t.Fatalf("no room for copies: %s (%s)", rec.Status, rec.Error)
	}
	for _, g := range rec.Gates {
		if g.Kind == results.GateBounds {
			t.Errorf("a bounds gate recorded without its launch: %+v", g)
		}
	}
}

// TestFakeLongLengths: a kernel right at every gate length and wrong past
// 128 rows fails the tolerance gate at the capacity, on the uniform rows
// tiled there; a later point of a correct kernel's group is judged at its
// own timed length before its probes, which the gates did not reach.
func TestFakeLongLengths(t *testing.T) {
	f := newFakeDevice()
	f.models["drift"] = fakeModel{driftPast: 128}
	rec := run(t, fakeBackend(t, f), fakePoint("drift", 100))
	if rec.Status != results.StatusGateFailed || !slices.Equal(failedKinds(rec.Gates), []string{"tolerance/uniform"}) {
		t.Fatalf("status %s, failed %v", rec.Status, failedKinds(rec.Gates))
	}
	for _, g := range rec.Gates {
		if !g.Pass && (g.NKV != 256 || !strings.Contains(g.Detail, "tiled to the capacity")) {
			t.Errorf("failed at nkv %d: %s", g.NKV, g.Detail)
		}
	}

	f = newFakeDevice()
	b := fakeBackend(t, f)
	run(t, b, fakePoint("good", 100))
	before := len(f.written)
	rec = run(t, b, fakePoint("good", 200))
	// The inputs the gates left on the device, tiled, are judged as they
	// are: nothing is drawn or uploaded again.
	for _, p := range f.written[before:] {
		if p >= b.ws.k && p < b.ws.v+devOff(b.ws.l.V) {
			t.Errorf("K or V written again at %#x for the later point", p)
		}
	}
	n := 0
	for _, g := range rec.Gates {
		if g.Kind == results.GateTolerance && g.NKV == 200 && g.Pass && strings.Contains(g.Detail, "tiled") {
			n++
		}
	}
	if rec.Status != results.StatusOK || n != 1 {
		t.Errorf("the point timed at 200: %s, %d tolerance gates at 200", rec.Status, n)
	}
}

// TestFakeCounters: a fused kernel that re-arms its arrival counters
// passes every gate, the new ones included, and the gates never clear the
// counters between launches (the engine zeroes them once, at
// allocation); one that does not re-arm them fails.
func TestFakeCounters(t *testing.T) {
	f := newFakeDevice()
	f.models["fused"] = fakeModel{counters: true}
	b := fakeBackend(t, f)
	if rec := run(t, b, fakePoint("fused", 100)); rec.Status != results.StatusOK {
		t.Fatalf("re-armed counters: %s (%s)", rec.Status, rec.Error)
	}
	for _, p := range f.filled {
		if p >= b.ws.scratch && p < b.ws.scratch+devOff(b.ws.l.Scratch) {
			t.Errorf("the gates cleared the counters at %#x between launches", p)
		}
	}
	f = newFakeDevice()
	f.models["fused"] = fakeModel{counters: true, noRearm: true}
	rec := run(t, fakeBackend(t, f), fakePoint("fused", 100))
	if got := failedKinds(rec.Gates); rec.Status != results.StatusGateFailed || !slices.Contains(got, "written/uniform") {
		t.Errorf("counters left armed: %s, failed %v", rec.Status, got)
	}
}
