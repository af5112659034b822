package plan

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
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
// blocks_per_sm from the launch's own blocks_per_sm where the spec
// declares it (the engine's fact, which wins over the flag: a step's
// launches are different kernels, of different occupancies), else from
// Override.BlocksPerSM (--blocks-per-sm), else 1. A declared value is
// the launch's whether or not its grid reads it (Launch.BlocksPerSM), so
// that the probe checks it on the device all the same. The probe refuses a point whose device or kernel differs from what its grid
// was planned for, before any launch (probe.checkDeviceSymbols). An
// engine's host planner may size more than grids from the device
// (FlashInfer pads its planned work to blocks per SM × SMs): a variant's
// planned arrays, scratch and shared sizes and argument expressions may
// read sms, which a point evaluates at the same assumption and records once
// (Point.SMs; pointSMs), for the probe to check likewise.
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

// deviceEnv adds the device symbols that src, a grid expression of a
// launch that declares blocks_per_sm declared (0: none), reads to env, at
// the plan's assumptions, and returns what it assumed (0 for a symbol src
// does not read).
func (b *builder) deviceEnv(env expr.Env, src string, declared int) (sms, bps int, err error) {
	x, perr := expr.Parse(src)
	if perr != nil {
		return 0, 0, nil // the evaluation reports it
	}
	syms := x.Symbols()
	if slices.Contains(syms, spec.SymSMs) {
		if sms, err = b.assumedSMs(src); err != nil {
			return 0, 0, err
		}
		env[spec.SymSMs] = int64(sms)
	}
	if slices.Contains(syms, spec.SymBlocksPerSM) {
		bps = cmp.Or(declared, b.over.BlocksPerSM)
		if bps == 0 {
			bps = DefaultBlocksPerSM
		}
		env[spec.SymBlocksPerSM] = int64(bps)
	}
	return sms, bps, nil
}

// assumedSMs is the SM count the plan evaluates sms at, src being an
// expression that reads it: Override.SMs, else the architecture's default.
func (b *builder) assumedSMs(src string) (int, error) {
	if b.over.SMs != 0 {
		return b.over.SMs, nil
	}
	sms, ok := DefaultSMs(b.arch)
	if !ok {
		return 0, fmt.Errorf("%q reads sms, and there is no default SM count for arch %q: give it (ktune plan --sms N)", src, b.arch)
	}
	return sms, nil
}

// pointSMs is the SM count a point of v evaluates sms at in its planned
// arrays, scratch sizes and argument expressions (Point.SMs): the plan's
// assumption, as for a grid, when one of them reads sms; else 0, and
// then none has sms to read (abi.Dims.Env).
func (b *builder) pointSMs(v *spec.Variant) (int, error) {
	for _, src := range pointExprs(v) {
		if x, err := expr.Parse(src); err == nil && slices.Contains(x.Symbols(), spec.SymSMs) {
			return b.assumedSMs(src)
		}
	}
	return 0, nil
}

// pointExprs are the expressions of v that the spec lets read sms besides
// its grids (spec.PointSymbols): its planned arrays', its scratch sizes,
// its launches' shared sizes and integer arguments, in structs, vectors
// and tensor maps too.
func pointExprs(v *spec.Variant) []string {
	var out []string
	for _, p := range v.Planned {
		out = append(out, p.Count, p.Value, p.Length)
	}
	for _, sc := range v.Scratch {
		out = append(out, sc.Bytes)
	}
	var arg func(a abi.Arg)
	arg = func(a abi.Arg) {
		switch {
		case a.TensorMap != nil:
			m := a.TensorMap
			out = slices.Concat(out, m.Dims, m.Strides, m.Box, m.ElementStrides)
		case a.Struct != nil:
			for _, f := range a.Struct.Fields {
				arg(f.Arg)
			}
		case a.Elems != nil:
			for _, e := range a.Elems {
				arg(e)
			}
		case a.IsExpr():
			out = append(out, a.Value)
		}
	}
	for _, l := range v.Launches {
		out = append(out, l.Shared)
		for _, a := range l.Args {
			arg(a)
		}
	}
	return out
}
