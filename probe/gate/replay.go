package gate

import (
	"context"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/internal/results"
)

// replay checks that a graph captured once stays correct while nkv
// changes on the device, as an engine replaying its decode graph relies
// on. Replay safety belongs to the compiled kernel, not to the probes a
// spec asks for, so it runs for every gate group: one pair is captured at
// p.CaptureNKV (below every split boundary) and replayed at each of
// p.ReplayNKV in order; every replay must equal a fresh launch byte for
// byte and, at the lengths the uniform inputs cover, the oracle.
//
// A kernel whose grid reads nkv (p.Geometry) fails outright unless the
// spec says the engine never captures it: a replay keeps the grid of its
// capture whatever lengths a gate happens to try.
var replay = Gate{
	Name:     "replay",
	Kinds:    []results.GateKind{results.GateReplay},
	Settings: []string{"GateNKV", "Tol", "NeverCaptured", "CaptureNKV", "ReplayNKV", "Geometry"},
	Run:      runReplay,
}

func runReplay(ctx context.Context, s Session, log *Log) error {
	p := s.Point()
	shape := p.Config.Shape
	if p.NeverCaptured {
		return nil
	}
	capN := min(max(1, p.CaptureNKV), shape.Capacity)
	if p.Geometry != nil {
		log.Add(results.Gate{Kind: results.GateReplay, NKV: capN, Seed: p.Seed, FirstDiff: -1,
			Detail: fmt.Sprintf("the partial grid %q reads nkv: a captured CUDA graph replays the grid of its capture; "+
				"say graph: never on the variant if the engine never captures this kernel", p.Geometry.Grid)})
	}
	var replays []int
	for _, n := range p.ReplayNKV {
		if n >= 1 && n <= shape.Capacity {
			replays = append(replays, n)
		}
	}
	if len(replays) == 0 {
		return nil
	}
	rows := slices.Max(NKVs(p.GateNKV, shape.Capacity))
	in, err := s.UploadSet(oracle.SetUniform, rows, Lengths(rows, shape))
	if err != nil {
		return err
	}
	g, err := s.Capture(capN, Lengths(capN, shape))
	if err != nil {
		return err
	}
	defer g.Close()
	bounds := s.Bounds()
	for _, n := range replays {
		if err := ctx.Err(); err != nil {
			return err
		}
		lengths := Lengths(n, shape)
		replayed, err := g.Replay(n, lengths)
		if err != nil {
			return err
		}
		fresh, err := s.Launch(s.Kernel(), n, lengths)
		if err != nil {
			return fmt.Errorf("fresh launch at nkv %d: %w", n, err)
		}
		gate := Same(results.GateReplay, n, p.Seed, replayed, fresh,
			fmt.Sprintf("graph captured at nkv %d, replayed at %d", capN, n))
		gate.Inputs = string(oracle.SetUniform)
		if n <= rows {
			refs, err := s.References(in, [][]int{lengths})
			if err != nil {
				return err
			}
			m, err := oracle.Compare(floats(replayed.Out), refs[0].Out, bounds)
			if err != nil {
				return err
			}
			gate.MaxAbs, gate.MaxRel, gate.NMSE, gate.NaNs = m.MaxAbs, m.MaxRel, m.NMSE, m.NaNs
			// Equal bytes are no proof: a fresh launch after the replays
			// shares whatever state the replays left. So the replay's out
			// and a declared lse are judged against the oracle too.
			against := []results.Gate{Tolerance(n, p.Seed, m, bounds)}
			if replayed.LSE != nil {
				t, err := lseTolerance(p, n, replayed.LSE, refs[0].LSE)
				if err != nil {
					return err
				}
				against = append(against, t)
			}
			for _, t := range against {
				if t.Pass {
					continue
				}
				what := "out"
				if t.Buffer != "" {
					what = t.Buffer
				}
				if gate.Pass {
					gate.Buffer = what
				}
				gate.Pass = false
				if gate.Detail == "" {
					gate.Detail = fmt.Sprintf("graph captured at nkv %d, replayed at %d", capN, n)
				}
				gate.Detail += "; " + what + " against the oracle: " + t.Detail
			}
		}
		log.Add(gate)
	}
	return nil
}
