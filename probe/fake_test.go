package probe

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A fakeModel is how a fake kernel behaves: a correct split-KV kernel in
// float64, with switches for the defects the gates must catch.
type fakeModel struct {
	compileFails bool
	// params are the parameters the driver reports for each entry
	// (cuFuncGetParamInfo); nil: none reported, as on an older driver.
	params         map[string][]abi.ParamSlot
	offset         float32       // added to every output
	skipIdle       bool          // idle splits leave their slots unwritten
	keepMax        bool          // uses the longest nkv it has seen (state in the module)
	gridRows       int           // > 0: block x covers rows [x·gridRows, …); rows past grid·gridRows are lost
	nkvByValue     bool          // nkv is fixed at enqueue time, so a replay keeps the captured one
	noise          bool          // every other launch flips the last bit of out[0]
	skipNewest     int           // > 0: row nkv−1 is left out when nkv > skipNewest
	ftz            bool          // f16 subnormals read as zero
	kScaleForV     bool          // V dequantized with K's scales
	readPast       bool          // each split also reads the first row of the next chunk
	counters       bool          // a fused kernel: an arrival count per (sequence, KV head) in the scratch, which the last split re-arms to zero
	noRearm        bool          // with counters: the count is left as it ended
	driftPast      int           // > 0: out is off by 0.01 where the length exceeds it (an error growing with the chunk)
	prefetchPast   bool          // each split also loads (and ignores) the row after its chunk, which may lie past K's end
	zeroTail       int           // > 0: rows up to the next multiple of it past a chunk are added with weight 0 (0·NaN = NaN)
	pastLength     int           // > 0: the split a length ends in also takes this many rows past it, weighted as any other
	memoAfter      int           // > 0: from this many launches in a row at the same positions on, copies its last outputs
	memoSkip       bool          // with memoAfter: leaves the outputs as they are instead
	breakAfter     int           // > 0: launches past this many of the module add 0.5 to out
	writeInput     string        // "k": rescales the newest row's first K element in place; "positions": clears seqlens
	writePastOut   bool          // writes one element past the end of out
	writeBefore    bool          // writes the word before partial's start
	delay          time.Duration // per launch
	fault          error         // every launch fails with it
	launchErr      error         // the launch is refused (not sticky)
	options        *fakeOptions  // computes the shape's attention options (options_test.go)
	ignoreTable    bool          // paged: reads sequence b's page j at b·max_pages + j, whatever the block table says
	nkvFromPages   bool          // paged: each length from page_indptr and last_page_len, not positions
	nkvFromPlanned string        // each length from this host-planned array (planned_test.go), not positions
	splitsByBatch  bool          // the split count in use is SPLITS/batch: the merge order follows the batch
	splitsByPos    bool          // the split count in use is SPLITS − b%2: the reduction follows the batch position
	corruptEvery   int           // > 0: every corruptEvery-th launch of the module adds 0.25 to out[0] (a counter that wraps)
	corruptWindow  [2]int        // launches lo ≤ n < hi of the module add 0.25 to out[0] (a ring re-armed late)
}

type fakeKernel struct {
	m    fakeModel
	seen map[int]int // keepMax's device state, per sequence
	// memoAfter's device state: the positions of the run of launches,
	// its length, and the outputs it copies.
	memoPos           []int32
	streak            int
	memoPart, memoOut []byte
	launches          int
	prepared          bool        // resources ran: large dynamic shared memory is opted into
	lseAt             cuda.DevPtr // fakeOptions.lseFirstAddr's device state: the lse its first launch was given
}

type fakeAlloc struct {
	base cuda.DevPtr
	size int64
	data []byte // nil: not backed by host memory
}

type fakeLaunch struct {
	k   *kernelPair
	c   results.Config
	g   geometry
	w   *workspace
	pos []int32 // positions at enqueue time
	// captured is a graph replay's positions at capture time (nil for a
	// plain launch).
	captured []int32
}

// fakeDevice is a device with Go memory and Go kernels. It counts what
// the orchestration asks of it, so tests can assert on the calls.
type fakeDevice struct {
	// staging and stagingDev are the host and device upload stages
	// (stage, stageDevice); copies counts the device-to-device copies
	// from the latter, listCopies those of copyList.
	staging    []byte
	stagingDev cuda.DevPtr
	copies     int
	lists      []int // the length of every copy list, in order

	models  map[string]fakeModel // by variant; absent: correct
	kernels map[*kernelPair]*fakeKernel
	allocs  []fakeAlloc
	next    cuda.DevPtr

	freeMem  int64
	allocErr error
	// allocOOM, when not nil, says which allocations fail out of
	// memory (a device without room for the stale gate's scratch).
	allocOOM  func(n int64) bool
	allocOOMs int // allocations that failed by allocOOM
	bw, mhz   float64
	// sample returns the i-th timed sample (ns per pair) and whether the
	// blocker timed out; nil: 1000 ns.
	sample  func(i int) (float64, bool)
	samples int
	// onTimed runs before each timed sample (a test cancels from it).
	onTimed func(i int)

	capturing *[]fakeLaunch
	dead      error // sticky: every later call fails with it

	blocked   bool // a stream blocker is enqueued and not released
	timedIdx  int  // the sample being timed, -1 outside a timed sample
	lastIdx   int  // the last sample timed
	stopped   bool
	passBytes int64

	filled                                                       []cuda.DevPtr // every fill32 target, in order
	written                                                      []cuda.DevPtr // every write target, in order
	holes                                                        int           // hole copies not released
	holeErr                                                      error         // holeCopy fails with it
	graphs                                                       int           // captured and not destroyed
	digests                                                      int
	digested                                                     int64 // bytes digested
	pairs, workspaces, frees, buffers, passes, reloads, captures int
	// clusters counts the steps run by the cluster of each launch (zero
	// for a launch without one), replayed the steps a graph replayed.
	clusters, replayed map[[3]int]int

	// failAt makes the n-th call (1-based) of an operation fail with a
	// non-sticky error; calls counts them.
	failAt map[string]int
	calls  map[string]int
	// symbols are the bytes of the loaded modules' variables by name
	// (cuModuleGetGlobal and a copy), for launches that read their shared
	// memory size from one.
	symbols map[string][]byte
	// lastSteps are the launches of the last step enqueued, as run, and
	// lastArgs their arguments as marshalled (marshal.go, with the fake's
	// tensor-map encoding).
	lastSteps []plan.Launch
	lastArgs  [][]any
	// blocksPerSM is the first launch's occupancy resources reports
	// (cuOccupancyMaxActiveBlocksPerMultiprocessor).
	blocksPerSM int
	// fillModel, when set, is what the device fill writes in place of
	// fillValues (elements first, first+1, … into dst): a test plants a
	// kernel that disagrees with the host.
	fillModel func(dst []byte, t *kvtype.Type, seed uint64, first int64)
}

func (f *fakeDevice) symbol(_ *kernelPair, name string) ([]byte, error) {
	if err := f.hit("symbol"); err != nil {
		return nil, err
	}
	b, ok := f.symbols[name]
	if !ok {
		return nil, fmt.Errorf("looking up the module variable %q: CUDA_ERROR_NOT_FOUND", name)
	}
	return b, nil
}

// hit counts a call of op and returns the sticky error, or the injected
// one when this is the call failAt names.
func (f *fakeDevice) hit(op string) error {
	if f.dead != nil {
		return f.dead
	}
	f.calls[op]++
	if n, ok := f.failAt[op]; ok && f.calls[op] == n {
		return fmt.Errorf("fake %s: %w", op, errInvalid)
	}
	return nil
}

func newFakeDevice() *fakeDevice {
	return &fakeDevice{models: map[string]fakeModel{}, kernels: map[*kernelPair]*fakeKernel{},
		failAt: map[string]int{}, calls: map[string]int{}, clusters: map[[3]int]int{}, replayed: map[[3]int]int{},
		next: 0x10000, freeMem: 1 << 40, bw: 4000, mhz: 1980, timedIdx: -1}
}

func (f *fakeDevice) load(src plan.Source, c *results.Config, _ []string) (*kernelPair, *build, error) {
	if f.dead != nil {
		return nil, nil, f.dead
	}
	m := f.models[c.Variant]
	bld := &build{key: "fake-" + c.Variant, record: results.Compile{Seconds: 0.01, Log: "fake"}}
	if m.compileFails {
		bld.failed = true
		bld.record.Log = src.Name + "(9): error: expected a ';'"
		return nil, bld, nil
	}
	k := &kernelPair{build: bld, fns: map[string]*cuda.Function{}, loadsBeforeChain: -1, params: m.params}
	f.kernels[k] = &fakeKernel{m: m}
	return k, bld, nil
}

func (f *fakeDevice) reload(_ plan.Source, k *kernelPair) (*kernelPair, error) {
	if err := f.hit("reload"); err != nil {
		return nil, err
	}
	f.reloads++
	n := &kernelPair{build: k.build, fns: map[string]*cuda.Function{}}
	f.kernels[n] = &fakeKernel{m: f.kernels[k].m}
	return n, nil
}

func (f *fakeDevice) unload(k *kernelPair) { delete(f.kernels, k) }

func (f *fakeDevice) resources(k *kernelPair, _ geometry) ([]results.Resource, error) {
	if fk := f.kernels[k]; fk != nil {
		fk.prepared = true
	}
	return []results.Resource{{Kernel: "attn_partial", Registers: 40, LoadsBeforeChain: -1, MaxBlocksPerSM: f.blocksPerSM}}, f.dead
}

func (f *fakeDevice) memFree() (int64, error) { return f.freeMem, f.dead }

func (f *fakeDevice) allocBytes(n int64) cuda.DevPtr {
	p := f.next
	f.allocs = append(f.allocs, fakeAlloc{p, n, make([]byte, n)})
	f.next += cuda.DevPtr(n+0xffff) &^ 0xffff
	return p
}

// at returns the bytes of device memory from p on.
func (f *fakeDevice) at(p cuda.DevPtr) []byte {
	for _, a := range f.allocs {
		if p >= a.base && p < a.base+cuda.DevPtr(a.size) {
			if a.data == nil {
				return nil
			}
			return a.data[p-a.base:]
		}
	}
	panic(fmt.Sprintf("fake device: address %#x is not allocated", p))
}

// allocWorkspace lays out every buffer between guard regions of canary,
// as the CUDA workspace does, so that a model writing out of bounds lands
// in them.
func (f *fakeDevice) allocWorkspace(l layout) (*workspace, error) {
	if f.allocErr != nil {
		return nil, f.allocErr
	}
	f.workspaces++
	w := &workspace{l: l}
	for _, e := range w.table() {
		if e.n == 0 {
			continue
		}
		base := f.allocBytes(e.n + 2*guardBytes)
		*e.p = base + guardBytes
		buf := f.at(base)
		for i := int64(0); i < guardBytes; i += 4 {
			binary.LittleEndian.PutUint32(buf[i:], canary)
			binary.LittleEndian.PutUint32(buf[guardBytes+e.n+i:], canary)
		}
	}
	read := func(b []byte, src cuda.DevPtr) error {
		copy(b, f.at(src))
		return nil
	}
	for _, fl := range w.fills() {
		if err := fillOnDevice(fl, f.deviceFill, read); err != nil {
			return nil, err
		}
	}
	if l.KVScale > 0 {
		copy(f.at(w.kvScale), scaleFill(l.KVScale, l.kv.Scaled))
	}
	for _, fl := range w.workspaceFills() {
		b := f.at(fl.p)[:fl.n]
		for i := int64(0); i+4 <= fl.n; i += 4 {
			binary.LittleEndian.PutUint32(b[i:], fl.word)
		}
	}
	w.initInputs()
	return w, nil
}

// deviceFill is the fake's ktune_fill: fillModel, or else fillValues,
// over the range of elements asked for.
func (f *fakeDevice) deviceFill(p cuda.DevPtr, first, n int64, t *kvtype.Type, seed uint64) error {
	elt := int64(t.Bytes)
	dst := f.at(p)[first*elt:][:n*elt]
	if f.fillModel != nil {
		f.fillModel(dst, t, seed, first)
		return nil
	}
	fillValues(dst, t, seed, first)
	return nil
}

// holeCopy is an allocation of exactly n bytes with nothing mapped after
// it: a model indexing past its end panics, which run turns into a fault.
func (f *fakeDevice) holeCopy(p cuda.DevPtr, n int64) (cuda.DevPtr, func(), error) {
	if err := f.hit("holeCopy"); err != nil {
		return 0, nil, err
	}
	if f.holeErr != nil {
		return 0, nil, f.holeErr
	}
	h := f.next
	f.allocs = append(f.allocs, fakeAlloc{h, n, slices.Clone(f.at(p)[:n])})
	f.next += cuda.DevPtr(n+0xffff) &^ 0xffff
	f.holes++
	return h, func() { f.holes-- }, nil
}

// digest is FNV-1a over each segment: any digest does, since the gates
// only compare the device's digests with each other.
func (f *fakeDevice) digest(p cuda.DevPtr, n, seg int64) ([]uint64, error) {
	if err := f.hit("digest"); err != nil {
		return nil, err
	}
	f.digests++
	f.digested += n
	b := f.at(p)[:n]
	var out []uint64
	for lo := int64(0); lo < n; lo += seg {
		h := fnv.New64a()
		h.Write(b[lo:min(n, lo+seg)])
		out = append(out, h.Sum64())
	}
	return out, nil
}

func (f *fakeDevice) freeWorkspace(*workspace) error { f.frees++; return nil }

func (f *fakeDevice) alloc(n int64) (cuda.DevPtr, error) {
	if f.allocErr != nil {
		return 0, f.allocErr
	}
	if f.allocOOM != nil && f.allocOOM(n) {
		f.allocOOMs++
		return 0, errOOM
	}
	f.buffers++
	// Past 64 MiB unbacked: the bandwidth and flush buffers are
	// gigabytes that only the (modelled) read kernel touches.
	p := f.next
	a := fakeAlloc{base: p, size: n}
	if n <= 64<<20 {
		a.data = make([]byte, n)
	}
	f.allocs = append(f.allocs, a)
	f.next += cuda.DevPtr(n+0xffff) &^ 0xffff
	return p, f.dead
}

func (f *fakeDevice) free(cuda.DevPtr) error { f.buffers--; return nil }

func (f *fakeDevice) write(dst cuda.DevPtr, b []byte) error {
	if err := f.hit("write"); err != nil {
		return err
	}
	f.written = append(f.written, dst)
	copy(f.at(dst), b)
	return nil
}

func (f *fakeDevice) stage(n int64) ([]byte, error) {
	if n > stageMax {
		return nil, fmt.Errorf("staging %d bytes", n)
	}
	if f.staging == nil {
		f.staging = make([]byte, stageMax)
	}
	return f.staging[:n], nil
}

func (f *fakeDevice) stageDevice() (cuda.DevPtr, error) {
	if f.stagingDev == 0 {
		f.stagingDev = f.allocBytes(stageMax)
	}
	return f.stagingDev, nil
}

func (f *fakeDevice) copyAsync(dst, src cuda.DevPtr, n int64) error {
	if err := f.hit("copyAsync"); err != nil {
		return err
	}
	f.copies++
	copy(f.at(dst)[:n], f.at(src)[:n])
	return nil
}

func (f *fakeDevice) copyList(cs []devCopy) error {
	if err := f.hit("copyList"); err != nil {
		return err
	}
	if err := disjointCopies(cs); err != nil {
		return err
	}
	f.lists = append(f.lists, len(cs))
	for _, c := range cs {
		copy(f.at(c.dst)[:c.n], f.at(c.src)[:c.n])
	}
	return nil
}

func (f *fakeDevice) read(b []byte, src cuda.DevPtr) error {
	if err := f.hit("read"); err != nil {
		return err
	}
	copy(b, f.at(src))
	return nil
}

func (f *fakeDevice) fill32(p cuda.DevPtr, v uint32, n int64) error {
	if err := f.hit("fill32"); err != nil {
		return err
	}
	f.filled = append(f.filled, p)
	buf := f.at(p)
	for i := int64(0); i < n/4 && buf != nil; i++ {
		binary.LittleEndian.PutUint32(buf[4*i:], v)
	}
	return f.dead
}

func (f *fakeDevice) sync() error { return f.hit("sync") }

func (f *fakeDevice) readPass(_ cuda.DevPtr, n int64) error {
	f.passes++
	f.passBytes = n
	return f.hit("readPass")
}

func (f *fakeDevice) clockSpin() (uint64, uint64, error) {
	return uint64(f.mhz * 1000), 1_000_000, f.hit("clockSpin") // cycles in 1 ms
}

// block starts timed sample number f.samples.
func (f *fakeDevice) block() error {
	if f.dead != nil {
		return f.dead
	}
	if f.blocked {
		panic("fake device: a second blocker before the first was released")
	}
	f.blocked, f.timedIdx, f.lastIdx = true, f.samples, f.samples
	f.samples++
	if f.onTimed != nil {
		f.onTimed(f.timedIdx)
	}
	return nil
}

func (f *fakeDevice) release() { f.blocked = false }

func (f *fakeDevice) blockerTimedOut() bool {
	if f.sample == nil {
		return false
	}
	_, drop := f.sample(f.lastIdx)
	return drop
}

func (f *fakeDevice) record(e event) error {
	if e == evStop {
		f.stopped = true
		return f.hit("record stop")
	}
	return f.hit("record start")
}

func (f *fakeDevice) waitStop() error {
	if f.blocked {
		panic("fake device: waiting for the stop event behind an unreleased blocker")
	}
	return f.hit("waitStop")
}

// elapsedMS is the scripted sample inside a timed sample, else the time
// a readPass takes at f.bw GB/s.
func (f *fakeDevice) elapsedMS() (float64, error) {
	if err := f.hit("elapsed"); err != nil {
		return 0, err
	}
	if f.timedIdx < 0 {
		return float64(f.passBytes) / f.bw / 1e6, nil
	}
	i := f.timedIdx
	f.timedIdx = -1
	if f.sample == nil {
		return 1e-3, f.dead
	}
	ns, _ := f.sample(i)
	return ns / 1e6, f.dead
}

func (f *fakeDevice) positions(w *workspace, batch int) []int32 {
	out := make([]int32, batch)
	for b := range out {
		out[b] = int32(binary.LittleEndian.Uint32(f.at(w.positions)[4*b:]))
	}
	return out
}

func (f *fakeDevice) launch(k *kernelPair, c *results.Config, g geometry, w *workspace) error {
	if err := f.hit("launch"); err != nil {
		return err
	}
	l := fakeLaunch{k: k, c: *c, g: g, w: w, pos: f.positions(w, c.Shape.Batch)}
	f.lastSteps, f.lastArgs = g.steps, nil
	// Marshal as the GPU path does (launches), so that an argument that
	// cannot be marshalled fails here as it would there.
	for _, s := range g.steps {
		args, err := marshal(s.Args, c.Shape, c.Defines, 0, w, f.encodeTensorMap)
		if err != nil {
			return fmt.Errorf("marshalling the arguments of %s: %w", s.Entry, err)
		}
		f.lastArgs = append(f.lastArgs, args)
	}
	if f.capturing != nil {
		*f.capturing = append(*f.capturing, l)
		return nil
	}
	return f.run(l)
}

func (f *fakeDevice) run(l fakeLaunch) error {
	fk := f.kernels[l.k]
	if fk == nil {
		return fmt.Errorf("fake device: launch of an unloaded kernel")
	}
	if fk.m.delay > 0 {
		time.Sleep(fk.m.delay)
	}
	if fk.m.fault != nil {
		f.dead = fk.m.fault
		return f.dead
	}
	if fk.m.launchErr != nil {
		return fk.m.launchErr
	}
	if l.g.shared > 48<<10 && !fk.prepared {
		return fmt.Errorf("fake launch with %d bytes of dynamic shared memory before the opt-in: %w", l.g.shared, errInvalid)
	}
	// The driver's rules for a cluster: it divides the grid, and more
	// than the portable 8 blocks needs the function's opt-in.
	for i, s := range l.g.steps {
		c, grid := s.Cluster, s.Grid
		if i == 0 {
			grid = l.g.grid
		}
		if c == ([3]int{}) {
			continue
		}
		if grid[0]%c[0] != 0 || grid[1]%c[1] != 0 || grid[2]%c[2] != 0 {
			return fmt.Errorf("fake launch of grid %v in clusters of %v: %w", grid, c, errInvalid)
		}
		if s.NonPortableCluster() && !fk.prepared {
			return fmt.Errorf("fake launch in clusters of %v before the non-portable opt-in: %w", c, errInvalid)
		}
	}
	for _, s := range l.g.steps {
		f.clusters[s.Cluster]++
	}
	f.pairs++
	fk.launches++
	return f.executeGuarded(fk, l)
}

// executeGuarded runs the model; an index past the end of an allocation
// (a hole copy's: the others end in a guard region) is the device's
// illegal address, a sticky fault.
func (f *fakeDevice) executeGuarded(fk *fakeKernel, l fakeLaunch) (err error) {
	defer func() {
		if e := recover(); e != nil {
			if re, ok := e.(runtime.Error); ok && strings.Contains(re.Error(), "out of range") {
				f.dead = errIllegal
				err = f.dead
				return
			}
			panic(e)
		}
	}()
	f.execute(fk, l)
	return nil
}

type fakeGraph struct {
	f        *fakeDevice
	launches []fakeLaunch
}

func (g *fakeGraph) launch() error {
	for _, l := range g.launches {
		// A replay re-reads device memory, except what a kernel took by
		// value at capture time.
		l.captured = l.pos
		if !g.f.kernels[l.k].m.nkvByValue {
			l.pos = g.f.positions(l.w, l.c.Shape.Batch)
		}
		if err := g.f.run(l); err != nil {
			return err
		}
		for _, s := range l.g.steps {
			g.f.replayed[s.Cluster]++
		}
	}
	return nil
}

func (g *fakeGraph) destroy() { g.f.graphs-- }

func (f *fakeDevice) beginCapture() error {
	if err := f.hit("beginCapture"); err != nil {
		return err
	}
	f.captures++
	f.capturing = &[]fakeLaunch{}
	return nil
}

func (f *fakeDevice) endCapture() (graph, error) {
	ls := f.capturing
	f.capturing = nil
	g := &fakeGraph{f: f, launches: *ls}
	f.graphs++
	return g, f.hit("endCapture")
}

// fakeBackend is a Backend over f.
func fakeBackend(t *testing.T, f *fakeDevice) *Backend {
	return &Backend{
		gpu: f, log: testLog{t}, loaded: map[string]*kernelPair{}, gates: map[string]*gateVerdict{},
		// A short launch-count run: the fake computes every launch on the
		// host (TestLaunchCountCaught runs the full one).
		opts: Options{LaunchRun: 64},
		env:  results.Env{Device: "fake", SMs: 132, L2Bytes: 1 << 16, ClockMHz: 1980, Arch: "sm_90"},
	}
}

// fakePoint is a small point: 4 query heads over 2 KV heads, head_dim 16,
// batch 2, SPLITS 8, capacity 256, with the plan's kinds of gate lengths
// (boundaries of SPLITS, past a chunk, the capacity) and replay lengths.
func fakePoint(variant string, nkv int) *plan.Point {
	shape := abi.Shape{Name: "tiny", Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "f16", Batch: 2, Capacity: 256}
	return &plan.Point{
		Hash: fmt.Sprintf("%s-%d", variant, nkv),
		Config: results.Config{
			Spec: "test", Variant: variant, Kernel: variant + ".cu", Shape: shape, NKV: nkv, Splits: 8,
			Defines: abi.Defines{{Name: "SPLITS", Value: "8"}},
		},
		Source: plan.Source{Name: variant + ".cu", Partial: "attn_partial", Combine: "attn_combine"},
		// The ABI's two launches; the fake runs its model, not the args.
		Launches: []plan.Launch{
			{Entry: "attn_partial", Grid: [3]int{8, 4, 2}, Block: [3]int{32, 1, 1}},
			{Entry: "attn_combine", Grid: [3]int{4, 2, 1}, Block: [3]int{16, 1, 1}},
		},
		GateKey:    "gate-" + variant,
		GateNKV:    []int{1, 4, 7, 8, 9, 17, 29, 100},
		CaptureNKV: 1,
		ReplayNKV:  []int{7, 9, 17, 100, 256, 9},
		Seed:       1,
		Tol:        plan.Tolerance{MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6},
		Probes:     []results.Probe{results.ProbeCold, results.ProbeHot, results.ProbeGraph},
		Measure:    plan.Measure{Warmup: 1, MinSamples: 5, MaxSamples: 20, MaxNoise: 0.05, BudgetSec: 5, HotBatch: 4, TimeoutSec: 60},
	}
}

// failedKinds lists "kind/inputs" of the failed gates, sorted.
func failedKinds(gs []results.Gate) []string {
	set := map[string]bool{}
	for _, g := range gs {
		if !g.Pass {
			set[string(g.Kind)+"/"+g.Inputs] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// floats decodes little-endian float32s.
func floats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
