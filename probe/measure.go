package probe

import (
	"context"
	"fmt"
	"time"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/stats"
)

// throttleRatio flags a clock reading below this share of the default SM
// clock: at 75% a memory-bound kernel's latency chain is already visibly
// slower, and boost jitter stays well above it.
const throttleRatio = 0.75

// maxDropped bounds the samples a probe may drop for a blocker timeout
// before it gives up: each costs blockerTimeout.
const maxDropped = 3

// A sampler takes one timed sample in ns per launch pair; dropped reports
// a sample that must not count (the blocker timed out).
type sampler func() (ns float64, dropped bool, err error)

// measure runs the point's probes at its timed lengths.
func (r *pointRun) measure(ctx context.Context) error {
	c := &r.p.Config
	lengths := c.TimedLengths()
	if err := r.setPositions(lengths); err != nil {
		return err
	}
	if err := r.sealInputs(); err != nil {
		return err
	}
	bytes := c.KVBytes()
	var timed []results.Gate
	for _, probe := range r.p.Probes {
		if probe == results.ProbeGraph && r.p.NeverCaptured {
			// The engine never captures this kernel: a graph time would
			// describe a launch that never happens.
			r.b.logf("%s: graph probe skipped (graph: never)", c.Variant)
			continue
		}
		m, err := r.probe(ctx, probe)
		if m != nil {
			m.Bytes = bytes
			m.GBps, m.PctBW = m.Bandwidth(r.rec.Env.ReadBWGBps)
			r.rec.Probes = append(r.rec.Probes, *m)
		}
		if err != nil {
			return err
		}
		g, err := r.readTimed(probe)
		if err != nil {
			return err
		}
		timed = append(timed, g...)
	}
	return r.timedGates(timed)
}

// probe takes one probe's samples under the stopping rule, with SM clock
// readings before and after. A partial measurement comes back with an
// error (cancellation, timeout) so that the record keeps what was seen.
func (r *pointRun) probe(ctx context.Context, probe results.Probe) (*results.Measurement, error) {
	b, ms := r.b, r.p.Measure
	m := &results.Measurement{Probe: probe, Batch: 1}
	r.used, r.graphPairs = [2]bool{}, 0
	var take sampler
	var cleanup func()
	// chunk enqueues one sample's launches, untimed, for the energy
	// window (energy.go); the cold probe has none.
	var chunk func() (int, error)
	switch probe {
	case results.ProbeCold:
		take = r.coldSample
	case results.ProbeHot:
		m.Batch = max(1, ms.HotBatch)
		take = r.hotSample(m.Batch)
		chunk = func() (int, error) { return m.Batch, r.warm(probe, m.Batch) }
	case results.ProbeGraph:
		m.Batch = max(1, ms.HotBatch)
		g, err := r.capture(m.Batch, r.g, true)
		if err != nil {
			return nil, fmt.Errorf("graph probe: %w", err)
		}
		cleanup = g.destroy
		r.graphPairs = m.Batch
		r.used = [2]bool{true, m.Batch > 1}
		take = r.graphSample(g, m.Batch)
		chunk = func() (int, error) { r.pairs += m.Batch; return m.Batch, g.launch() }
	default:
		return nil, failPoint(results.StatusError, "unknown probe %q", probe)
	}
	if cleanup != nil {
		defer cleanup()
	}

	var clocks []float64
	clock := func() error {
		mhz, err := b.sampleClock()
		if err == nil {
			clocks = append(clocks, mhz)
		}
		return err
	}
	finishClock := func() {
		if len(clocks) == 0 {
			return
		}
		m.ClockMHz = stats.Summarize(clocks).Median
		m.Throttled = throttled(clocks, r.rec.Env.ClockMHz)
	}
	defer finishClock()
	if err := clock(); err != nil {
		return m, err
	}

	// Warm-up: instruction caches, TLBs and the clock ramp settle before
	// the first timed sample; the cold probe still flushes L2 per sample.
	for range ms.Warmup {
		if err := r.warm(probe, m.Batch); err != nil {
			return m, err
		}
	}
	if err := b.gpu.sync(); err != nil {
		return m, fmt.Errorf("%s warm-up: %w", probe, err)
	}
	if chunk != nil {
		e, err := r.energy(chunk)
		if err != nil {
			return m, fmt.Errorf("%s probe: %w", probe, err)
		}
		m.Energy = e
	}

	rule := stats.Rule{
		Warmup: ms.Warmup, MinSamples: ms.MinSamples, MaxSamples: ms.MaxSamples,
		MaxNoise: ms.MaxNoise, Budget: time.Duration(ms.BudgetSec * float64(time.Second)),
	}
	dropped := 0
	start := time.Now()
	for {
		v := rule.Decide(m.SamplesNS, time.Since(start))
		if !v.More {
			m.Converged, m.Note = v.Converged, v.Note
			break
		}
		if err := ctx.Err(); err != nil {
			m.Summary = stats.Summarize(m.SamplesNS)
			m.Note = fmt.Sprintf("interrupted after %d samples", len(m.SamplesNS))
			return m, err
		}
		ns, drop, err := take()
		if err != nil {
			m.Summary = stats.Summarize(m.SamplesNS)
			return m, fmt.Errorf("%s probe, sample %d: %w", probe, len(m.SamplesNS)+1, err)
		}
		if drop {
			if dropped++; dropped > maxDropped {
				m.Note = fmt.Sprintf("gave up: the stream blocker timed out %d times", dropped)
				break
			}
			continue
		}
		m.SamplesNS = append(m.SamplesNS, ns)
		// Outside the timed region (launchcount.go).
		if err := r.sampleLaunches(probe, len(m.SamplesNS)); err != nil {
			return m, err
		}
	}
	if dropped > 0 && m.Note == "" {
		m.Note = fmt.Sprintf("%d samples dropped: the stream blocker timed out", dropped)
	}
	m.Summary = stats.Summarize(m.SamplesNS)
	checkBusy(m.Energy, m.Summary.Median)
	if err := clock(); err != nil {
		return m, err
	}
	return m, nil
}

// throttled counts clock readings below throttleRatio of the default clock.
func throttled(mhz []float64, defaultMHz float64) int {
	n := 0
	for _, f := range mhz {
		if f < throttleRatio*defaultMHz {
			n++
		}
	}
	return n
}

// warm runs one untimed launch (pair, batch or graph) of a probe. The
// graph probe warms with plain launches of the same pairs: the same code
// and data, without a second graph.
func (r *pointRun) warm(probe results.Probe, batch int) error {
	n := 1
	if probe != results.ProbeCold {
		n = batch
	}
	for range n {
		if err := r.timedPair(); err != nil {
			return err
		}
	}
	return nil
}

// timedPair enqueues one pair of the probes: consecutive ones read the two
// q in turn (timed.go).
func (r *pointRun) timedPair() error {
	set := qSet(r.timedN % 2)
	r.used[set] = true
	r.timedN++
	return r.pair(r.k, &r.p.Config, r.g, set)
}

// poisonSets poisons the outputs of the sets the next n timed pairs run
// on (n 0: both, for a graph, whose pairs were fixed at capture).
func (r *pointRun) poisonSets(n int) error {
	for i := range 2 {
		if n != 0 && n < 2 && i != r.timedN%2 {
			continue
		}
		if n == 0 && i == 1 && r.graphPairs < 2 {
			continue
		}
		if err := r.poison(qSet(i)); err != nil {
			return err
		}
	}
	return nil
}

// timed runs enqueue between the blocker and its release, bracketed by the
// events, and returns the elapsed time. The blocker holds the stream while
// the host enqueues, so the events see only device time; the release comes
// after the stop event is enqueued and on every error path (a blocker
// never released holds the stream for blockerTimeout).
func (b *Backend) timed(enqueue func() error) (ms float64, dropped bool, err error) {
	d := b.gpu
	if err := d.block(); err != nil {
		return 0, false, err
	}
	released := false
	release := func() {
		if !released {
			d.release()
			released = true
		}
	}
	defer release()
	if err := d.record(evStart); err != nil {
		return 0, false, fmt.Errorf("recording the start event: %w", err)
	}
	if err := enqueue(); err != nil {
		return 0, false, err
	}
	if err := d.record(evStop); err != nil {
		return 0, false, fmt.Errorf("recording the stop event: %w", err)
	}
	release()
	if err := d.waitStop(); err != nil {
		return 0, false, fmt.Errorf("running the timed launches: %w", err)
	}
	t, err := d.elapsedMS()
	if err != nil {
		return 0, false, fmt.Errorf("reading the events: %w", err)
	}
	return t, d.blockerTimedOut(), nil
}

// coldSample times one pair after reading 2 × L2 of flush buffer, so that
// no K/V line survives in L2 from the previous sample: the case of a
// decode step whose other layers evicted this layer's cache. The flush is
// enqueued before the blocker and is not timed. It reads rather than
// writes: a memset flush (nvbench's) leaves L2 full of dirty lines whose
// write-back then runs inside the timed kernels — measured on the H200 at
// 0.5–2.6% of d2's time and 6–7 µs (about 20%) of a 36 µs tensor-core
// kernel at nkv 32768 — which would make the cold number depend on how fast
// the kernel is rather than on the kernel alone, and disagree with Nsight
// Compute's --cache-control all, which flushes clean.
func (r *pointRun) coldSample() (float64, bool, error) {
	b := r.b
	// Before the flush, which evicts the poisoned lines too.
	if err := r.poisonSets(1); err != nil {
		return 0, false, err
	}
	if err := b.flushL2(); err != nil {
		return 0, false, fmt.Errorf("flushing L2: %w", err)
	}
	ms, drop, err := b.timed(r.timedPair)
	return ms * 1e6, drop, err
}

// hotSample times batch back-to-back pairs over warm caches; the sample is
// the time per pair.
func (r *pointRun) hotSample(batch int) sampler {
	return func() (float64, bool, error) {
		if err := r.poisonSets(batch); err != nil {
			return 0, false, err
		}
		ms, drop, err := r.b.timed(func() error {
			for range batch {
				if err := r.timedPair(); err != nil {
					return err
				}
			}
			return nil
		})
		return ms * 1e6 / float64(batch), drop, err
	}
}

// graphSample times one replay of a graph of batch pairs; the sample is
// the time per pair.
func (r *pointRun) graphSample(g graph, batch int) sampler {
	return func() (float64, bool, error) {
		if err := r.poisonSets(0); err != nil {
			return 0, false, err
		}
		ms, drop, err := r.b.timed(func() error {
			r.pairs += batch
			if err := g.launch(); err != nil {
				return fmt.Errorf("replaying the graph: %w", err)
			}
			return nil
		})
		return ms * 1e6 / float64(batch), drop, err
	}
}
