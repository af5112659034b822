package spec

import "github.com/ktune/ktune/internal/abi"

// SpecVersion is the version of the spec format this build reads. A spec
// may say `version: 1`; a larger version is refused by name rather than
// half-understood.
const SpecVersion = 1

// NKV is the name of the context-length axis.
const NKV = "nkv"

// Symbols are the names a geometry expression may use besides the defines:
// the shape's sizes, group = heads/kv_heads, capacity (rows allocated per
// sequence) and nkv. A grid that depends on nkv cannot be replayed from a
// captured CUDA graph; the plan warns and the replay gate fails it.
var Symbols = []string{"heads", "kv_heads", "head_dim", "batch", "group", "capacity", NKV}

// GridSymbols are the device's symbols that a launch's grid may also
// read: the SM count and the blocks of the launch's kernel resident per
// SM, for engines that size grids from the device (plan/devicesyms.go
// says what a plan made without a GPU assumes for them). Not in a block
// or shared size, which the occupancy itself depends on.
var GridSymbols = []string{SymSMs, SymBlocksPerSM}

// The grid symbols' names. sms is also a point symbol (PointSymbols);
// its name is the ABI's, whose Dims.Env gives it to the probe.
const (
	SymSMs         = abi.SymSMs
	SymBlocksPerSM = "blocks_per_sm"
)

// PointSymbols are the device's symbols that a variant's planned arrays,
// scratch sizes, integer argument expressions and launches' shared sizes
// may also read: the SM count only, for an engine whose host planner sizes its work from the
// device (FlashInfer's decode plan under CUDA graphs pads its work items
// to blocks per SM × SMs). blocks_per_sm is the occupancy of a launch's
// own kernel, checked against the grid it sized, and stays a grid's
// (checkExprWith says so when one of these reads it). plan/devicesyms.go
// says what a plan made without a GPU assumes for sms.
var PointSymbols = []string{SymSMs}

// defaultGates are the gate settings of a spec without a gates section.
// The context lengths cover a single row (1), lengths that are not a
// multiple of any power-of-two split count or row window (29, 52, 1641) and
// a round one (512); the planner adds each point's chunk boundaries.
func defaultGates() Gates {
	return Gates{NKV: []int{1, 29, 52, 512, 1641}, MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6, Seed: 1}
}

// defaultMeasure is the stopping rule of a spec without a measure section.
func defaultMeasure() Measure {
	return Measure{Warmup: 3, MinSamples: 10, MaxSamples: 200, MaxNoise: 0.03, BudgetSec: 2, HotBatch: 20, TimeoutSec: 120}
}
