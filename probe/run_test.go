package probe

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
	"github.com/ktune/ktune/plan"
)

var (
	errIllegal = &cuda.Error{Call: "cuStreamSynchronize", Code: cuda.ErrIllegalAddress}
	errOOM     = &cuda.Error{Call: "cuMemAlloc", Code: cuda.ErrOutOfMemory}
	errInvalid = &cuda.Error{Call: "cuLaunchKernel", Code: cuda.ErrInvalidValue}
)

// TestFakeClassification: how Run turns each way a point can end into a
// status, and which of them also end the backend.
func TestFakeClassification(t *testing.T) {
	for _, c := range []struct {
		name    string
		m       fakeModel
		setup   func(f *fakeDevice, p *plan.Point)
		status  results.Status
		fatal   bool   // Run returns an error: the backend is done
		errText string // in rec.Error
	}{
		{"sticky fault", fakeModel{fault: errIllegal}, nil, results.StatusFault, true, "illegal"},
		{"launch refused", fakeModel{launchErr: errInvalid}, nil, results.StatusError, false, "CUDA_ERROR_INVALID_VALUE"},
		{"compile failure", fakeModel{compileFails: true}, nil, results.StatusCompileFailed, false, "NVRTC rejected"},
		{"does not fit", fakeModel{}, func(f *fakeDevice, _ *plan.Point) { f.freeMem = 1 << 20 }, results.StatusOOM, false, "needs"},
		{"allocation fails", fakeModel{}, func(f *fakeDevice, _ *plan.Point) { f.allocErr = errOOM }, results.StatusOOM, false, "allocating"},
		{"allocation error", fakeModel{}, func(f *fakeDevice, _ *plan.Point) { f.allocErr = errInvalid }, results.StatusError, false, "allocating"},
		{"timeout", fakeModel{delay: 5 * time.Millisecond}, func(_ *fakeDevice, p *plan.Point) { p.Measure.TimeoutSec = 0.05 },
			results.StatusTimeout, false, "exceeded its 0.05s limit"},
		{"nkv past the capacity", fakeModel{}, func(_ *fakeDevice, p *plan.Point) { p.Config.NKV = 1000 }, results.StatusError, false, "outside"},
		{"no SPLITS", fakeModel{}, func(_ *fakeDevice, p *plan.Point) { p.Config.Splits = 0 }, results.StatusError, false, "SPLITS"},
		{"twin does not compile", fakeModel{}, func(f *fakeDevice, p *plan.Point) {
			p.Twin = fakePoint("badtwin", p.Config.NKV)
			f.models["badtwin"] = fakeModel{compileFails: true}
		}, results.StatusError, false, "twin badtwin does not compile"},
		{"unknown probe", fakeModel{}, func(_ *fakeDevice, p *plan.Point) { p.Probes = []results.Probe{"warm"} }, results.StatusError, false, "unknown probe"},
		// The fake's partial has 40 registers.
		{"over its budget", fakeModel{}, func(_ *fakeDevice, p *plan.Point) { p.Budget = spec.Budget{MaxRegisters: 32, NoSpills: true} },
			results.StatusOverBudget, false, "k breaks its budget: attn_partial: 40 registers, over max_registers 32"},
		{"within its budget", fakeModel{}, func(_ *fakeDevice, p *plan.Point) {
			p.Budget = spec.Budget{MaxRegisters: 40, NoSpills: true, MaxShared: 1}
		},
			results.StatusOK, false, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeDevice()
			f.models["k"] = c.m
			b := fakeBackend(t, f)
			p := fakePoint("k", 100)
			if _, err := b.Env(context.Background()); err != nil {
				t.Fatal(err)
			}
			if c.setup != nil {
				c.setup(f, p)
			}
			rec, err := b.Run(context.Background(), p)
			if rec.Status != c.status || (err != nil) != c.fatal || !strings.Contains(rec.Error, c.errText) {
				t.Fatalf("status %s, error %v, rec.Error %q; want %s, fatal %v, %q", rec.Status, err, rec.Error, c.status, c.fatal, c.errText)
			}
			if rec.Hash != p.Hash || rec.WallSec <= 0 || rec.Schema != results.SchemaVersion {
				t.Errorf("record header %+v", rec)
			}
			if !c.fatal {
				return
			}
			// The context is lost: every later call fails at once.
			again, err := b.Run(context.Background(), fakePoint("other", 29))
			if err == nil || again.Status != results.StatusFault {
				t.Errorf("after a sticky fault: %s, %v", again.Status, err)
			}
			if _, err := b.Env(context.Background()); err == nil {
				t.Error("Env after a sticky fault: no error")
			}
			if _, err := b.SMClockMHz(); err == nil {
				t.Error("SMClockMHz after a sticky fault: no error")
			}
		})
	}
}

// TestFakeBandwidth: the median of bwReps timed passes after an untimed
// one, over a buffer freed afterwards; a device short of memory is an
// error of the run, not of a point.
func TestFakeBandwidth(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	env, err := b.Env(context.Background())
	if err != nil || math.Abs(env.ReadBWGBps-4000) > 1e-6 || f.passes != bwReps+1 || f.buffers != 0 {
		t.Fatalf("bandwidth %g GB/s, %d passes, %d buffers left, %v", env.ReadBWGBps, f.passes, f.buffers, err)
	}
	if _, err := b.Env(context.Background()); err != nil || f.passes != bwReps+1 {
		t.Errorf("second Env measured again: %d passes, %v", f.passes, err)
	}
	f = newFakeDevice()
	f.freeMem = 1 << 20
	b = fakeBackend(t, f)
	rec, err := b.Run(context.Background(), fakePoint("k", 100))
	if err == nil || rec.Status != results.StatusError || !strings.Contains(rec.Error, "too little to measure bandwidth") {
		t.Errorf("short of memory: %s, %v", rec.Status, err)
	}
}

func TestFakeCancelled(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	rec, err := b.Run(ctx, fakePoint("k", 100))
	if !errors.Is(err, context.Canceled) || rec.Status != results.StatusError {
		t.Errorf("cancelled: %s, %v", rec.Status, err)
	}
}

func TestFakeEnvFailure(t *testing.T) {
	f := newFakeDevice()
	f.dead = errIllegal
	b := fakeBackend(t, f)
	rec, err := b.Run(context.Background(), fakePoint("k", 100))
	if err == nil || rec.Status != results.StatusFault {
		t.Errorf("a sticky error measuring the bandwidth: %s, %v", rec.Status, err)
	}
	if b.dead == nil {
		t.Error("the backend is not marked dead")
	}
}

// TestFakeWorkspaceReuse: points of one layout share buffers; a new
// layout frees the old ones first; the flush buffer is made once, for the
// first cold point.
func TestFakeWorkspaceReuse(t *testing.T) {
	f := newFakeDevice()
	b := fakeBackend(t, f)
	hot := fakePoint("k", 100)
	hot.Probes = []results.Probe{results.ProbeHot}
	run(t, b, hot)
	if f.workspaces != 1 || f.buffers != 0 {
		t.Fatalf("%d workspaces, %d flush buffers", f.workspaces, f.buffers)
	}
	run(t, b, fakePoint("k", 29)) // cold: the flush buffer, same layout
	run(t, b, fakePoint("k", 9))
	if f.workspaces != 1 || f.buffers != 1 || f.frees != 0 {
		t.Fatalf("same layout: %d workspaces, %d flushes, %d frees", f.workspaces, f.buffers, f.frees)
	}
	big := fakePoint("k", 100)
	big.Config.Shape.Capacity = 512
	big.GateKey = "big"
	run(t, b, big)
	if f.workspaces != 2 || f.frees != 1 || f.buffers != 1 {
		t.Fatalf("new layout: %d workspaces, %d frees, %d flushes", f.workspaces, f.frees, f.buffers)
	}
}

// probeRun is a pointRun past its gates, ready to measure.
func probeRun(t *testing.T, f *fakeDevice, ms plan.Measure) *pointRun {
	t.Helper()
	b := fakeBackend(t, f)
	p := fakePoint("k", 100)
	p.Measure = ms
	rec := &results.Record{Env: b.env}
	rec.Env.ReadBWGBps = 4000
	r := &pointRun{session: session{b: b, p: p}, rec: rec}
	var err error
	if r.l, err = pointLayout(p); err != nil {
		t.Fatal(err)
	}
	r.k, _, _ = f.load(p.Source, &p.Config, nil)
	r.g = pointGeometry(p)
	if r.ws, err = b.workspaceFor(r.l, true); err != nil {
		t.Fatal(err)
	}
	if err := r.setPositions(p.Config.TimedLengths()); err != nil {
		t.Fatal(err)
	}
	return r
}

var sampling = plan.Measure{Warmup: 2, MinSamples: 5, MaxSamples: 12, MaxNoise: 0.05, BudgetSec: 10, HotBatch: 3}

// TestProbeStoppingRule: steady samples stop at MinSamples, converged;
// noisy ones run to MaxSamples and say they did not converge.
func TestProbeStoppingRule(t *testing.T) {
	f := newFakeDevice()
	r := probeRun(t, f, sampling)
	m, err := r.probe(context.Background(), results.ProbeCold)
	if err != nil || len(m.SamplesNS) != 5 || !m.Converged {
		t.Fatalf("steady: %d samples, converged %v, %v", len(m.SamplesNS), m.Converged, err)
	}
	f.samples = 0
	f.sample = func(i int) (float64, bool) { return float64(1000 + 500*(i%2)), false }
	m, err = r.probe(context.Background(), results.ProbeHot)
	if err != nil || len(m.SamplesNS) != 12 || m.Converged || m.Note == "" || m.Batch != 3 {
		t.Fatalf("noisy: %d samples, converged %v, note %q, %v", len(m.SamplesNS), m.Converged, m.Note, err)
	}
	if m.SamplesNS[0] != 1000.0/3 {
		t.Errorf("hot sample %g: not per launch pair", m.SamplesNS[0])
	}
}

// TestProbeDroppedSamples: a sample the blocker timed out on does not
// count; a few are noted, too many end the probe.
func TestProbeDroppedSamples(t *testing.T) {
	f := newFakeDevice()
	r := probeRun(t, f, sampling)
	f.sample = func(i int) (float64, bool) { return 1000, i < 2 }
	m, err := r.probe(context.Background(), results.ProbeCold)
	if err != nil || len(m.SamplesNS) != 5 || !strings.Contains(m.Note, "2 samples dropped") {
		t.Fatalf("two dropped: %d samples, note %q, %v", len(m.SamplesNS), m.Note, err)
	}
	f.samples = 0
	f.sample = func(i int) (float64, bool) { return 1000, i%2 == 1 }
	m, err = r.probe(context.Background(), results.ProbeCold)
	// Samples 0, 2, 4, 6 count; the fourth drop (7) is one too many.
	if err != nil || len(m.SamplesNS) != maxDropped+1 || !strings.Contains(m.Note, "gave up") || m.Summary.N != maxDropped+1 {
		t.Fatalf("every other dropped: %d samples, note %q, %v", len(m.SamplesNS), m.Note, err)
	}
}

// TestProbeInterrupted: a cancelled probe keeps what it measured.
func TestProbeInterrupted(t *testing.T) {
	f := newFakeDevice()
	r := probeRun(t, f, sampling)
	ctx, cancel := context.WithCancel(context.Background())
	f.onTimed = func(i int) {
		if i == 2 {
			cancel()
		}
	}
	m, err := r.probe(ctx, results.ProbeCold)
	if !errors.Is(err, context.Canceled) || len(m.SamplesNS) != 3 || m.Summary.N != 3 || !strings.Contains(m.Note, "interrupted after 3") {
		t.Fatalf("interrupted: %d samples, note %q, %v", len(m.SamplesNS), m.Note, err)
	}
	// A sample that fails keeps the earlier ones too.
	f.onTimed = func(i int) {
		if i == 3 {
			f.dead = errIllegal
		}
	}
	f.samples = 0
	m, err = r.probe(context.Background(), results.ProbeCold)
	if !cuda.IsSticky(err) || len(m.SamplesNS) != 3 {
		t.Fatalf("failing sample: %d samples kept, %v", len(m.SamplesNS), err)
	}
}

// TestProbeThrottled: clock readings below 75% of the default clock are
// counted.
func TestProbeThrottled(t *testing.T) {
	f := newFakeDevice()
	r := probeRun(t, f, sampling)
	f.mhz = 1000
	m, err := r.probe(context.Background(), results.ProbeGraph)
	if err != nil || m.ClockMHz != 1000 || m.Throttled != 2 {
		t.Fatalf("graph at 1000 MHz: clock %g, throttled %d, %v", m.ClockMHz, m.Throttled, err)
	}
	if throttled([]float64{1500, 1400, 2000}, 1980) != 1 {
		t.Error("throttled: 1400 of 1980 MHz is below 75%")
	}
}

// TestMeasureRecordsPartial: a probe that fails mid-way is still in the
// record, with its bandwidth.
func TestMeasureRecordsPartial(t *testing.T) {
	f := newFakeDevice()
	r := probeRun(t, f, sampling)
	r.p.Probes = []results.Probe{results.ProbeCold, results.ProbeHot}
	f.onTimed = func(i int) {
		if i == 7 {
			f.dead = errIllegal
		}
	}
	err := r.measure(context.Background())
	if !cuda.IsSticky(err) || len(r.rec.Probes) != 2 || r.rec.Probes[1].GBps <= 0 || len(r.rec.Probes[1].SamplesNS) != 2 {
		t.Fatalf("measure: %v, probes %+v", err, r.rec.Probes)
	}
}
