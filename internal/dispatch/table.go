package dispatch

import (
	"github.com/ktune/ktune/internal/decision"
	"github.com/ktune/ktune/internal/results"
)

// Options control how a table is built.
type Options struct {
	// Probe is the measurement compared: results.ProbeCold (the default)
	// or results.ProbeGraph.
	Probe results.Probe
	// Alpha is the Mann-Whitney significance level; 0 means decision.Alpha.
	Alpha float64
	// Spec, when set, keeps only the records of the spec of that name: a
	// sweep directory may hold the results of more than one spec.
	Spec string
	// Failed holds further records whose failures count (the lines of the
	// input a later line superseded, Input.Superseded): a configuration
	// that failed a gate or faulted in any of them is never chosen.
	Failed []results.Record
	// MaxArms, when > 0, limits each shape's table to that many ranges
	// (limitArms): an engine ships a dispatch of a few arms, and the cost
	// of the simplicity is printed per nkv.
	MaxArms int
	// ByDims makes shapes that differ only in their name one shape
	// (unifyLabels), named as most of their records name it.
	ByDims bool
	// Weights, with MaxArms, weighs each measured nkv's cost by how often
	// an engine runs it (workload.Workload.Spread): the arms then fit the
	// traffic, not the measured axis. nil: every measured nkv alike.
	Weights func(batch int, nkvs []int) ([]float64, error)
}

// A Table is a dispatch table: per shape, the configuration to launch for
// each range of context lengths.
type Table struct {
	Probe    results.Probe // the probe whose medians decided
	Alpha    float64       // the significance level used
	Device   string        // the device every record was measured on
	Sources  []Source      // the results files, in the order given
	Shapes   []ShapeTable  // sorted by name, then dimensions, batch, attention options and page size
	Warnings []string      // measured nkv left without a candidate, and similar
	// MaxArms is Options.MaxArms (0: every winner has its range).
	MaxArms int
	// Invariant, when set, says what made the table's arms invariant with
	// one another (BuildInvariant); the exports' headers say it.
	Invariant string
}

// A ShapeTable is the dispatch of one shape.
type ShapeTable struct {
	// Shape is the problem shape. Capacity is zero: it only sizes the
	// benchmark's buffers and takes no part in the choice.
	Shape results.Shape
	// PageSize is the rows per page of the paged KV cache the table's
	// kernels read (their PAGE_SIZE define); 0 for a contiguous cache.
	PageSize int
	Ranges   []Range // ascending, contiguous, from nkv 1 to no upper bound
	// Missing lists, with MaxArms, each arm of the table not measured at
	// a measured nkv of the shape: it might have been faster there.
	Missing []Missing
}

// A Missing point is a configuration of a table not measured at an nkv.
type Missing struct {
	NKV     int
	Config  string // "d2 NR=4 SPLITS=32"
	Variant string
	Defines []results.Define
	Spec    string // the spec whose records measured the configuration
}

// A Range is one nkv interval [MinNKV, MaxNKV) and what to launch there.
type Range struct {
	MinNKV int // inclusive, ≥ 1
	MaxNKV int // exclusive; 0 = no upper bound
	// Variant and Kernel name the configuration as in the results:
	// Kernel is a built-in name or a user .cu path as written in the spec.
	Variant string
	Kernel  string
	Defines []results.Define // sorted by name; HEAD_DIM and KV_F16 follow from the shape
	Splits  int              // the SPLITS define
	// Grid and Block are the partial kernel's launch geometry;
	// CombineGrid and CombineBlock the combine kernel's.
	Grid, Block               [3]int
	CombineGrid, CombineBlock [3]int
	// MedianNS and Margin are those of the largest measured nkv in the
	// range, where the choice costs or saves the most time.
	MedianNS float64
	Margin   string
	// Picks lists every measured nkv the range rests on, ascending.
	Picks []Pick
}

// A Pick is the decision at one measured nkv.
type Pick struct {
	NKV      int
	MedianNS float64       // the winner's median of the probe
	Rule     decision.Rule // why it won
	// Margin says by how much, against whom and with which p-value, e.g.
	// "-25.0% vs r4 SPLITS=32 (p=0.000 n=15)" or
	// "~ d2 NR=4 SPLITS=32 (p=0.967 n=15); landed".
	Margin string
}

// key is the table's key: its shape and page size.
func (st ShapeTable) key() tableKey { return tableKey{st.Shape, st.PageSize} }
