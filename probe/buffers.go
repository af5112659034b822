package probe

import (
	"encoding/binary"
	"fmt"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe/gate"
)

// poison is the written gate's pattern (gate.Poison), which the outputs
// hold before every launch.
const poison = gate.Poison

// headroom is device memory left unclaimed when sizing a point: module
// loads, graph instantiation and the driver's own allocations need room
// that cuMemGetInfo does not set aside.
const headroom = 256 << 20

// A layout is the size in bytes of every buffer of one point: the
// allocations of the ABI's table (abi.Allocs) at the point's dims.
type layout struct {
	Q, K, V, Positions, Partial, Out int64
	// KVScale is the scaled KV types' kv_scale buffer, f32
	// [2][kv_heads] (K's scales, then V's); 0 for the other types.
	KVScale int64
	// Scratch holds the arrival counters (abi.AllocScratch).
	Scratch int64
	// Pages, Mask and SplitCounts hold the length-derived inputs besides
	// the positions: a paged layout's index buffers, the additive mask,
	// the per-sequence split counts (abi.AllocPages ...); 0 when absent.
	Pages, Mask, SplitCounts int64
	// Planned holds the host-planned arrays (abi.AllocPlanned); planned
	// is their names and entries (abi.PlannedText, so that layouts still
	// compare with ==).
	Planned int64
	planned string
	// HeadParams holds the ALiBi slopes and the sink logits
	// (abi.AllocHeadParams); 0 for a shape with neither option.
	HeadParams   int64
	splits, pstr int
	// elt is the size of one K/V element and kv the KV type. Two layouts
	// of equal byte sizes but different types (f32 at capacity C, f16 at
	// 2C; f16 and bf16) must not share a workspace: its random fill holds
	// elements of one type.
	elt int
	kv  *kvtype.Type

	// The declared io of the point's signature (abi.IO): q's and out's
	// dtypes, how K and V are laid out, whether partial holds the ABI's
	// slots (which the gates then inspect). Lse and Workspace are the
	// sizes of those buffers, zero when the signature does not use them.
	qDtype, outDtype abi.Dtype
	kvLayout         abi.KVLayout
	partialABI       bool
	// paging and pageSize are a paged layout's pages (abi.Paging, and
	// page_size at the point); mask and splitCounts the io's mask dtype
	// and split-count expression.
	paging      abi.Paging
	pageSize    int
	mask        abi.Dtype
	splitCounts string
	// poolBatch and poolCapacity are the shape a paged layout's pool was
	// assigned at (pages.go): a workspace serves only points of its pool.
	poolBatch, poolCapacity int
	// pageB is the bytes of one page of K or V.
	pageB          int64
	Lse, Workspace int64
	// scratch is the point's named scratch buffers (abi.ScratchText:
	// text, so that layouts still compare with ==), in the workspace
	// allocation after io.workspace's bytes.
	scratch string
	// workspaceBytes is io.workspace at the point, where the scratch
	// buffers start.
	workspaceBytes int64
	// sms is the SM count the point's planned arrays and arguments read
	// (abi.Dims.SMs); 0: none reads it.
	sms int
}

// size is the field of l that holds an allocation's bytes: the probe's one
// map from the ABI's allocations to its own fields (workspace.table names
// the device buffers by the allocations' names).
func (l *layout) size(a abi.AllocID) *int64 {
	return [abi.NumAllocs]*int64{abi.AllocQ: &l.Q, abi.AllocK: &l.K, abi.AllocV: &l.V, abi.AllocPositions: &l.Positions,
		abi.AllocPartial: &l.Partial, abi.AllocOut: &l.Out, abi.AllocScratch: &l.Scratch, abi.AllocLse: &l.Lse,
		abi.AllocWorkspace: &l.Workspace, abi.AllocKVScale: &l.KVScale, abi.AllocHeadParams: &l.HeadParams,
		abi.AllocPages: &l.Pages, abi.AllocMask: &l.Mask, abi.AllocSplitCounts: &l.SplitCounts, abi.AllocPlanned: &l.Planned}[a]
}

// splitsOf returns the SPLITS of a configuration. The plan sets
// Config.Splits from the define, once; a configuration without it was not
// built by a plan.
func splitsOf(c *results.Config) (int, error) {
	if c.Splits <= 0 {
		return 0, fmt.Errorf("configuration has no %s (Config.Splits is %d)", abi.DefineSplits, c.Splits)
	}
	return c.Splits, nil
}

// layoutOf sizes the ABI buffers of a configuration (kernels/abi.cuh).
func layoutOf(c *results.Config) (layout, error) {
	return sized(abi.Dims{Shape: c.Shape, Splits: c.Splits, IO: abi.ABIIO}, nil)
}

// sized sizes every allocation of the table at d; uses says which buffers
// the point's launches name.
func sized(d abi.Dims, uses func(string) bool) (layout, error) {
	s := d.Shape
	if d.Splits <= 0 {
		return layout{}, fmt.Errorf("configuration has no %s (Config.Splits is %d)", abi.DefineSplits, d.Splits)
	}
	if s.Batch <= 0 || s.Heads <= 0 || s.KVHeads <= 0 || s.HeadDim <= 0 || s.Capacity <= 0 {
		return layout{}, fmt.Errorf("shape %+v has a non-positive dimension", s)
	}
	t := s.KVType()
	l := layout{
		splits: d.Splits, pstr: abi.PartialStride(s.HeadDim), elt: t.Bytes, kv: t,
		qDtype: d.IO.Q, outDtype: d.IO.Out, kvLayout: d.IO.KVLayout, partialABI: d.IO.Partial == abi.PartialABI,
		paging: d.IO.Paging, pageSize: d.PageSize, mask: d.IO.Mask, splitCounts: d.IO.SplitCounts,
		scratch: abi.ScratchText(d.Scratch), workspaceBytes: d.WorkspaceBytes, planned: abi.PlannedText(d.Planned),
		sms: d.SMs,
	}
	if d.IO.KVLayout == abi.Paged {
		if d.PageSize < 1 {
			return layout{}, fmt.Errorf("a paged io without a page size (page_size %d)", d.PageSize)
		}
		if w := s.Attention.VDim(s.HeadDim); w != s.HeadDim {
			return layout{}, fmt.Errorf("shape %s: a paged cache of K and V of different widths (mla dv %d) is not supported", s.Name, w)
		}
		l.poolBatch, l.poolCapacity = s.Batch, s.Capacity
		l.pageB = int64(d.PageSize) * int64(s.KVHeads) * int64(s.HeadDim) * int64(t.Bytes)
		if _, err := l.poolOf(); err != nil {
			return layout{}, err
		}
		if pb := l.pageB; pb%4 != 0 {
			return layout{}, fmt.Errorf("a page of %d bytes: the probe fills pages in 4-byte words", pb)
		}
		if d.IO.Paging.Order == abi.PageSplitX && s.HeadDim%(16/min(16, t.Bytes)) != 0 {
			return layout{}, fmt.Errorf("split_x pages: head_dim %d is not a multiple of x = %d", s.HeadDim, 16/t.Bytes)
		}
	}
	sizes := abi.Sizes(d, uses)
	for a := range abi.NumAllocs {
		*l.size(a) = sizes[a]
	}
	return l, nil
}

// pointLayout sizes the buffers of a point as its signature declares them
// (plan.Point.IO): q and out in their dtypes, the lse and workspace
// buffers when a launch passes them, counters for every query head.
func pointLayout(p *plan.Point) (layout, error) {
	if _, err := splitsOf(&p.Config); err != nil {
		return layout{}, err
	}
	uses := func(name string) bool {
		for _, ln := range p.Launches {
			for _, arg := range ln.Args {
				for _, a := range arg.Leaves() {
					if a.IsBuffer() && !a.IsScratch() && a.Name == name { // scratch:NAME is the engine's own, whatever its name
						return true
					}
				}
			}
		}
		return false
	}
	return sized(p.Dims(), uses)
}

// gatedSlots is the number of partial slots the gates read: every slot
// when partial holds the ABI's layout, none when it is opaque scratch.
func (l layout) gatedSlots(s abi.Shape) int {
	if !l.partialABI {
		return 0
	}
	return s.Batch * l.splits * s.Heads
}

// Total is the sum of the buffers of the table, each with its two guard
// regions.
func (l layout) Total() int64 {
	var n int64
	for _, e := range (&workspace{l: l}).table() {
		if e.n > 0 {
			n += e.n + 2*guardBytes
		}
	}
	return n
}

// flushBytes is the L2 flush buffer size: twice the L2, because writing
// exactly L2-size bytes leaves lines of the previous contents behind under
// a non-LRU replacement policy and a partitioned L2.
func flushBytes(l2 int64) int64 { return abi.Align16(2 * l2) }

// fitError returns nil when a point needing need bytes (plus extra, the
// flush buffer when it is not allocated yet) fits into free device memory
// with headroom to spare, else the message of its oom record.
func fitError(l layout, extra, free int64) error {
	need := l.Total() + extra
	if need+headroom <= free {
		return nil
	}
	return fmt.Errorf("the point needs %s of device memory (K %s, V %s, partial %s, flush %s, other %s) plus %s headroom; %s is free",
		gib(need), gib(l.K), gib(l.V), gib(l.Partial), gib(extra), gib(l.Q+l.Positions+l.Out+l.Scratch+l.KVScale), gib(headroom), gib(free))
}

func gib(n int64) string { return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30)) }

// A workspace is one point's device buffers. It is kept across points of
// the same layout, which is most of a sweep: only nkv changes between them.
type workspace struct {
	l                                layout
	q, k, v, positions, partial, out cuda.DevPtr
	scratch                          cuda.DevPtr // zero between launches (kernels/ABI.md)
	lse, workspace                   cuda.DevPtr // 0 unless the signature uses them
	kvScale                          cuda.DevPtr // 0 unless the KV type is scaled
	headParams                       cuda.DevPtr // 0 unless the shape has alibi or sinks
	// pages, mask and splitCounts are the length-derived inputs past the
	// positions (0 unless the layout is paged, a launch passes mask, the
	// io plans split counts).
	pages, mask, splitCounts cuda.DevPtr
	planned                  cuda.DevPtr // 0 unless the signature passes planned arrays
	// pool is a paged layout's page assignment (pages.go); made on first
	// use, from the layout.
	pool *abi.Pool
	// qAlt, partialAlt, outAlt and lseAlt are a second set of q and
	// outputs at their own addresses, q with its own fill: the timed
	// launches alternate between the two sets (timed.go). lseAlt is 0
	// unless the signature uses lse.
	qAlt, partialAlt, outAlt, lseAlt cuda.DevPtr
	// uniform says which uniform gate inputs q and the first rows of K
	// and V hold, when the last upload was them (timed.go).
	uniform uploaded
	// tiled says which uniform inputs the rows past them repeat up to the
	// capacity (tile.go).
	tiled uploaded
	// inputs are the host's record of what the read-only buffers hold
	// (inputs.go), made when the workspace is filled.
	inputs []*inputCopy
	// images are a paged cache's page images shared across uploads
	// (pageimages.go).
	images *pageImages
}

// An uploaded names the uniform gate inputs of one shape and seed, rows
// rows per sequence.
type uploaded struct {
	key  inputsKey
	rows int
}

// A bufferEntry is one row of a workspace's buffer table: the name it is
// known by (an allocation's, abi.Allocs), where it lives, its size in
// bytes (0: not allocated for this layout) and what a kernel may do to it
// (abi.Role: the gates check each role's rule after every launch,
// inputs.go and guards.go).
type bufferEntry struct {
	name string
	p    *cuda.DevPtr
	n    int64
	role abi.Role
}

// table lists the workspace's buffers: the ABI's allocations in their
// order, then the timed launches' second set (timed.go) with the roles of
// the buffers they stand in for.
func (w *workspace) table() []bufferEntry {
	ptr := [abi.NumAllocs]*cuda.DevPtr{abi.AllocQ: &w.q, abi.AllocK: &w.k, abi.AllocV: &w.v, abi.AllocPositions: &w.positions,
		abi.AllocPartial: &w.partial, abi.AllocOut: &w.out, abi.AllocScratch: &w.scratch, abi.AllocLse: &w.lse,
		abi.AllocWorkspace: &w.workspace, abi.AllocKVScale: &w.kvScale, abi.AllocHeadParams: &w.headParams,
		abi.AllocPages: &w.pages, abi.AllocMask: &w.mask, abi.AllocSplitCounts: &w.splitCounts, abi.AllocPlanned: &w.planned}
	out := make([]bufferEntry, 0, abi.NumAllocs+4)
	for _, a := range abi.Allocs {
		out = append(out, bufferEntry{a.Name, ptr[a.ID], *w.l.size(a.ID), a.Role})
	}
	for _, alt := range []struct {
		name string
		p    *cuda.DevPtr
		of   abi.AllocID
	}{{"q_alt", &w.qAlt, abi.AllocQ}, {"partial_alt", &w.partialAlt, abi.AllocPartial}, {"out_alt", &w.outAlt, abi.AllocOut}, {"lse_alt", &w.lseAlt, abi.AllocLse}} {
		out = append(out, bufferEntry{alt.name, alt.p, *w.l.size(alt.of), abi.Allocs[alt.of].Role})
	}
	return out
}

// guardBytes is the guard region allocated before and after every buffer
// and filled with canary: wider than a row of out or of partial at any
// shape ktune runs (a write a sequence or a head past the end lands in it)
// and a multiple of 16, so that every buffer keeps cuMemAlloc's alignment.
const guardBytes = 64 << 10

// canary is the word the guard regions hold: a signalling NaN in f32 and
// a pair of NaNs in f16, which no kernel stores by computing.
const canary uint32 = 0x7FA5C3E1

func (w *workspace) free(c *cuda.Context) error {
	var first error
	for _, e := range w.table() {
		if *e.p == 0 {
			continue
		}
		if err := c.Free(*e.p - devOff(guardBytes)); err != nil && first == nil {
			first = err
		}
	}
	*w = workspace{}
	return first
}

// allocWorkspace allocates every buffer of l between two guard regions of
// canary and fills q, K and V with the seeded random fill (fill.go) over
// their whole capacity, so that every row a timed probe may read holds
// real-looking data, never zeros: with fill on the device when it is
// given (ktune_fill), else from the host. The scratch is zeroed once, on
// stream s: a fused kernel's last block re-arms each counter it used, so
// it stays zero from launch to launch.
func allocWorkspace(c *cuda.Context, l layout, s *cuda.Stream, fill deviceFill) (*workspace, error) {
	w := &workspace{l: l}
	for _, e := range w.table() {
		if e.n == 0 {
			continue
		}
		base, err := c.Alloc(e.n + 2*guardBytes)
		if err != nil {
			w.free(c)
			return nil, err
		}
		*e.p = base + devOff(guardBytes)
		for _, g := range []cuda.DevPtr{base, *e.p + devOff(e.n)} {
			if err := c.MemsetD32Async(g, canary, guardBytes/4, s); err != nil {
				w.free(c)
				return nil, fmt.Errorf("writing the canaries around %s: %w", e.name, err)
			}
		}
	}
	read := func(b []byte, src cuda.DevPtr) error {
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("waiting for the stream: %w", err)
		}
		return c.CopyDtoH(b, src)
	}
	for _, f := range w.fills() {
		var err error
		if fill != nil {
			// compute-sanitizer runs with ktune_* excluded, so initcheck
			// does not see ktune_fill's stores and would report every
			// read of q, K and V as uninitialised; a memset from the host
			// counts as initialisation (as in allocZeroed) and costs
			// next to nothing at device bandwidth.
			if err = c.MemsetD32Async(f.p, 0, f.n/4, s); err != nil {
				err = fmt.Errorf("clearing %s before its fill: %w", f.name, err)
			} else {
				err = fillOnDevice(f, fill, read)
			}
		} else {
			write := func(off int64, b []byte) error { return c.CopyHtoD(f.p+devOff(off), b) }
			if err = fillBuffer(write, f.n, f.t, f.seed, fillChunkBytes); err != nil {
				err = fmt.Errorf("filling %s with random data from the host: %w", f.name, err)
			}
		}
		if err != nil {
			w.free(c)
			return nil, err
		}
	}
	if l.KVScale > 0 {
		if err := c.CopyHtoD(w.kvScale, scaleFill(l.KVScale, l.kv.Scaled)); err != nil {
			w.free(c)
			return nil, fmt.Errorf("filling kv_scale: %w", err)
		}
	}
	// Zeros, so that the read-only record of the lengths and the option
	// values (inputs.go) knows the bytes before the first upload.
	if err := c.MemsetD32Async(w.positions, 0, l.Positions/4, s); err != nil {
		w.free(c)
		return nil, fmt.Errorf("clearing positions: %w", err)
	}
	for _, z := range []struct {
		name string
		p    cuda.DevPtr
		n    int64
	}{{"head_params", w.headParams, l.HeadParams}, {"pages", w.pages, l.Pages}, {"mask", w.mask, l.Mask}, {"split_counts", w.splitCounts, l.SplitCounts}, {"planned", w.planned, l.Planned}} {
		if z.n == 0 {
			continue
		}
		if err := c.MemsetD32Async(z.p, 0, z.n/4, s); err != nil {
			w.free(c)
			return nil, fmt.Errorf("clearing %s: %w", z.name, err)
		}
	}
	if err := c.MemsetD32Async(w.scratch, 0, l.Scratch/4, s); err != nil {
		w.free(c)
		return nil, fmt.Errorf("clearing the fused kernels' scratch: %w", err)
	}
	// An engine's workspace starts zeroed once, like the counters: a
	// kernel that needs it cleared per step clears it itself. Its scratch
	// buffers then get their declared fills (workspaceFills).
	for _, f := range w.workspaceFills() {
		if err := c.MemsetD32Async(f.p, f.word, f.n/4, s); err != nil {
			w.free(c)
			return nil, fmt.Errorf("filling the workspace (%s): %w", f.name, err)
		}
	}
	w.initInputs()
	return w, nil
}

// A bufferFill is one buffer's share of the random fill.
type bufferFill struct {
	name string
	p    cuda.DevPtr
	n    int64 // bytes, the whole allocation
	t    *kvtype.Type
	seed uint64
}

// fills lists the buffers the random fill covers: q (its dtype's element
// size; bf16 gets f16 bit patterns, finite and nonzero all the same), K
// and V (the KV type), each over its whole allocation and with its own
// seed, so that K and V are not the same numbers. A scaled type's
// kv_scale gets scaleFill.
func (w *workspace) fills() []bufferFill {
	q := kvtype.F32
	if w.l.qDtype.Bytes() == 2 {
		q = kvtype.F16
	}
	kv := w.l.kv
	return []bufferFill{
		{"q", w.q, w.l.Q, q, fillSeed},
		{"k", w.k, w.l.K, kv, fillSeed + 1},
		{"v", w.v, w.l.V, kv, fillSeed + 2},
		{"q_alt", w.qAlt, w.l.Q, q, fillSeed + 3},
	}
}

// positionBytes encodes lengths as the ABI's positions (nkv − 1, int32),
// followed by the same lengths as seqlens (nkv, int32): one buffer, one
// copy, for kernels that take either (the signature's positions and
// seqlens arguments).
func positionBytes(lengths []int) []byte {
	n := len(lengths)
	out := make([]byte, 8*n)
	for i, nkv := range lengths {
		binary.LittleEndian.PutUint32(out[4*i:], uint32(int32(nkv-1)))
		binary.LittleEndian.PutUint32(out[4*(n+i):], uint32(int32(nkv)))
	}
	return out
}

// A wordFill is a fill of n bytes at p with one 32-bit word.
type wordFill struct {
	name string
	p    cuda.DevPtr
	n    int64
	word uint32
}

// workspaceFills are the word fills of a new workspace after the random
// fill: a paged pool's spare pages (NaN, pages.go), then the workspace
// allocation, all of it zeroed, then each scratch buffer's declared fill:
// poison poisoned, a constant written in every word; zero and never keep
// the zeros.
func (w *workspace) workspaceFills() []wordFill {
	out := w.spareFills()
	if w.l.Workspace == 0 {
		return out
	}
	out = append(out, wordFill{"workspace", w.workspace, w.l.Workspace, 0})
	for _, sp := range w.l.dims(abi.Shape{}).ScratchSpans() {
		if sp.Fill == abi.FillPoison {
			out = append(out, wordFill{sp.Name, w.workspace + devOff(sp.Offset), abi.Align16(sp.Bytes), poison})
		}
		if word, ok := sp.Fill.Word(); ok { // a constant (f32:1 …)
			out = append(out, wordFill{sp.Name, w.workspace + devOff(sp.Offset), abi.Align16(sp.Bytes), word})
		}
	}
	return out
}
