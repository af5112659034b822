package probe

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// fakeBoard is a board drawing a constant power whose energy counter, as
// NVML's, counts whole millijoules and moves only every period. Time is
// the fake's own: each clock read costs tick, each step step.
type fakeBoard struct {
	powerMW float64
	period  time.Duration
	tick    time.Duration
	step    time.Duration
	t       time.Duration
	stuck   bool
	fail    error
	// busy is when the device finishes the chunks queued so far: a
	// chunk costs the host a tick and the device 20 steps, after the
	// chunks before it.
	busy time.Duration
}

var epoch = time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)

func (f *fakeBoard) now() time.Time {
	f.t += f.tick
	return epoch.Add(f.t)
}

func (f *fakeBoard) EnergyMJ() (uint64, error) {
	if f.fail != nil {
		return 0, f.fail
	}
	f.t += f.tick // a read takes time too
	if f.stuck {
		return 1000, nil
	}
	at := f.t - f.t%f.period                          // the counter's last update
	return uint64(f.powerMW * float64(at) / 1e9), nil // mW × ns / 1e9 = mJ
}

func (f *fakeBoard) PowerMW() (uint32, error) { return uint32(f.powerMW), nil }

func (f *fakeBoard) window(limit time.Duration) energyWindow {
	return energyWindow{
		meter: f, period: measurePeriod(f, f.now), now: f.now, max: limit,
		chunk: func() (int, error) {
			f.t += f.tick
			f.busy = max(f.busy, f.t) + 20*f.step
			return 20, nil
		},
		chunkTime: func() (time.Duration, error) { return 20 * f.step, nil },
		drain:     func() error { f.t = max(f.t, f.busy); return nil },
	}
}

func TestMeasurePeriod(t *testing.T) {
	for _, period := range []time.Duration{time.Millisecond, 20 * time.Millisecond, 100 * time.Millisecond} {
		f := &fakeBoard{powerMW: 300e3, period: period, tick: 10 * time.Microsecond}
		got := measurePeriod(f, f.now)
		if got.err != nil || got.period < period-30*time.Microsecond || got.period > period+30*time.Microsecond {
			t.Errorf("counter updating every %v: measured %v, %v", period, got.period, got.err)
		}
	}
	f := &fakeBoard{powerMW: 300e3, period: time.Millisecond, tick: 100 * time.Microsecond, stuck: true}
	if got := measurePeriod(f, f.now); got.err == nil {
		t.Errorf("a counter that never moves gave a period, %v", got.period)
	}
}

// TestEnergyWithinBound is the window's promise as a property: on any
// board whose counter is as NVML's, a measurable point's energy per step
// is the true one within the recorded bound, the bound is within the
// tolerance, and a point it cannot bound is unmeasurable, with no number.
func TestEnergyWithinBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(52, 4))
	measured, unmeasurable := 0, 0
	for i := range 300 {
		f := &fakeBoard{
			powerMW: 60e3 + rng.Float64()*640e3,
			period:  time.Duration(1+rng.IntN(150)) * time.Millisecond,
			tick:    time.Duration(1+rng.IntN(20)) * time.Microsecond,
			step:    time.Duration(3+rng.IntN(3000)) * time.Microsecond / 10,
		}
		e, err := f.window(energyWindowMax).measure()
		if err != nil {
			t.Fatal(err)
		}
		checkBusy(e, float64(f.step))
		truth := f.powerMW * float64(f.step) * 1e-6 // µJ
		if e.Unmeasurable != "" {
			unmeasurable++
			if e.UJPerStep != 0 {
				t.Errorf("case %d: unmeasurable (%s) yet %v µJ per step", i, e.Unmeasurable, e.UJPerStep)
			}
			busy := e.Steps > 0 && e.WindowNS/float64(e.Steps) <= (1+energyTol)*float64(f.step)
			if e.NeededNS <= float64(energyWindowMax) && e.RelBound <= energyTol && busy {
				t.Errorf("case %d: unmeasurable (%s) with a window of %v ns and a bound of %v", i, e.Unmeasurable, e.NeededNS, e.RelBound)
			}
			continue
		}
		measured++
		if e.RelBound <= 0 || e.RelBound > energyTol {
			t.Errorf("case %d: measurable with a bound of %v", i, e.RelBound)
		}
		// The host's time between launches (the fake's clock reads) is
		// energy no step drew: at most energyTol of the window once
		// checkBusy has passed it.
		slack := e.WindowNS/float64(e.Steps)/float64(f.step) - 1
		if slack > energyTol {
			t.Errorf("case %d: measurable with the device idle %.1f%% of the window", i, 100*slack)
		}
		if rel := math.Abs(e.UJPerStep-truth) / truth; rel > e.RelBound+slack {
			t.Errorf("case %d (P %.0f W, period %v, step %v): %.2f µJ per step, truth %.2f: off by %.2f%%, bound %.2f%%",
				i, f.powerMW/1e3, f.period, f.step, e.UJPerStep, truth, 100*rel, 100*e.RelBound)
		}
		if e.WindowNS < e.NeededNS {
			t.Errorf("case %d: a %v ns window where %v ns are needed", i, e.WindowNS, e.NeededNS)
		}
	}
	if measured < 50 || unmeasurable < 20 {
		t.Errorf("the cases did not cover both outcomes: %d measured, %d unmeasurable", measured, unmeasurable)
	}
}

// TestEnergyNeedsLongWindow: a counter too coarse for the allowed window
// is recorded unmeasurable before anything runs, and says what it needs.
func TestEnergyNeedsLongWindow(t *testing.T) {
	f := &fakeBoard{powerMW: 200e3, period: 100 * time.Millisecond, tick: time.Microsecond, step: 10 * time.Microsecond}
	w := f.window(time.Second)
	ran := false
	w.chunk = func() (int, error) { ran = true; return 1, nil }
	e, err := w.measure()
	if err != nil {
		t.Fatal(err)
	}
	if ran || e.Steps != 0 || e.UJPerStep != 0 {
		t.Errorf("ran %d steps (%v µJ) where the counter needs more than the allowed window", e.Steps, e.UJPerStep)
	}
	// (100 ms + 1 mJ / 200 W) / 4.5% = 2.222333 s.
	if want := neededWindow(100*time.Millisecond, 200e3); want < 2222*time.Millisecond || want > 2223*time.Millisecond || time.Duration(e.NeededNS) != want || !strings.Contains(e.Unmeasurable, "2.222s window") {
		t.Errorf("needed %v (%q), want %v", time.Duration(e.NeededNS), e.Unmeasurable, want)
	}
}

// TestEnergyCounterFails: a counter that cannot be read leaves the probe
// unmeasurable, never a number and never a failed point.
func TestEnergyCounterFails(t *testing.T) {
	f := &fakeBoard{powerMW: 200e3, period: time.Millisecond, tick: time.Microsecond, step: 10 * time.Microsecond}
	w := f.window(time.Second)
	f.fail = errors.New("GPU is lost")
	e, err := w.measure()
	if err != nil || e.UJPerStep != 0 || !strings.Contains(e.Unmeasurable, "GPU is lost") {
		t.Errorf("a failing counter gave %+v, %v", e, err)
	}
	f.fail = nil
	w.chunk = func() (int, error) { return 0, errors.New("launch failed") }
	if _, err := w.measure(); err == nil || !strings.Contains(err.Error(), "launch failed") {
		t.Errorf("a failed launch in the window was not the probe's error: %v", err)
	}
}

// TestEnergyWindowLength: a host that enqueues far faster than the
// device runs leaves no backlog past the needed window (the chunks are
// counted from the device's time for one), and a host slower than the
// device still runs the window to its end.
func TestEnergyWindowLength(t *testing.T) {
	for _, c := range []struct {
		name       string
		tick, step time.Duration
		timed      float64 // the timed chunk over the chunk's time in the window
	}{
		{"device-bound", time.Microsecond, 100 * time.Microsecond, 1},
		{"host-bound", 50 * time.Microsecond, time.Microsecond, 1},
		{"timed slower than run", time.Microsecond, 100 * time.Microsecond, 3},
		{"timed faster than run", time.Microsecond, 100 * time.Microsecond, 0.5},
	} {
		f := &fakeBoard{powerMW: 400e3, period: 20 * time.Millisecond, tick: c.tick, step: c.step}
		w := f.window(energyWindowMax)
		w.chunkTime = func() (time.Duration, error) { return time.Duration(c.timed * float64(20*c.step)), nil }
		e, err := w.measure()
		if err != nil {
			t.Fatal(err)
		}
		chunk := float64(20*c.step+c.tick) * max(1, c.timed)
		if e.WindowNS < e.NeededNS || e.WindowNS > 1.25*e.NeededNS+2*chunk+float64(40*c.tick) {
			t.Errorf("%s: a %.4f s window where %.4f s are needed", c.name, e.WindowNS/1e9, e.NeededNS/1e9)
		}
	}
}

// TestEnergyHostBound: a window whose steps ran slower than the probe's
// samples (the device waiting for the host) records no energy per step.
func TestEnergyHostBound(t *testing.T) {
	f := &fakeBoard{powerMW: 300e3, period: 10 * time.Millisecond, tick: 200 * time.Microsecond, step: 5 * time.Microsecond}
	e, err := f.window(energyWindowMax).measure()
	if err != nil || e.UJPerStep == 0 {
		t.Fatalf("the window itself: %+v, %v", e, err)
	}
	checkBusy(e, float64(f.step))
	if e.UJPerStep != 0 || !strings.Contains(e.Unmeasurable, "idled") {
		t.Errorf("a host-bound window (a step every %.2f µs, median 5 µs) kept %v µJ per step (%q)", e.WindowNS/float64(e.Steps)/1e3, e.UJPerStep, e.Unmeasurable)
	}
}
