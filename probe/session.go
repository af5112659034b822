package probe

import (
	"fmt"
	"slices"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/oracle"
	"github.com/ktune/ktune/plan"
	"github.com/ktune/ktune/probe/gate"
)

// The gates' session: what a pointRun lends the gates (package gate) of
// its point. Every launch goes through the one launch path (runOutputs):
// poisoned outputs, the inputs sealed, the pair, the read-back and the
// checks after every launch.

var _ gate.Session = (*session)(nil)

// A session is the state of one point that its gates (package gate) and
// its timing probes share and neither owns: the point's kernels and
// workspace, the one launch path and what it counts, the inputs drawn for
// it, and what the checks after every launch found. A pointRun holds it.
type session struct {
	b *Backend
	p *plan.Point

	l        layout
	k, twin  *kernelPair
	g, twinG geometry
	ws       *workspace
	// pairs counts the launch pairs (and graph replays) of this run: the
	// gates' cost per compiled kernel is read off it.
	pairs int
	// base is the uniform gate input drawn once per run; every input set
	// is derived from it (uploadSet).
	base *oracle.Inputs
	// spare are read-back buffers of partial no verdict refers to any
	// more (the gates give them back): at batch 16 a fresh one per launch
	// faults in megabytes of new pages every time.
	spare [][]byte
	// tInputs and tOracle are the host's share of the gates: drawing and
	// deriving the inputs, and the float64 reference.
	tInputs, tOracle time.Duration
	// found is what the read-only and guard checks after every launch
	// found (afterLaunch), gates and probes alike.
	found gate.Findings
}

// A boundKernel is a kernel a gate launches: the point it was planned
// for, its loaded pair and geometry. own says it runs in the point's own
// state (the point's kernel, its twin, a fresh module of it); else it
// runs as a context of its own point, layout and workspace (ws nil: the
// point's).
type boundKernel struct {
	p *plan.Point
	k *kernelPair
	g geometry
	// atNKV: the grid follows the point's geometry at each launch's nkv.
	atNKV bool
	own   bool
	l     layout
	ws    *workspace
}

func (k *boundKernel) Point() *plan.Point { return k.p }

func (r *session) Point() *plan.Point              { return r.p }
func (r *session) Logf(format string, args ...any) { r.b.logf(format, args...) }
func (r *session) Pairs() int                      { return r.pairs }
func (r *session) GatedSlots() int                 { return r.l.gatedSlots(r.p.Config.Shape) }
func (r *session) Findings() *gate.Findings        { return &r.found }
func (r *session) Recycle(bufs ...[]byte)          { r.recycle(bufs...) }
func (r *session) AfterLaunch(nkv int) error       { return r.afterLaunch(nkv) }

// Bounds are the point's tolerance, with out's dtype for the allowance
// of its rounding (oracle.Bounds).
func (r *session) Bounds() oracle.Bounds {
	t := r.p.Tol
	return oracle.Bounds{MaxAbs: t.MaxAbs, MaxRel: t.MaxRel, NMSE: t.NMSE, OutDtype: r.l.outDtype}
}

func (r *session) PageSize() int {
	if pool := r.ws.paged(); pool != nil {
		return pool.PageSize
	}
	return 0
}

func (r *session) UploadSet(set oracle.InputSet, rows int, lengths []int) (*oracle.Inputs, error) {
	return r.uploadSet(set, rows, lengths)
}

// UploadTiled tiles in up to the capacity (tile.go); the inputs it
// returns are kept with the set for the kernels after this one
// (inputcache.go).
func (r *session) UploadTiled(in *oracle.Inputs) (*oracle.Inputs, error) {
	if err := r.uploadTiled(in); err != nil {
		return nil, err
	}
	return r.b.inputCache().tiled(in), nil
}

func (r *session) References(in *oracle.Inputs, launches [][]int) ([]oracle.Output, error) {
	t0 := time.Now()
	defer func() { r.tOracle += time.Since(t0) }()
	return r.b.inputCache().references(in, launches)
}

func (r *session) ForgetUploads() { r.ws.uniform, r.ws.tiled = uploaded{}, uploaded{} }

func (r *session) Kernel() gate.Kernel {
	return &boundKernel{p: r.p, k: r.k, g: r.g, atNKV: true, own: true}
}

func (r *session) Twin() gate.Kernel {
	if r.twin == nil {
		return nil
	}
	return &boundKernel{p: r.p.Twin, k: r.twin, g: r.twinG, own: true}
}

func (r *session) Fresh(nkv int) (gate.Kernel, func(), error) {
	k, err := r.freshModule(r.geometryAt(r.g, nkv))
	if err != nil {
		return nil, nil, err
	}
	return &boundKernel{p: r.p, k: k, g: r.g, atNKV: true, own: true}, func() { r.b.gpu.unload(k) }, nil
}

// Batch is the point's kernel with p's geometry, in the point's
// workspace.
func (r *session) Batch(p *plan.Point) (gate.Kernel, error) {
	g := pointGeometry(p)
	if err := sharedFromSymbols(r.b.gpu, r.k, &g); err != nil {
		return nil, err
	}
	return &boundKernel{p: p, k: r.k, g: g, l: r.l, ws: r.ws}, nil
}

// Arm loads p's kernel and gives it the point's workspace when their
// layouts agree, else one of its own.
func (r *session) Arm(p *plan.Point) (gate.Kernel, func(), error) {
	k, bld, err := r.b.gpu.load(p.Source, &p.Config, p.Flags)
	if err != nil {
		return nil, nil, err
	}
	if k == nil {
		log := ""
		if bld != nil {
			log = bld.record.Log
		}
		return nil, nil, fmt.Errorf("NVRTC rejected the arm's kernel:\n%s", log)
	}
	g := pointGeometry(p)
	if err := sharedFromSymbols(r.b.gpu, k, &g); err != nil {
		return nil, nil, err
	}
	// For the side effect: the dynamic shared memory opt-in.
	if _, err := r.b.gpu.resources(k, g); err != nil {
		return nil, nil, fmt.Errorf("preparing the arm's kernel: %w", err)
	}
	l, err := pointLayout(p)
	if err != nil {
		return nil, nil, err
	}
	a := &boundKernel{p: p, k: k, g: g, l: l, ws: r.ws}
	if l == r.l {
		return a, func() {}, nil
	}
	if a.ws, err = r.b.gpu.allocWorkspace(l); err != nil {
		return nil, nil, fmt.Errorf("allocating the arm's buffers: %w", err)
	}
	return a, func() { _ = r.b.gpu.freeWorkspace(a.ws) }, nil
}

func (r *session) Launch(k gate.Kernel, nkv int, lengths []int) (gate.Outputs, error) {
	bk := k.(*boundKernel)
	if !bk.own {
		return r.inContext(bk, func(sub *session) (outputs, error) {
			return sub.runOutputs(sub.k, &sub.p.Config, sub.geometryAt(sub.g, nkv), lengths, firstSet)
		})
	}
	g := bk.g
	if bk.atNKV {
		g = r.geometryAt(g, nkv)
	}
	o, err := r.runOutputs(bk.k, &bk.p.Config, g, lengths, firstSet)
	return o.gate(), err
}

func (r *session) LaunchInputs(k gate.Kernel, in *oracle.Inputs, lengths []int) (gate.Outputs, error) {
	bk := k.(*boundKernel)
	if bk.own {
		bk = &boundKernel{p: bk.p, k: bk.k, g: bk.g}
	}
	return r.inContext(bk, func(sub *session) (outputs, error) {
		if err := sub.upload(in); err != nil {
			return outputs{}, err
		}
		return sub.runOutputs(sub.k, &sub.p.Config, sub.geometryAt(sub.g, slices.Max(lengths)), lengths, firstSet)
	})
}

// inContext runs launch on a copy of r that holds k's point, kernel,
// geometry, layout and workspace (the point's where k has none); what
// its launches counted and found is the point's.
func (r *session) inContext(k *boundKernel, launch func(sub *session) (outputs, error)) (gate.Outputs, error) {
	sub := *r
	sub.p, sub.k, sub.g = k.p, k.k, k.g
	if k.ws != nil {
		sub.l, sub.ws = k.l, k.ws
	}
	defer func() { r.pairs, r.found, r.spare = sub.pairs, sub.found, sub.spare }()
	o, err := launch(&sub)
	return o.gate(), err
}

func (r *session) StaleLaunch(nkv int, lengths []int) (gate.Outputs, error) {
	o, err := r.staleLaunch(nkv, lengths)
	return o.gate(), err
}

// Capture captures one pair of the point's kernel at lengths (the grid at
// nkv) into a graph.
func (r *session) Capture(nkv int, lengths []int) (gate.Graph, error) {
	if err := r.setPositions(lengths); err != nil {
		return nil, err
	}
	g, err := r.capture(1, r.geometryAt(r.g, nkv), false)
	if err != nil {
		return nil, err
	}
	return &replayGraph{r, g}, nil
}

// A replayGraph is a captured pair the replay gate replays.
type replayGraph struct {
	r *session
	g graph
}

func (x *replayGraph) Close() { x.g.destroy() }

func (x *replayGraph) Replay(nkv int, lengths []int) (gate.Outputs, error) {
	r := x.r
	if err := r.setPositions(lengths); err != nil {
		return gate.Outputs{}, err
	}
	if err := r.poison(firstSet); err != nil {
		return gate.Outputs{}, err
	}
	if err := r.sealInputs(); err != nil {
		return gate.Outputs{}, err
	}
	r.pairs++
	if err := x.g.launch(); err != nil {
		return gate.Outputs{}, fmt.Errorf("replaying the graph at nkv %d: %w", nkv, err)
	}
	o, err := r.readBack(firstSet)
	if err != nil {
		return gate.Outputs{}, fmt.Errorf("replay at nkv %d: %w", nkv, err)
	}
	return o.gate(), r.afterLaunch(nkv)
}

// BoundsLaunch launches the point's kernel at the capacity on copies of
// every read-only buffer that end against address space with nothing
// mapped (cuda.Context.AllocBeforeHole). The copies live only for that
// launch, so the workspace the probes time is allocated as before.
func (r *session) BoundsLaunch() (names []string, ran bool, err error) {
	c, s := &r.p.Config, r.p.Config.Shape
	lengths := make([]int, s.Batch)
	for i := range lengths {
		lengths[i] = s.Capacity
	}
	if err := r.setPositions(lengths); err != nil {
		return nil, false, err
	}
	if err := r.poison(firstSet); err != nil {
		return nil, false, err
	}
	view := *r.ws
	for _, e := range view.table() {
		if e.role != abi.RoleInput || e.n == 0 {
			continue
		}
		p, release, err := r.b.gpu.holeCopy(*e.p, e.n)
		if err != nil {
			if cuda.IsOutOfMemory(err) {
				r.b.logf("%s: bounds gate not run: no room for copies of the read-only buffers (%v)", c.Variant, err)
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("copying %s before unmapped memory: %w", e.name, err)
		}
		defer release()
		*e.p = p
		names = append(names, e.name)
	}
	g := r.geometryAt(r.g, s.Capacity)
	r.pairs++
	err = r.b.gpu.launch(r.k, c, g, &view)
	if err == nil {
		err = r.b.gpu.sync()
	}
	return names, true, err
}

func (r *session) Buffers() (inputs, all []string) {
	for _, e := range r.ws.table() {
		if e.n == 0 {
			continue
		}
		if e.role == abi.RoleInput {
			inputs = append(inputs, e.name)
		}
		all = append(all, e.name)
	}
	return inputs, all
}

// gate is o as the gates read it.
func (o outputs) gate() gate.Outputs { return gate.Outputs{Partial: o.partial, Out: o.out, LSE: o.lse} }
