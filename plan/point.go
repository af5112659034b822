// Package plan turns a decoded spec into points: shape × variant × define
// combination × nkv, each with everything that determines its result (the
// source, compile flags, launch geometry, gate lengths, tolerances, the
// measure settings) and one hash over all of it, computed in one place
// (keys.go). It also defines the Backend interface that runs a point, so
// that the CUDA backend (package probe), the replay backend (package
// replay), the driver (package sweep) and the search strategies (package
// search) share one vocabulary without depending on each other.
package plan

import (
	"context"
	"fmt"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/expr"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/internal/spec"
)

// A Source is the CUDA C++ text of one kernel variant, with the headers it
// includes, ready for NVRTC.
type Source struct {
	Name    string            // file name given to NVRTC (for its log and -lineinfo)
	Text    string            // the .cu text
	Headers map[string]string // include name → text
	Partial string            // entry point of the partial kernel
	Combine string            // entry point of the combine kernel
	// Fused is set for a built-in of the fused ABI (catalog.Kernel.Fused):
	// attn_partial also takes out and a zeroed scratch, writes out itself,
	// and no combine is launched. User kernels are never fused.
	Fused bool
	// Entries are the entry points of the point's launches, each once, in
	// launch order: the functions to look up in the loaded module.
	Entries []string `json:",omitempty"`
	// Named is set when the launches' entries are C++ name expressions
	// (a declared signature): NVRTC resolves them to the symbols of the
	// CUBIN (NameExprs, each entry once).
	Named     bool     `json:",omitempty"`
	NameExprs []string `json:",omitempty"`
	// Artifact is a prebuilt PTX, CUBIN or fatbin loaded as it is
	// (ArtifactKind says which), without NVRTC; Text is then empty.
	// ArtifactSHA256 is its digest, hashed and recorded.
	Artifact       []byte `json:",omitempty"`
	ArtifactKind   string `json:",omitempty"`
	ArtifactSHA256 string `json:",omitempty"`
	// Missing is the path of a prebuilt kernel that did not exist when
	// the plan was built (a build output not made yet); Artifact is then
	// empty and the point fails until it is built.
	Missing string `json:",omitempty"`
	// Modules are the other prebuilt files the launches come from
	// (launchmeta.go), in launch order; Entries then lists only the
	// entries of the variant's own kernel.
	Modules []Module `json:",omitempty"`
	// Sealed is set for a variant that declares forward: it is compiled
	// with Forwarded (the forwarded defines evaluated at the point) and
	// none of the point's own defines (CompileDefines).
	Sealed    bool        `json:",omitempty"`
	Forwarded abi.Defines `json:",omitempty"`
	// Symbols maps each entry of a prebuilt artifact written as a C++ name
	// to its symbol in the file (cppnames.go); nil when every entry is
	// written as its symbol.
	Symbols map[string]string `json:",omitempty"`
	// BuildKey is the digest of what the engine's build of the kernel
	// read (build.go): its command, the compiler's version and every file
	// its dependency output named; empty for a kernel not built so.
	// BuildInputs counts those files. BuildFailed is set, with the
	// command's output in BuildLog, when the build failed.
	// EngineBuild is set for a kernel made by the engine's build.
	EngineBuild bool   `json:",omitempty"`
	BuildKey    string `json:",omitempty"`
	BuildInputs int    `json:",omitempty"`
	BuildFailed bool   `json:",omitempty"`
	BuildLog    string `json:",omitempty"`
	// LayoutProbe is the CUBIN of the struct layout probe (LayoutProbe)
	// built with the variant's own command, for ktune check; nil with
	// LayoutLog the command's output when that build failed, or when the
	// variant checks no struct.
	LayoutProbe []byte `json:",omitempty"`
	LayoutLog   string `json:",omitempty"`
}

// Tolerance bounds for the oracle gate. A NaN anywhere never passes.
type Tolerance struct {
	MaxAbs float64 // max |out − ref|
	MaxRel float64 // max |out − ref| / max(|ref|, 1e-6) … only over |ref| > RelFloor
	NMSE   float64 // Σ(out − ref)² / Σ ref²
}

// Measure holds the stopping rule of the probes.
type Measure struct {
	Warmup     int     // launches before the first sample
	MinSamples int     // never stop before this many samples
	MaxSamples int     // never take more than this many samples
	MaxNoise   float64 // stop once (Q3−Q1)/median ≤ MaxNoise
	BudgetSec  float64 // per probe per point; when spent, stop and say so
	HotBatch   int     // launches per hot/graph sample
	TimeoutSec float64 // whole point, gates included (fault isolation)
}

// A Point is one fully resolved configuration of the plan: what to compile,
// how to launch it, how to gate it and how to measure it.
type Point struct {
	Index  int
	Hash   string // stable hash of everything that determines the result
	Config results.Config
	Source Source
	Flags  []string // NVRTC flags other than -D and -arch; the plan is their one home

	// Launches are the kernel launches of one decode step, in stream
	// order, with their arguments; IO the dtypes and layouts of the
	// buffers they use (abi.ABIIO for the ABI's kernels). WorkspaceBytes
	// is io.workspace evaluated at the point.
	Launches       []Launch
	IO             abi.IO
	WorkspaceBytes int64 `json:",omitempty"`
	// Scratch are the variant's named scratch buffers, their sizes
	// evaluated at the point; they live after the workspace's bytes.
	Scratch []abi.ScratchBuf `json:",omitempty"`
	// Planned are the variant's host-planned arrays, generated from the
	// lengths by the probe at every length (abi.Planned.Generate), and
	// PlannedBufs their entries evaluated at the point, in the same order.
	Planned     []abi.Planned    `json:",omitempty"`
	PlannedBufs []abi.PlannedBuf `json:",omitempty"`
	// PageSize is a paged io's page_size evaluated at the point; 0 for a
	// contiguous K/V.
	PageSize int `json:",omitempty"`
	// SMs is the device's SM count that the point's planned arrays,
	// scratch sizes and argument expressions read as sms, at the plan's
	// assumption (devicesyms.go); 0 when none of them reads it. A grid's
	// is its launch's (Launch.SMs). The probe refuses the point on a
	// device of another count.
	SMs int `json:",omitempty"`

	// GateKey groups points that share one compiled kernel and shape, so
	// that the gates (which do not depend on the timed nkv) run once per
	// group. Backends may cache gate verdicts by it.
	GateKey string
	GateNKV []int // context lengths at which the gates run
	// CaptureNKV and ReplayNKV are the replay gate's lengths: one pair is
	// captured in a CUDA graph at CaptureNKV, below every split boundary,
	// and replayed at each ReplayNKV in order, across the boundaries up to
	// the capacity and back down. Replay safety is a property of the
	// compiled kernel, so the replay gate runs whatever the probes.
	CaptureNKV int
	ReplayNKV  []int
	// NeverCaptured is set when the spec says the engine never captures
	// this kernel in a CUDA graph (variant key graph: never): the replay
	// gate and the graph probe are then skipped, and a grid that reads nkv
	// is allowed.
	NeverCaptured bool `json:",omitempty"`
	// Budget is the variant's resource limits: a point whose compiled
	// kernels break it is recorded over_budget, not run.
	Budget Budget `json:",omitzero"`
	Seed   uint64
	Tol    Tolerance
	// Layouts are the variant's structs that name their C++ type, whose
	// declared layouts ktune check verifies against the kernel's own
	// (layouts.go).
	Layouts []LayoutCheck `json:",omitempty"`
	// Waivers are the spec's decisions about single input sets (bounds
	// of their own, or a set that does not apply), each with its reason
	// (waivers.go).
	Waivers []Waiver `json:",omitempty"`
	// Stale is the spec's declaration about the rows past each length
	// (gates.stale: finite values only, with its reason), the zero value
	// for none (waivers.go).
	Stale   StaleWaiver `json:",omitzero"`
	Twin    *Point      // bitwise_with twin at the same shape/SPLITS, nil for tolerance class
	Probes  []results.Probe
	Measure Measure
	Landed  bool // this point is the landed kernel's configuration
	// Geometry is set only when the partial grid reads nkv. The gates then
	// launch fresh at each length with the grid that length gives — what an
	// engine that recomputes its launch every step would do — so that a
	// captured graph, which keeps the grid of its capture, disagrees with
	// them and the replay gate fails, as it must for such a kernel.
	Geometry *Geometry `json:",omitempty"`
	// Invariance is the opt-in invariance gate's contexts (invariance.go),
	// nil when the variant asks for none.
	Invariance *Invariance `json:",omitempty"`

	// arch is the architecture the point was hashed for, so that a copy
	// with other measure settings (WithSamples) is hashed the same way.
	arch string
}

// Geometry is a partial grid as expressions, with the symbols they read
// other than nkv.
type Geometry struct {
	Grid    [3]string
	Symbols map[string]int64
	// Steps are every launch's grid and shared memory as expressions, set
	// when more than the first launch's grid reads nkv: a variant the
	// engine launches fresh every step (graph: never) may size every
	// launch from the step's longest sequence, and its gates must launch
	// it so at each of their lengths. Unset, only Grid follows nkv.
	Steps []StepGeometry `json:",omitempty"`
	// Args is set when an argument reads nkv (graph: never): the probe
	// then evaluates the launches' arguments at each launch's length.
	Args bool `json:",omitempty"`
}

// A StepGeometry is one launch's grid and dynamic shared memory as
// expressions.
type StepGeometry struct {
	Grid   [3]string
	Shared string
}

// StepsAt is launches (the point's, planned at its own nkv) with each
// grid and shared memory size the geometry gives at context length nkv;
// launches themselves when only the first grid follows nkv, with that
// grid at nkv. An expression that cannot be evaluated there is an error.
func (g *Geometry) StepsAt(nkv int, launches []Launch) ([]Launch, error) {
	out := slices.Clone(launches)
	if len(out) == 0 {
		return out, nil
	}
	if len(g.Steps) == 0 {
		grid, err := g.gridAt(g.Grid, nkv, out[0].BlocksPerSM)
		if err != nil {
			return launches, err
		}
		out[0].Grid = grid
		return out, nil
	}
	for i := range out {
		if i >= len(g.Steps) {
			break
		}
		grid, err := g.gridAt(g.Steps[i].Grid, nkv, out[i].BlocksPerSM)
		if err != nil {
			return launches, fmt.Errorf("launch %d: %w", i, err)
		}
		out[i].Grid = grid
		if src := g.Steps[i].Shared; src != "" {
			n, err := g.eval(src, nkv, 0)
			if err != nil {
				return launches, fmt.Errorf("launch %d: shared %q at nkv %d: %w", i, src, nkv, err)
			}
			if n < 0 || n > 1<<31-1 {
				return launches, fmt.Errorf("launch %d: shared %q at nkv %d is %d", i, src, nkv, n)
			}
			out[i].Shared = int(n)
		}
	}
	return out, nil
}

// eval evaluates one expression at context length nkv, and blocks_per_sm
// at bps where it is not 0: each launch's own (Launch.BlocksPerSM), as
// the steps' launches are different kernels of different occupancies,
// which Symbols, one for all, cannot hold.
func (g *Geometry) eval(src string, nkv, bps int) (int64, error) {
	env := expr.Env{}
	for k, v := range g.Symbols {
		env[k] = v
	}
	env["nkv"] = int64(nkv)
	if bps != 0 {
		env[spec.SymBlocksPerSM] = int64(bps)
	}
	x, err := expr.Parse(src)
	if err != nil {
		return 0, err
	}
	return x.Eval(env)
}

// At evaluates the grid at context length nkv.
func (g *Geometry) At(nkv int) ([3]int, error) { return g.gridAt(g.Grid, nkv, 0) }

// gridAt evaluates a launch's grid expressions at context length nkv and
// its blocks per SM bps (0: Symbols'); an empty dimension is 1.
func (g *Geometry) gridAt(grid [3]string, nkv, bps int) ([3]int, error) {
	out := [3]int{1, 1, 1}
	for i, src := range grid {
		if src == "" {
			continue
		}
		n, err := g.eval(src, nkv, bps)
		if err != nil {
			return out, fmt.Errorf("grid[%d] %q at nkv %d: %w", i, src, nkv, err)
		}
		if n < 1 || n > 1<<31-1 {
			return out, fmt.Errorf("grid[%d] %q at nkv %d is %d", i, src, nkv, n)
		}
		out[i] = int(n)
	}
	return out, nil
}

// A Backend compiles, gates and measures points. The CUDA backend lives in
// package probe; package replay serves recorded results so that the sweep,
// search and gate logic run without a GPU.
type Backend interface {
	// Env describes the device; it measures the read bandwidth once.
	Env(ctx context.Context) (results.Env, error)
	// Run gates and measures one point. Failures of the point (compile,
	// gate, fault) are reported in the record's Status, not as an error;
	// an error means the backend itself can no longer run points.
	Run(ctx context.Context, p *Point) (results.Record, error)
	Close() error
}

// A Budget is a variant's resource limits, as the spec declares them
// (spec.Budget): what the probe checks the compiled kernels against.
type Budget = spec.Budget
