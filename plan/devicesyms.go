package plan

import (
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/spec"
)

// An engine that sizes its grid from the device (persistent kernels, a
// split count that fills the SMs) reads two device symbols in a grid
// expression: sms, the device's SM count, and blocks_per_sm, the blocks
// of the launch's kernel that fit on one SM at its block and shared memory
// (cuOccupancyMaxActiveBlocksPerMultiprocessor). A plan is made without a
// GPU and must stay deterministic, so it evaluates both at stated
// assumptions, hashed with the point: sms from Override.SMs (ktune plan
// --sms; a sweep passes its device's), else the architecture's default;
// blocks_per_sm from Override.BlocksPerSM (--blocks-per-sm), else 1. The
// probe refuses a point whose device or kernel differs from what its grid
// was planned for, before any launch (probe.checkDeviceSymbols).
// DefaultBlocksPerSM is blocks_per_sm when the plan is given none.
const DefaultBlocksPerSM = 1

// defaultSMs is the SM count a plan assumes for an architecture when it
// is given none: the part of that architecture ktune is run on (sm_90:
// the H100 SXM and H200, 132; sm_100: the B200, 148; sm_80: the A100,
// 108).
var defaultSMs = map[string]int{"sm_80": 108, "sm_90": 132, "sm_90a": 132, "sm_100": 148, "sm_100a": 148}

// DefaultSMs is the SM count assumed for arch, false when none is known.
func DefaultSMs(arch string) (int, bool) {
	n, ok := defaultSMs[arch]
	return n, ok
}

// deviceEnv adds the device symbols that src reads to env, at the plan's
// assumptions, and returns what it assumed (0 for a symbol src does not
// read).
func (b *builder) deviceEnv(env expr.Env, src string) (sms, bps int, err error) {
	x, perr := expr.Parse(src)
	if perr != nil {
		return 0, 0, nil // the evaluation reports it
	}
	syms := x.Symbols()
	if slices.Contains(syms, spec.SymSMs) {
		sms = b.over.SMs
		if sms == 0 {
			var ok bool
			if sms, ok = DefaultSMs(b.arch); !ok {
				return 0, 0, fmt.Errorf("%q reads sms, and there is no default SM count for arch %q: give it (ktune plan --sms N)", src, b.arch)
			}
		}
		env[spec.SymSMs] = int64(sms)
	}
	if slices.Contains(syms, spec.SymBlocksPerSM) {
		bps = b.over.BlocksPerSM
		if bps == 0 {
			bps = DefaultBlocksPerSM
		}
		env[spec.SymBlocksPerSM] = int64(bps)
	}
	return sms, bps, nil
}
