package gate

import (
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/plan"
)

// A Session is the state of one point that the probe lends to its gates
// (and to its timing probes, which use the same launch path): a gate reads
// and launches through it and owns nothing of it. The probe implements
// it; every launch poisons the outputs first, reads them back after and
// runs the checks that follow every launch (Findings).
type Session interface {
	Info
	Inputs
	Launcher
	// Findings are what the checks after every launch found so far.
	Findings() *Findings
}

// Info is what a gate reads of the point and its run.
type Info interface {
	// Point is the point being gated.
	Point() *plan.Point
	// Logf writes a line of the point's log.
	Logf(format string, args ...any)
	// Pairs is how many launch pairs the point has made so far.
	Pairs() int
	// Bounds are the point's tolerance with its out dtype's rounding.
	Bounds() oracle.Bounds
	// GatedSlots is how many partial slots the written gate reads (0 when
	// the signature's partial is opaque).
	GatedSlots() int
	// PageSize is the rows of a page of the workspace's paged pool, 0
	// for a contiguous cache.
	PageSize() int
	// Buffers name the workspace's read-only inputs and all its buffers.
	Buffers() (inputs, all []string)
}

// Inputs are the gates' inputs: drawn once per shape and seed, kept in
// the probe's input cache, uploaded into the workspace, and the oracle's
// outputs on them.
type Inputs interface {
	// UploadSet draws (or finds drawn) input set set with rows rows per
	// sequence for a launch at lengths and uploads it.
	UploadSet(set oracle.InputSet, rows int, lengths []int) (*oracle.Inputs, error)
	// UploadTiled tiles the uniform set in, uploaded already, up to the
	// capacity and returns the inputs it makes, for the oracle.
	UploadTiled(in *oracle.Inputs) (*oracle.Inputs, error)
	// References are the oracle's outputs on in at each of launches (per
	// sequence lengths), from one pass.
	References(in *oracle.Inputs, launches [][]int) ([]oracle.Output, error)
	// ForgetUploads forgets what the workspace holds, after a gate that
	// wrote inputs of its own: the next upload writes them again.
	ForgetUploads()
}

// A Launcher loads and launches the point's kernels on the one launch
// path.
type Launcher interface {
	// Kernel is the point's kernel.
	Kernel() Kernel
	// Twin is the point's bitwise twin, nil when it has none.
	Twin() Kernel
	// Fresh loads the point's CUBIN again as a new module, ready for a
	// launch at nkv; release unloads it.
	Fresh(nkv int) (k Kernel, release func(), err error)
	// Batch is the point's kernel at another point's batch (the same
	// code, another grid), in the point's workspace.
	Batch(p *plan.Point) (Kernel, error)
	// Arm loads another point's kernel, with buffers of its own when its
	// layout is not the point's; release frees them.
	Arm(p *plan.Point) (k Kernel, release func(), err error)
	// Launch launches k once at lengths (nkv the longest, which a grid
	// that reads nkv is sized by) over poisoned outputs and reads them
	// back.
	Launch(k Kernel, nkv int, lengths []int) (Outputs, error)
	// LaunchInputs uploads in into k's buffers and launches k at lengths,
	// one sequence of in per sequence of the batch.
	LaunchInputs(k Kernel, in *oracle.Inputs, lengths []int) (Outputs, error)
	// StaleLaunch launches the point's kernel at lengths with the rows
	// past each length holding NaN, Inf and the KV type's largest values
	// (its largest finite values alone where the point declares its
	// cache finite there: plan.Point.Stale), and puts the rows back after.
	StaleLaunch(nkv int, lengths []int) (Outputs, error)
	// Capture captures one launch of the point's kernel at lengths into a
	// graph.
	Capture(nkv int, lengths []int) (Graph, error)
	// BoundsLaunch launches the point's kernel once with every sequence
	// at the capacity on copies of its read-only buffers that end against
	// unmapped memory; buffers names them. ran says whether the launch
	// was made: when it was not, err is what stopped it before, or nil
	// when there was no room for the copies (the gate is left out, not
	// passed); when it was, err is the launch's, a fault included.
	BoundsLaunch() (buffers []string, ran bool, err error)
	// AfterLaunch runs the checks that follow every launch (Findings) on
	// the point's buffers.
	AfterLaunch(nkv int) error
	// Recycle gives back read-back buffers no verdict refers to any more.
	Recycle(bufs ...[]byte)
}

// A Kernel is a loaded kernel the session can launch, with the point it
// was planned for.
type Kernel interface {
	Point() *plan.Point
}

// A Graph is a captured launch replayed while the lengths change on the
// device.
type Graph interface {
	// Replay replays the graph at lengths (nkv the longest) over
	// poisoned outputs and reads them back.
	Replay(nkv int, lengths []int) (Outputs, error)
	// Close destroys the graph.
	Close()
}

// Outputs are what one launch left in the buffers the gates read:
// partial (the ABI's slots, empty when it is opaque), out as f32, and the
// lse rows of a variant that declares lse (nil otherwise).
type Outputs struct {
	Partial, Out, LSE []byte
}
