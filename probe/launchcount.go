package probe

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/probe/gate"
)

// Invariance to the launch count, for every point.
//
// No correct kernel's output depends on how many launches came before,
// and a kernel whose device state corrupts one launch in N (a counter
// that wraps, a ring re-armed only sometimes) passes the other gates: the
// timed gate compares only each probe's last launch with a fresh
// module's, and the gates make a hundred launches or so. So:
//
//   - during the probes, outside the timed region, the outputs of the
//     sets the probe's launches ran on are read back after samples 1, 2,
//     3, 5, 8, 13, ... (Fibonacci: a few dozen reads over thousands of
//     samples), each the output of the sample's last launch on its set;
//   - once per compiled kernel (GateKey), after the probes, the kernel
//     runs at the shortest gate length until this run has made
//     launchRunTotal launches of it (Options.LaunchRun), and at least a
//     fifth of that, every launch over poisoned outputs and read back;
//
// and every output read is compared byte for byte with a freshly loaded
// module's launch on the same inputs. A corruption of period N is caught
// wherever a multiple of N falls in the long run, which covers every
// period up to its length (600 launches at least) whatever came before, and by the samples
// wherever one lands on it. What it cannot see: a period longer than the
// module's launches in one run, and a corruption that spares the last
// launch of every sample and every launch of the long run.

const (
	// launchRunTotal is how many launches of the module one run reaches
	// with its long run: a few thousand.
	launchRunTotal = 3000
	// launchRunMin is the fewest launches of the long run, each
	// compared, as a fraction of its total.
	launchRunMinFrac = 5
)

// launchRun is the launches one run of a module reaches, and the fewest
// the long run makes.
func (b *Backend) launchRun() (total, least int) {
	total = b.opts.LaunchRun
	if total <= 0 {
		total = launchRunTotal
	}
	return total, max(1, total/launchRunMinFrac)
}

// A sampledOutputs is the outputs of a timed launch read between samples.
type sampledOutputs struct {
	probe  results.Probe
	sample int // 1-based: after this many samples of the probe
	timedOutputs
}

// launchSampled reports whether the outputs are read after sample n
// (1-based): n a Fibonacci number.
func launchSampled(n int) bool {
	a, b := 1, 2
	for a < n {
		a, b = b, a+b
	}
	return a == n
}

// sampleLaunches reads back, after sample n of probe, the outputs of each
// set the probe's launches ran on, when n is sampled. A launch that left
// outputs unwritten is kept too: the comparison fails it.
func (r *pointRun) sampleLaunches(probe results.Probe, n int) error {
	if !launchSampled(n) {
		return nil
	}
	for i, used := range r.used {
		if !used {
			continue
		}
		o, err := r.readBack(qSet(i))
		if err != nil {
			return fmt.Errorf("reading back the %s probe's launch after sample %d: %w", probe, n, err)
		}
		// Only out and lse: partial is upstream, and kept bytes cost.
		r.recycle(o.partial)
		o.partial = nil
		r.sampled = append(r.sampled, sampledOutputs{probe: probe, sample: n, timedOutputs: timedOutputs{probe: probe, alt: i == 1, outputs: o}})
	}
	return nil
}

// launchCountGates judges the sampled timed launches against a fresh
// module's launch at the point's timed lengths on each set of q and, once
// per compiled kernel, the long run against the fresh module's launch at
// its length: one verdict.
func (r *pointRun) launchCountGates() ([]results.Gate, error) {
	sampled := r.sampled
	r.sampled = nil
	v := r.b.gates[r.p.GateKey]
	long := v == nil || !v.longRun
	if len(sampled) == 0 && !long {
		return nil, nil
	}
	c := &r.p.Config
	lengths := c.TimedLengths()
	nkv := slices.Max(lengths)
	k, err := r.freshModule(r.g)
	if err != nil {
		return nil, err
	}
	defer r.b.gpu.unload(k)
	var ref [2]*outputs
	refOf := func(set int) (outputs, error) {
		if ref[set] == nil {
			o, err := r.runOutputs(k, c, r.g, lengths, qSet(set))
			if err != nil {
				return outputs{}, fmt.Errorf("a fresh module's launch for the launch-count check: %w", err)
			}
			o.partial = nil
			ref[set] = &o
		}
		return *ref[set], nil
	}
	fail := func(where string, a, b outputs) results.Gate {
		return gate.Same(results.GateLaunches, nkv, r.p.Seed, a.gate(), b.gate(),
			where+" differs from a fresh module's launch on the same inputs (device state that changes with the launch count)")
	}
	for _, s := range sampled {
		set := 0
		if s.alt {
			set = 1
		}
		want, err := refOf(set)
		if err != nil {
			return nil, err
		}
		if g := fail(fmt.Sprintf("the %s probe's launch on q set %d after sample %d", s.probe, set, s.sample), s.outputs, want); !g.Pass {
			return []results.Gate{g}, nil
		}
	}
	detail := fmt.Sprintf("%d launches read between the probes' samples", len(sampled))
	if long {
		if v != nil {
			v.longRun = true
		}
		// At the shortest gate length: the launch count, not the length,
		// is what the run is for, and a launch there costs microseconds
		// where one at the timed length may cost milliseconds.
		short := gate.Lengths(slices.Min(gate.NKVs(r.p.GateNKV, c.Shape.Capacity)), c.Shape)
		g := r.geometryAt(r.g, slices.Max(short))
		want, err := r.runOutputs(k, c, g, short, firstSet)
		if err != nil {
			return nil, fmt.Errorf("a fresh module's launch for the launch-count run: %w", err)
		}
		r.recycle(want.partial)
		want.partial = nil
		total, least := r.b.launchRun()
		n := max(least, total-r.pairs)
		res, err := r.longRun(n, short, g, want, fail)
		if err != nil || !res.Pass {
			return []results.Gate{res}, err
		}
		detail += fmt.Sprintf(" and a run of %d launches at nkv %d (the module's launch %d on) equal a fresh module's", n, slices.Max(short), r.pairs-n+1)
	} else {
		detail += " equal a fresh module's (the long run ran on the group's first point)"
	}
	return []results.Gate{{Kind: results.GateLaunches, NKV: nkv, Seed: r.p.Seed, Pass: true, FirstDiff: -1, Buffer: "out", Detail: detail}}, nil
}

// longRun launches the point's kernel n times at lengths on q set 0 with
// geometry g, each over poisoned outputs, and compares every launch's out
// and lse with want.
func (r *pointRun) longRun(n int, lengths []int, g geometry, want outputs, fail func(string, outputs, outputs) results.Gate) (results.Gate, error) {
	if err := r.setPositions(lengths); err != nil {
		return results.Gate{}, err
	}
	for i := range n {
		if err := r.poison(firstSet); err != nil {
			return results.Gate{}, err
		}
		if err := r.pair(r.k, &r.p.Config, g, firstSet); err != nil {
			return results.Gate{}, fmt.Errorf("launch %d of the launch-count run: %w", i+1, err)
		}
		o, err := r.readBack(firstSet)
		if err != nil {
			return results.Gate{}, fmt.Errorf("launch %d of the launch-count run: %w", i+1, err)
		}
		r.recycle(o.partial)
		o.partial = nil
		if g := fail(fmt.Sprintf("launch %d of a run of %d (the module's launch %d in this run)", i+1, n, r.pairs), o, want); !g.Pass {
			return g, nil
		}
	}
	return results.Gate{Pass: true}, nil
}
