package gate

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/ktune/ktune/internal/results"
)

// memory reports what the checks after every launch found (Findings): each
// failure, and one pass per kind naming the buffers none was found on and
// how many launches they covered. It runs last, so that it reports every
// gate's launches.
var memory = Gate{
	Name:     "memory",
	Kinds:    []results.GateKind{results.GateReadOnly, results.GateGuard},
	Settings: []string{"GateNKV"},
	Run: func(_ context.Context, s Session, log *Log) error {
		p := s.Point()
		f := s.Findings()
		nkv := slices.Max(NKVs(p.GateNKV, p.Config.Shape.Capacity))
		out := slices.Clone(f.gates)
		f.gated = len(f.gates)
		inputs, all := s.Buffers()
		unflagged := func(kind results.GateKind, bufs []string) []string {
			var out []string
			for _, b := range bufs {
				if !f.flagged[string(kind)+"/"+b] {
					out = append(out, b)
				}
			}
			return out
		}
		pass := func(kind results.GateKind, bufs []string, what string) {
			if len(bufs) > 0 && f.checks > 0 {
				out = append(out, results.Gate{Kind: kind, NKV: nkv, Pass: true, Seed: p.Seed, Buffer: strings.Join(bufs, ","), FirstDiff: -1,
					Detail: fmt.Sprintf("%s after each of %d launches", what, f.checks)})
			}
		}
		pass(results.GateReadOnly, unflagged(results.GateReadOnly, inputs), "unchanged")
		pass(results.GateGuard, unflagged(results.GateGuard, all), "canaries intact")
		for _, g := range out {
			log.Add(g)
		}
		return nil
	},
}
