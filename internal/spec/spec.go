// The decoded form of a spec. The format is specified in doc.go, with a
// complete example.

package spec

import (
	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/catalog"
)

// A Spec is a decoded, validated experiment spec.
type Spec struct {
	Version     int    // format version, SpecVersion when the file omits it
	Path        string // file the spec was read from
	Dir         string // directory of Path; user kernels resolve against it
	Name        string
	Description string
	Landed      Landed
	Shapes      []Shape
	Axes        []Axis // nkv first, then defines in file order
	Variants    []Variant
	Probes      []string // "cold", "hot", "graph"
	Gates       Gates
	Measure     Measure
	Engine      *Engine // optional, for wall-clock projections
	// Restrictions prune combinations at plan time (restrict:), in file
	// order.
	Restrictions []Restriction
	// Warnings are things the spec says that a user may mean but probably
	// does not (a variant's own values replacing a global axis), as
	// file:line:col messages; the plan repeats them.
	Warnings []*Error
}

// Landed names the kernel the engine ships today: the baseline of every
// comparison. Defines pins axis values (e.g. SPLITS: 32); unset defines
// match every value.
type Landed struct {
	Variant string
	Defines map[string]string
	Pos     Pos
}

// A Shape is one attention problem shape as the spec declares it: the
// ABI's shape (its Capacity 0 until the plan sets the largest nkv of the
// axes) and where it was written.
type Shape struct {
	abi.Shape
	Lengths []int // optional ragged per-sequence lengths as fractions… (reserved)
	Pos     Pos
}

// An Axis is a named list of values swept as a cartesian product. The axis
// "nkv" is the context length; every other axis is a -D define.
type Axis struct {
	Name   string
	Values []string
	Pos    Pos
}

// A Variant is one kernel with its own defines and launch geometry, or a
// dispatch between kernels by context length.
type Variant struct {
	Name string
	// KernelRef is the kernel the variant runs; empty for a dispatch,
	// whose arms name theirs.
	KernelRef
	Defines     map[string][]string // variant-local axes; override global axes of the same name
	DefineOrder []string            // keys of Defines in file order
	Grid        []string            // expressions over shape symbols and defines; empty: the kernel's default
	Block       []string
	Shared      string // dynamic shared memory bytes expression; empty: the kernel's default
	BitwiseWith string // numerics class: byte-identical to this variant; empty: tolerance
	// LSE is the base of the log-sum-exp the kernel writes (lse: ln or
	// log2), gated against the oracle like out; empty: the kernel writes
	// none, or none that is gated.
	LSE abi.LSEBase
	// NeverCaptured is `graph: never`: the engine never captures this
	// kernel in a CUDA graph, so its grid may read nkv and no replay gate
	// or graph probe runs.
	NeverCaptured bool
	// Invariant is the contexts the variant's output bits must not
	// depend on (invariant: [batch, position, arm]): the invariance gate
	// runs for each (invariance.go); empty: no such gate.
	Invariant []Invariance
	// PDL is `pdl: true`: every launch of a step after the first is made
	// with programmatic stream serialization (programmatic dependent
	// launch), and the kernels get -DPDL=1 so that they call
	// griddepcontrol (launch_dependents in the first, wait in the next).
	PDL bool
	// Cluster is `cluster: [x, y, z]`: the step's first launch (the ABI's
	// partial) runs in thread-block clusters of these dimensions, 1 to 3
	// expressions (missing ones are 1); empty: no cluster. A variant with
	// launches gives cluster per launch instead (Launch.Cluster).
	Cluster []string
	// ClusterNonPortable is `cluster_nonportable: true`: a cluster may
	// hold up to MaxClusterNonPortable blocks instead of the portable
	// MaxClusterPortable, on the GPUs that allow it (sm_90 does).
	ClusterNonPortable bool
	// Budget is max_registers, no_spills and max_shared (budget.go).
	Budget Budget
	Pos    Pos

	// Dispatch, when set, replaces Kernel: the arms in ascending order of
	// their thresholds, the last one (Below 0) serving every longer
	// context. Each point runs the arm that Arm(nkv) picks.
	Dispatch []Arm

	// An engine's kernel as it is (signature.go): include directories
	// (resolved against the spec's directory) whose headers the source may
	// include, extra NVRTC options, the dtypes and layouts of its buffers
	// (nil: the ABI's) and its launches (nil: the ABI's attn_partial and
	// attn_combine). Artifact is set when Path is a prebuilt PTX, CUBIN or
	// fatbin, loaded without NVRTC.
	Include []string
	Flags   []string
	IO      *abi.IO
	// Scratch are the named scratch buffers the launches pass
	// (scratch:NAME), in file order.
	Scratch []abi.Scratch
	// Planned are the host-planned arrays the launches pass
	// (planned:NAME), in file order: generated from the lengths at every
	// length, as an engine's planner fills them (signature_planned.go).
	Planned []abi.Planned
	// Structs are the by-value structs the launches pass, by name.
	Structs  map[string]*abi.Struct
	Launches []Launch
	Artifact string
	// Forward, when not nil (the forward key, even empty), seals the
	// kernel: it is compiled with these defines and none of ktune's own
	// (forward.go).
	Forward []Forward
	// StdHeaders gives the kernel ktune's C and C++ headers for device
	// code where NVRTC lacks them (kernels/nvrtcstd): <float.h>,
	// <stdint.h>, <type_traits> …
	StdHeaders bool
	// StructTypes are the C++ types of the structs that name one
	// (structs.NAME.type), by struct name: the layout ktune check
	// verifies field by field against the engine's own definition.
	StructTypes map[string]StructType
	// Build is the engine's own build of the kernel (build.go); nil:
	// NVRTC compiles it, or it is a prebuilt file.
	Build *Build
	// HostHeaders are includes of host code (a framework's headers) that
	// a device-only compile leaves out: ktune gives them empty.
	HostHeaders []string
}

// An Arm is one branch of a dispatch variant: a kernel with fixed defines
// that serves the context lengths below its threshold (and at or above
// the previous arm's). Each arm is its own compiled kernel with a static
// grid, as an engine that switches between captured CUDA graphs at the
// threshold would run it.
type Arm struct {
	Below int // serves nkv < Below; 0 for the last arm, the catch-all
	KernelRef
	Defines     map[string]string // fixed for this arm; they override the axes
	DefineOrder []string          // keys of Defines in file order
	Pos         Pos
}

// A KernelRef names the kernel a variant or a dispatch arm runs, as the
// spec wrote it and as validation resolved it: the one description of "which
// kernel" that variants and arms share, checked by one function
// (decoder.resolve).
type KernelRef struct {
	Kernel string // built-in name or a .cu path relative to the spec
	// Builtin is the built-in kernel Kernel names, nil for a user kernel.
	Builtin *catalog.Kernel
	// Path is a user kernel's file, resolved against the spec's directory;
	// empty for a built-in.
	Path string
}

// Gates configures the numerics gates.
type Gates struct {
	NKV    []int   // default {1, 29, 52, 512, 1641}; SPLITS chunk boundaries are added
	MaxAbs float64 // default 2e-3
	MaxRel float64 // default 2e-2
	NMSE   float64 // default 1e-6
	Seed   uint64  // default 1
	// KV holds the bounds of the KV types that override the spec-wide
	// ones (gates: {bf16: {max_abs: …}}), by kv_dtype name; a zero field
	// inherits the spec-wide bound.
	KV map[string]Bounds
	// Inputs are the decisions about single input sets: bounds of their
	// own, or a set that does not apply, each with its reason (waivers.go).
	Inputs []InputWaiver
	// Stale is the declaration about the rows past each length (what the
	// stale gate writes there), with its reason; nil for none (waivers.go).
	Stale *StaleDecision
}

// Bounds are the tolerance bounds of the oracle gate.
type Bounds struct {
	MaxAbs, MaxRel, NMSE float64
}

// For returns the bounds of the shapes of a KV type: the spec-wide ones,
// with the type's overrides.
func (g *Gates) For(kvDtype abi.Dtype) Bounds {
	b := Bounds{MaxAbs: g.MaxAbs, MaxRel: g.MaxRel, NMSE: g.NMSE}
	o := g.KV[string(kvDtype)]
	for _, f := range []struct{ dst, src *float64 }{{&b.MaxAbs, &o.MaxAbs}, {&b.MaxRel, &o.MaxRel}, {&b.NMSE, &o.NMSE}} {
		if *f.src != 0 {
			*f.dst = *f.src
		}
	}
	return b
}

// Measure configures the stopping rule.
type Measure struct {
	Warmup     int     // default 3
	MinSamples int     // default 10
	MaxSamples int     // default 200
	MaxNoise   float64 // default 0.03
	BudgetSec  float64 // per probe per point, default 2
	HotBatch   int     // default 20
	TimeoutSec float64 // per point, default 120
}

// Engine gives whole-step figures for wall-clock projections.
type Engine struct {
	Layers int     // attention launches per decode step
	StepMS float64 // measured decode step time with the landed kernel
}

// Pos is a position in the spec file, for error messages.
type Pos struct {
	Line, Col int
}
