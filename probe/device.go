package probe

import (
	"cmp"
	"fmt"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/results"
	"github.com/ktune/ktune/plan"
)

// A device is everything the orchestration of a point (gates, probes,
// workspace reuse, the bandwidth and clock measurements, status
// classification) asks of the GPU, and no more: memory, kernel launches,
// the measurement kernels, events and graph capture. The CUDA
// implementation (cudaDevice) is a thin shim over the driver; the tests
// implement it with Go memory and a Go model of the kernels, so that the
// decisions above it run in CI without a GPU.
//
// Every kernel launch of a point goes through launch; a graph capture
// records the launches made between beginCapture and endCapture.
type device interface {
	// load compiles (or finds) and loads a point's kernels; a nil pair
	// with a nil error means NVRTC rejected the source (the build has the
	// log).
	load(src plan.Source, c *results.Config, flags []string) (*kernelPair, *build, error)
	// reload loads k's CUBIN again as a module of its own, whose
	// __device__ variables start from their initial values; unload
	// releases it.
	reload(src plan.Source, k *kernelPair) (*kernelPair, error)
	unload(k *kernelPair)
	// symbol reads a __device__ or __constant__ variable of k's modules
	// (the variant's kernel first, then its other files): its bytes.
	symbol(k *kernelPair, name string) ([]byte, error)
	// resources reads the compiled footprint for geometry g (and opts into
	// large dynamic shared memory).
	resources(k *kernelPair, g geometry) ([]results.Resource, error)
	// launch enqueues one partial+combine pair (one launch for a fused
	// kernel).
	launch(k *kernelPair, c *results.Config, g geometry, w *workspace) error
	// encodeTensorMap encodes a CUtensorMap argument (marshal.go): the
	// driver's cuTensorMapEncodeTiled on a GPU; the fake lays the
	// arguments out in a fixed order, so that marshalling is tested byte
	// for byte.
	encodeTensorMap(p cuda.TensorMapParams) (cuda.TensorMap, error)

	// memFree is the free device memory in bytes.
	memFree() (int64, error)
	alloc(n int64) (cuda.DevPtr, error)
	free(p cuda.DevPtr) error
	// allocWorkspace allocates the buffers of l with their random fill;
	// freeWorkspace releases them.
	allocWorkspace(l layout) (*workspace, error)
	freeWorkspace(w *workspace) error
	// write copies b to dst once the stream's earlier work is done; read
	// copies src into b after waiting for the stream; fill32 enqueues a
	// fill of n bytes at p with the word v.
	write(dst cuda.DevPtr, b []byte) error
	// stage returns n bytes (n ≤ stageMax) of host memory to write from
	// (writeInputs): pinned on a GPU, so that a write from it is one DMA;
	// the same memory every call, valid until the next.
	stage(n int64) ([]byte, error)
	// stageDevice is stageMax bytes of device memory that scattered
	// pieces are uploaded to packed (writeInputs), the same every call;
	// copyAsync enqueues a copy of n bytes from src to dst on the stream.
	stageDevice() (cuda.DevPtr, error)
	copyAsync(dst, src cuda.DevPtr, n int64) error
	// copyList enqueues the copies of cs on the stream, in one launch of
	// ktune_copies (per stage-full of the list) however many there are;
	// no copy's destination overlaps another copy's source or destination.
	copyList(cs []devCopy) error
	read(b []byte, src cuda.DevPtr) error
	fill32(p cuda.DevPtr, v uint32, n int64) error
	// sync waits for the stream.
	sync() error
	// holeCopy copies the n bytes at p (after the stream's earlier work)
	// into memory that ends against unmapped address space, and returns
	// the copy and its release (BoundsLaunch, for package gate's bounds gate).
	holeCopy(p cuda.DevPtr, n int64) (cuda.DevPtr, func(), error)
	// digest returns one 64-bit digest per seg bytes of the n bytes at p
	// (n and seg multiples of 16), computed on the device after the
	// stream's earlier work: equal bytes give equal digests, and a changed
	// byte changes its segment's digest (inputs.go).
	digest(p cuda.DevPtr, n, seg int64) ([]uint64, error)

	// readPass enqueues the streaming read kernel over n bytes at p (the
	// bandwidth measurement and the cold probe's L2 flush).
	readPass(p cuda.DevPtr, n int64) error
	// clockSpin runs the clock kernel and returns the SM cycles and the
	// nanoseconds it counted.
	clockSpin() (cycles, ns uint64, err error)
	// block enqueues the stream blocker, which holds the launches
	// enqueued after it until release; blockerTimedOut reports, after the
	// stream synchronized, that it gave up waiting.
	block() error
	release()
	blockerTimedOut() bool
	// record enqueues the start or stop event; waitStop waits for the
	// stop event; elapsedMS is the time between the two.
	record(e event) error
	waitStop() error
	elapsedMS() (float64, error)

	// beginCapture starts capturing the stream's launches into a graph;
	// endCapture ends it (on every path: it also unlocks the thread).
	beginCapture() error
	endCapture() (graph, error)
}

// An event is one of the two timing events.
type event int

const (
	evStart event = iota
	evStop
)

// A graph is a captured sequence of launches.
type graph interface {
	launch() error
	destroy()
}

// cudaDevice is the device of a Backend: its context, stream, events and
// measurement kernels.
type cudaDevice struct{ b *Backend }

func (d cudaDevice) load(src plan.Source, c *results.Config, flags []string) (*kernelPair, *build, error) {
	return d.b.load(src, c, flags)
}

func (d cudaDevice) reload(src plan.Source, k *kernelPair) (*kernelPair, error) {
	return loadFresh(d.b.ctx, src, k)
}

func (d cudaDevice) unload(k *kernelPair) { unloadPair(k) }

func (d cudaDevice) symbol(k *kernelPair, name string) ([]byte, error) {
	var firstErr error
	for _, m := range append([]*cuda.Module{k.mod}, k.others...) {
		p, n, err := m.Global(name)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		b := make([]byte, n)
		if err := d.b.ctx.CopyDtoH(b, p); err != nil {
			return nil, fmt.Errorf("reading the module variable %q: %w", name, err)
		}
		return b, nil
	}
	return nil, firstErr
}

func (d cudaDevice) resources(k *kernelPair, g geometry) ([]results.Resource, error) {
	return d.b.resources(k, g)
}

func (d cudaDevice) launch(k *kernelPair, c *results.Config, g geometry, w *workspace) error {
	return d.b.launchPair(k, c, g, w)
}

func (d cudaDevice) encodeTensorMap(p cuda.TensorMapParams) (cuda.TensorMap, error) {
	return d.b.drv.EncodeTensorMapTiled(p)
}

func (d cudaDevice) memFree() (int64, error) {
	free, _, err := d.b.ctx.MemInfo()
	return free, err
}

func (d cudaDevice) alloc(n int64) (cuda.DevPtr, error) { return d.b.ctx.Alloc(n) }
func (d cudaDevice) free(p cuda.DevPtr) error           { return d.b.ctx.Free(p) }

func (d cudaDevice) allocWorkspace(l layout) (*workspace, error) {
	var fill deviceFill
	if d.b.util != nil {
		fill = d.b.fillDevice
	}
	return allocWorkspace(d.b.ctx, l, d.b.stream, fill)
}

func (d cudaDevice) freeWorkspace(w *workspace) error { return w.free(d.b.ctx) }

// write synchronizes first: a synchronous copy does not order itself
// after work on a non-default stream, and an earlier launch may still be
// reading the buffer.
func (d cudaDevice) write(dst cuda.DevPtr, b []byte) error {
	if err := d.b.stream.Synchronize(); err != nil {
		return fmt.Errorf("waiting for the stream: %w", err)
	}
	return d.b.ctx.CopyHtoD(dst, b)
}

func (d cudaDevice) stage(n int64) ([]byte, error) {
	if n > stageMax {
		return nil, fmt.Errorf("staging %d bytes: more than %d", n, stageMax)
	}
	if d.b.staging == nil {
		host, _, err := d.b.ctx.HostAllocMapped(stageMax)
		if err != nil {
			return nil, fmt.Errorf("allocating the upload staging buffer: %w", err)
		}
		d.b.staging = host
	}
	return d.b.staging[:n], nil
}

func (d cudaDevice) stageDevice() (cuda.DevPtr, error) {
	if d.b.stagingDev == 0 {
		p, err := d.b.ctx.Alloc(stageMax)
		if err != nil {
			return 0, fmt.Errorf("allocating the upload staging buffer on the device: %w", err)
		}
		d.b.stagingDev = p
	}
	return d.b.stagingDev, nil
}

func (d cudaDevice) copyAsync(dst, src cuda.DevPtr, n int64) error {
	return d.b.ctx.CopyDtoDAsync(dst, src, n, d.b.stream)
}

func (d cudaDevice) copyList(cs []devCopy) error { return d.b.copyList(cs) }

func (d cudaDevice) read(b []byte, src cuda.DevPtr) error {
	if err := d.b.stream.Synchronize(); err != nil {
		return fmt.Errorf("waiting for the stream: %w", err)
	}
	return d.b.ctx.CopyDtoH(b, src)
}

func (d cudaDevice) fill32(p cuda.DevPtr, v uint32, n int64) error {
	return d.b.ctx.MemsetD32Async(p, v, n/4, d.b.stream)
}

func (d cudaDevice) sync() error { return d.b.stream.Synchronize() }
func (d cudaDevice) holeCopy(p cuda.DevPtr, n int64) (cuda.DevPtr, func(), error) {
	h, err := d.b.ctx.AllocBeforeHole(n)
	if err != nil {
		return 0, nil, err
	}
	release := func() {
		if err := h.Release(); err != nil {
			d.b.logf("releasing memory before a hole: %v", err)
		}
	}
	if err := d.b.ctx.CopyDtoDAsync(h.Ptr, p, n, d.b.stream); err != nil {
		release()
		return 0, nil, err
	}
	return h.Ptr, release, nil
}

func (d cudaDevice) digest(p cuda.DevPtr, n, seg int64) ([]uint64, error) {
	return d.b.digest(p, n, seg)
}
func (d cudaDevice) readPass(p cuda.DevPtr, n int64) error     { return d.b.readPass(p, n) }
func (d cudaDevice) clockSpin() (cycles, ns uint64, err error) { return d.b.clockSpin() }
func (d cudaDevice) block() error                              { return d.b.block() }
func (d cudaDevice) release()                                  { d.b.releaseBlocker() }
func (d cudaDevice) blockerTimedOut() bool                     { return d.b.blockerTimedOut() }

func (d cudaDevice) record(e event) error {
	if e == evStart {
		return d.b.start.Record(d.b.stream)
	}
	return d.b.stop.Record(d.b.stream)
}

func (d cudaDevice) waitStop() error { return d.b.stop.Synchronize() }

func (d cudaDevice) elapsedMS() (float64, error) {
	t, err := cuda.Elapsed(d.b.start, d.b.stop)
	return float64(t), err
}

func (d cudaDevice) beginCapture() error { return d.b.stream.BeginCapture() }

func (d cudaDevice) endCapture() (graph, error) {
	g, err := d.b.stream.EndCapture()
	if g == nil {
		return nil, err
	}
	return cudaGraph{g, d.b.stream}, err
}

type cudaGraph struct {
	g *cuda.Graph
	s *cuda.Stream
}

func (g cudaGraph) launch() error { return g.g.Launch(g.s) }
func (g cudaGraph) destroy()      { g.g.Destroy() }
