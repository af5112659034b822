package probe

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/probe/gate"
)

// What the timed launches computed.
//
// The gates make about a hundred launches; the probes then make hundreds
// more per point, and a kernel can behave differently there: state that
// drifts with the launch count, or a memo that serves a repeated launch
// from an earlier one's result (correct bytes, fast, and nothing like an
// engine's step, whose query changes every time). So:
//
//   - before every timed sample, outside the timed region, partial, out
//     and a declared lse are poisoned again: a launch that skips its work
//     leaves poison;
//   - consecutive timed launches alternate between two q at distinct
//     addresses with different values (workspace.qAlt), each with its own
//     partial, out and lse: a memo of the previous launch gives the other
//     query's output, and a write into the other set's buffers leaves
//     this set's poisoned;
//   - after each probe the last timed launch's outputs are read back and
//     must be all written and equal, byte for byte, a fresh launch on the
//     same module at the same lengths and q;
//   - after all probes the gate launch at the shortest gate length runs
//     once more on the same module, over the same uniform inputs, and must
//     give the bytes it gave in the gates (state that changes with the
//     launch count shows here even when the timed lengths are all wrong
//     alike).
//
// None of this changes what cold and hot mean: the poison is a memset of
// the outputs only, enqueued before the cold probe's L2 flush and before
// the hot probe's blocker, so a cold sample still starts with no K/V line
// in L2 and a hot one with K/V as warm as the previous sample left it (the
// outputs' lines are dirty in L2 either way: the previous sample's kernels
// wrote them too); K and V, which carry the traffic, are the same bytes at
// the same addresses in every launch, and the second q is as small as the
// first and as warm.

// A timedOutputs is what one probe's last timed launch on one set of q
// and outputs left.
type timedOutputs struct {
	probe results.Probe
	alt   bool
	outputs
}

// readTimed reads back, after probe, the outputs of each set its launches
// ran on, and runs the memory checks over its launches. It returns the
// failures of the written check; the rest is judged in timedGates.
func (r *pointRun) readTimed(probe results.Probe) ([]results.Gate, error) {
	c := &r.p.Config
	nkv := slices.Max(c.TimedLengths())
	var fails []results.Gate
	for i, used := range r.used {
		if !used {
			continue
		}
		o, err := r.readBack(qSet(i))
		if err != nil {
			return nil, fmt.Errorf("reading back the %s probe's last launch: %w", probe, err)
		}
		if g := gate.Written(nkv, r.p.Seed, o.gate(), r.l.gatedSlots(c.Shape), c.Shape.HeadDim); !g.Pass {
			g.Kind = results.GateTimed
			g.Detail = fmt.Sprintf("the last timed launch of the %s probe (q set %d) left outputs unwritten (a launch that skipped its work): %s", probe, i, g.Detail)
			fails = append(fails, g)
			continue
		}
		r.timed = append(r.timed, timedOutputs{probe: probe, alt: i == 1, outputs: o})
	}
	r.used = [2]bool{}
	if err := r.afterLaunch(nkv); err != nil {
		return nil, err
	}
	return fails, nil
}

// freshModule loads the point's CUBIN again as a new module, whose
// __device__ state starts from its initial values, and opts its
// functions in to g's dynamic shared memory (a new module's functions
// need their own opt-in). The caller unloads it.
func (r *session) freshModule(g geometry) (*kernelPair, error) {
	k, err := r.b.gpu.reload(r.p.Source, r.k)
	if err != nil {
		return nil, err
	}
	if _, err := r.b.gpu.resources(k, g); err != nil {
		r.b.gpu.unload(k)
		return nil, fmt.Errorf("preparing a fresh module: %w", err)
	}
	return k, nil
}

// freshTimed judges every probe's last timed launches against launches
// of a freshly loaded module, whose __device__ state starts from its
// initial values, at the same lengths on the same q: one verdict per probe.
func (r *pointRun) freshTimed() ([]results.Gate, error) {
	if len(r.timed) == 0 {
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
	var out []results.Gate
	byProbe := map[results.Probe]int{}
	for _, t := range r.timed {
		i := firstSet
		if t.alt {
			i = altSet
		}
		if ref[i] == nil {
			fo, err := r.runOutputs(k, c, r.g, lengths, i)
			if err != nil {
				return nil, fmt.Errorf("a fresh module's launch after the probes: %w", err)
			}
			ref[i] = &fo
		}
		g := gate.Same(results.GateTimed, nkv, r.p.Seed, t.outputs.gate(), ref[i].gate(),
			fmt.Sprintf("the last timed launch of the %s probe (q set %d) differs from a fresh module's launch on the same inputs (a memo of an earlier launch, or state that drifts with the launch count)", t.probe, i))
		if j, ok := byProbe[t.probe]; ok {
			if out[j].Pass && !g.Pass {
				out[j] = g
			}
			continue
		}
		if g.Pass {
			g.Detail = fmt.Sprintf("the %s probe's last timed launches equal a fresh module's", t.probe)
		}
		byProbe[t.probe] = len(out)
		out = append(out, g)
	}
	r.timed = nil
	return out, nil
}

// againGate runs the gate launch of ref once more after the probes, on
// the module that ran them.
func (r *pointRun) againGate(ref *gate.Launch) (results.Gate, error) {
	c, s := &r.p.Config, r.p.Config.Shape
	lengths := gate.Lengths(ref.NKV, s)
	if !r.ws.holdsUniform(keyOf(r.p), ref.NKV) {
		rows := slices.Max(gate.NKVs(r.p.GateNKV, s.Capacity))
		if _, err := r.uploadSet(oracle.SetUniform, rows, gate.Lengths(rows, s)); err != nil {
			return results.Gate{}, err
		}
	}
	o, err := r.runOutputs(r.k, c, r.geometryAt(r.g, ref.NKV), lengths, firstSet)
	if err != nil {
		return results.Gate{}, fmt.Errorf("the gate launch at nkv %d after the probes: %w", ref.NKV, err)
	}
	g := gate.Same(results.GateTimed, ref.NKV, r.p.Seed, ref.Outputs, o.gate(),
		"after the probes the module gives other bytes than in the gates (behaviour that changes with the launch count)")
	g.Inputs = string(oracle.SetUniform)
	if g.Pass {
		g.Detail = "after the probes the gate launch gives the bytes it gave in the gates"
	}
	return g, nil
}

// holdsUniform reports whether the workspace's q and first rows hold the
// uniform gate inputs of key, covering length nkv: the last upload was
// them (uploadSet).
func (w *workspace) holdsUniform(key inputsKey, nkv int) bool {
	return w.uniform.key == key && w.uniform.rows >= nkv && w.uniform.rows > 0
}

// timedGates runs after the probes of a point: the fresh module's
// verdicts, the gate launch again, and the memory checks' failures found
// since the gates. A failure fails the point and its gate group: the
// probes' numbers describe launches that did not compute what the gates
// passed.
func (r *pointRun) timedGates(timed []results.Gate) error {
	fresh, err := r.freshTimed()
	if err != nil {
		return err
	}
	timed = append(timed, fresh...)
	// The launch-count check, every point (launchcount.go).
	counted, err := r.launchCountGates()
	if err != nil {
		return err
	}
	timed = append(timed, counted...)
	v := r.b.gates[r.p.GateKey]
	if v != nil && v.ref != nil && r.timedN > 0 {
		g, err := r.againGate(v.ref)
		if err != nil {
			return err
		}
		timed = append(timed, g)
	}
	fails := slices.Clone(r.found.AfterGates())
	for _, g := range timed {
		if !g.Pass {
			fails = append(fails, g)
		}
	}
	r.rec.Gates = append(r.rec.Gates, timed...)
	if len(fails) == 0 {
		return nil
	}
	r.rec.Gates = append(r.rec.Gates, r.found.AfterGates()...)
	if v != nil {
		v.pass = false
		v.gates = append(v.gates, fails...)
	}
	r.rec.Status = results.StatusGateFailed
	r.rec.Error = failedGates(r.rec.Gates)
	// A gate_failed record carries no timings.
	r.rec.Probes = nil
	return nil
}
