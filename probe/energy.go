package probe

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/ktune/ktune/internal/nvml"
	"github.com/ktune/ktune/internal/results"
)

// Energy per decode step (results.Energy says what is recorded and why).
//
// A decode step lasts 5 µs to a few ms; NVML's energy counter counts whole
// millijoules and moves only every so often (NVML does not say how often,
// so the period is measured once per run, here). A step's own energy is
// therefore far below one read's uncertainty, and the probe's samples,
// each between a blocker and an event, are no window to read it around.
// The energy window is: right after a hot or graph probe's warm-up, the
// probe's own launches (pairs, or graph replays) back to back for as long
// as the counter's resolution needs at the board's power, the stream
// drained and the counter read at both ends. The timed samples follow,
// unchanged, so the gates on what the timed launches computed still look
// at the probe's last samples.

const (
	// energyTol is the largest relative error a recorded energy may carry
	// from the counter's resolution.
	energyTol = 0.05
	// energyAim is the bound the window is sized for: under energyTol, so
	// that a window whose power falls below the power read before it
	// (which sizes the window) still keeps within energyTol. Sized for
	// energyTol itself, every H100 window came out at 4.9996-4.9999%.
	energyAim = 0.9 * energyTol
	// energyQuantumMJ is the counter's unit (NVML: millijoules).
	energyQuantumMJ = 1.0
	// energyWindowMax bounds the window of one probe: a point whose
	// needed window is longer is recorded unmeasurable, not measured
	// with a larger error. An H100's counter moved every 100.7 ms
	// (h200-frontier4, frontier4/NOTES.md), which needs 2.24 s at any
	// power for energyAim: 2 s made every point unmeasurable there.
	energyWindowMax = 2500 * time.Millisecond
	// counterWatch bounds the measurement of the counter's period.
	counterWatch = 3 * time.Second
	// counterChanges is how many changes of the counter the period is
	// measured over (the median of the gaps between them).
	counterChanges = 5
)

// An energyMeter is what the window reads of the board (nvml.Device).
type energyMeter interface {
	EnergyMJ() (uint64, error)
	PowerMW() (uint32, error)
}

// A counterPeriod is the measured update period of a meter's counter.
type counterPeriod struct {
	period time.Duration
	err    error // the counter could not be characterised: every window is unmeasurable
}

// measurePeriod watches the counter until it has changed counterChanges
// times, or counterWatch has passed, and returns the median gap between
// changes. now is the clock (time.Now outside tests).
func measurePeriod(m energyMeter, now func() time.Time) counterPeriod {
	start := now()
	last, err := m.EnergyMJ()
	if err != nil {
		return counterPeriod{err: fmt.Errorf("reading the energy counter: %w", err)}
	}
	var at []time.Time
	for len(at) < counterChanges {
		t := now()
		if t.Sub(start) > counterWatch {
			return counterPeriod{err: fmt.Errorf("the energy counter changed %d times in %v (%d needed to know its period)", len(at), counterWatch, counterChanges)}
		}
		e, err := m.EnergyMJ()
		if err != nil {
			return counterPeriod{err: fmt.Errorf("reading the energy counter: %w", err)}
		}
		if e < last {
			return counterPeriod{err: fmt.Errorf("the energy counter went back from %d to %d mJ", last, e)}
		}
		if e != last {
			at = append(at, t)
			last = e
		}
	}
	gaps := make([]time.Duration, 0, len(at)-1)
	for i := 1; i < len(at); i++ {
		gaps = append(gaps, at[i].Sub(at[i-1]))
	}
	sort.Slice(gaps, func(i, j int) bool { return gaps[i] < gaps[j] })
	return counterPeriod{period: gaps[len(gaps)/2]}
}

// neededWindow is the window for which the counter's error bound, P·period
// + 1 mJ (each read lags the board by up to one period; the unit is 1 mJ),
// is energyAim of the energy P·window: (period + 1 mJ / P) / energyAim.
func neededWindow(period time.Duration, powerMW float64) time.Duration {
	quantumNS := energyQuantumMJ / powerMW * 1e9 // 1 mJ at P mW lasts 1e9/P ns
	return time.Duration((float64(period) + quantumNS) / energyAim)
}

// An energyWindow is what measureEnergy needs of the probe and device.
type energyWindow struct {
	meter  energyMeter
	period counterPeriod
	now    func() time.Time
	max    time.Duration
	// chunk enqueues some of the probe's steps and returns how many.
	chunk func() (int, error)
	// chunkTime times one chunk on the device (events around it), so
	// that the window enqueues as many chunks as fill the needed time: a
	// host that stops enqueuing at the needed time leaves the device a
	// backlog of queued launches (seen: 2.0 s needed, 2.1-6.6 s run).
	chunkTime func() (time.Duration, error)
	// drain waits for the stream to empty.
	drain func() error
}

// measure runs the window. Its error is the device's (a failed launch or
// sync); what goes wrong with the counter is recorded in the Energy's
// Unmeasurable, not returned.
func (w energyWindow) measure() (*results.Energy, error) {
	e := &results.Energy{Method: results.EnergyMethodNVML, CounterPeriodNS: float64(w.period.period)}
	if w.period.err != nil {
		e.Unmeasurable = w.period.err.Error()
		return e, nil
	}
	if err := w.drain(); err != nil {
		return nil, err
	}
	p0, perr := w.meter.PowerMW()
	if perr != nil {
		e.Unmeasurable = fmt.Sprintf("reading the board power: %v", perr)
		return e, nil
	}
	e.PowerBeforeMW = float64(p0)
	if p0 == 0 {
		e.Unmeasurable = "the board reported 0 mW"
		return e, nil
	}
	need := neededWindow(w.period.period, float64(p0))
	e.NeededNS = float64(need)
	if need > w.max {
		e.Unmeasurable = fmt.Sprintf("the counter's %v updates and 1 mJ unit at %.0f W need a %v window for a %.1f%% bound, over the %v allowed",
			w.period.period.Round(time.Microsecond), float64(p0)/1e3, need.Round(time.Millisecond), 100*energyAim, w.max)
		return e, nil
	}
	tc, err := w.chunkTime()
	if err != nil {
		return nil, fmt.Errorf("timing the energy window's launches: %w", err)
	}
	// rounds of chunks to enqueue, each for at most a quarter of the
	// needed time by the timed chunk, then drained: a timed chunk shorter
	// than the window's can then overshoot by a quarter at most, and the
	// drains leave the device idle for a launch's latency four times.
	round := func(left time.Duration) int {
		if tc <= 0 {
			return 1
		}
		return int((min(left, need/4) + tc - 1) / tc)
	}
	chunks := round(need)
	e0, err := w.meter.EnergyMJ()
	if err != nil {
		e.Unmeasurable = fmt.Sprintf("reading the energy counter: %v", err)
		return e, nil
	}
	t0 := w.now()
	// Rounds of chunks (or until the host has taken the needed time to
	// enqueue them), drained, until the needed time has passed.
	var t1 time.Time
	for {
		for i := 0; i < chunks && w.now().Sub(t0) < need; i++ {
			n, err := w.chunk()
			if err != nil {
				return nil, fmt.Errorf("the energy window's launches: %w", err)
			}
			e.Steps += n
		}
		if err := w.drain(); err != nil {
			return nil, fmt.Errorf("the energy window's launches: %w", err)
		}
		t1 = w.now()
		left := need - t1.Sub(t0)
		if left <= 0 {
			break
		}
		chunks = round(left)
	}
	e1, err := w.meter.EnergyMJ()
	if err != nil {
		e.Unmeasurable = fmt.Sprintf("reading the energy counter: %v", err)
		return e, nil
	}
	if p1, err := w.meter.PowerMW(); err == nil {
		e.PowerAfterMW = float64(p1)
	}
	e.WindowNS = float64(t1.Sub(t0))
	if e1 <= e0 {
		e.Unmeasurable = fmt.Sprintf("the energy counter did not move over the %v window (%d mJ to %d)", t1.Sub(t0).Round(time.Millisecond), e0, e1)
		return e, nil
	}
	e.EnergyMJ = float64(e1 - e0)
	// The bound at the window's own power: its energy over its time.
	pw := e.EnergyMJ / e.WindowNS // mJ per ns
	e.RelBound = (pw*float64(w.period.period) + energyQuantumMJ) / e.EnergyMJ
	if e.RelBound > energyTol {
		e.Unmeasurable = fmt.Sprintf("the counter's resolution bounds this window's energy to ±%.1f%%, over %.0f%%", 100*e.RelBound, 100*energyTol)
		return e, nil
	}
	if e.Steps == 0 {
		e.Unmeasurable = "no step ran in the window"
		return e, nil
	}
	e.UJPerStep = 1e3 * e.EnergyMJ / float64(e.Steps)
	return e, nil
}

// checkBusy compares the window's time per step with the probe's median
// step, measured after it: where the window ran slower than the samples
// by more than energyTol, the device idled between the host's launches
// (a host-bound window: short steps launched one by one) and the energy
// per step holds idle energy no step drew, so it is recorded
// unmeasurable, with the numbers that say so.
func checkBusy(e *results.Energy, medianNS float64) {
	if e == nil || e.UJPerStep == 0 || e.Steps == 0 || medianNS <= 0 {
		return
	}
	per := e.WindowNS / float64(e.Steps)
	if per > (1+energyTol)*medianNS {
		e.Unmeasurable = fmt.Sprintf("the window ran a step every %.2f µs against the probe's median of %.2f µs: the device idled between launches, and that energy is no step's", per/1e3, medianNS/1e3)
		e.UJPerStep = 0
	}
}

// A boardEnergy is the backend's meter, opened at the first window: nil
// meter when NVML is absent or does not know the board (then no probe
// carries an Energy, and the log says why once). open is nil on a backend
// without a real device (the tests' model).
type boardEnergy struct {
	open   func() (energyMeter, error)
	opened bool
	meter  energyMeter
	period counterPeriod
}

// nvmlMeter opens NVML (once per process) and finds the board by its UUID.
func nvmlMeter(uuid string) func() (energyMeter, error) {
	return func() (energyMeter, error) {
		n, err := nvml.Open()
		if err != nil {
			return nil, err
		}
		return n.DeviceByUUID(uuid)
	}
}

// energyMeter opens the meter and measures the counter's period, once.
func (b *Backend) energyMeter() (energyMeter, counterPeriod) {
	be := &b.energy
	if !be.opened && be.open != nil {
		be.opened = true
		dev, err := be.open()
		if err != nil {
			if errors.Is(err, nvml.ErrNoNVML) {
				b.logf("energy: not recorded: %v", err)
			} else {
				b.logf("energy: not recorded: NVML: %v", err)
			}
			return nil, counterPeriod{}
		}
		be.meter = dev
		be.period = measurePeriod(dev, time.Now)
		if be.period.err != nil {
			b.logf("energy: unmeasurable in this run: %v", be.period.err)
		} else {
			b.logf("energy: the counter updates every %v", be.period.period)
		}
	}
	return be.meter, be.period
}

// energy runs the energy window of a hot or graph probe: chunk enqueues
// one sample's launches (batch pairs, or one replay). Nil when the board
// has no meter.
func (r *pointRun) energy(chunk func() (int, error)) (*results.Energy, error) {
	m, period := r.b.energyMeter()
	if m == nil {
		return nil, nil
	}
	chunkTime := func() (time.Duration, error) {
		ms, _, err := r.b.timed(func() error { _, err := chunk(); return err })
		return time.Duration(ms * 1e6), err
	}
	return energyWindow{meter: m, period: period, now: time.Now, max: energyWindowMax,
		chunk: chunk, chunkTime: chunkTime, drain: r.b.gpu.sync}.measure()
}
