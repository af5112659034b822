package probe

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
	"github.com/ktune/ktune/internal/stats"
	"github.com/ktune/ktune/kernels"
)

// The measurement kernels of kernels/util.cu.
type utilKernels struct {
	mod                                        *cuda.Module
	readBW, block, clock, digest, fill, copies *cuda.Function
	// digestOut holds ktune_digest's output, digestCap segments; it grows
	// to the largest buffer digested.
	digestOut cuda.DevPtr
	digestCap int64
	// grids holds ktune_fill's tables (fillGridBytes), written once.
	grids cuda.DevPtr
}

const (
	// blockerTimeout bounds how long ktune_block holds the stream. The host
	// enqueues a sample's launches in microseconds; a second means the
	// host was descheduled or the launch queue filled up (a huge HotBatch),
	// and that sample is dropped.
	blockerTimeout = time.Second
	// clockCycles is ktune_clock's spin: about half a millisecond at 2 GHz,
	// so the ~1 µs resolution of %globaltimer costs under 0.2%.
	clockCycles = 1 << 20
	// bwReps is the number of timed passes of the bandwidth kernel.
	bwReps = 10
	// bwBlock is the bandwidth kernel's block size.
	bwBlock = 256
)

// A utilEntry is one kernel of util.cu and the field it is loaded into.
type utilEntry struct {
	fn   **cuda.Function
	name string
}

// entries lists the kernels loadUtil looks up in util.cu.
func (u *utilKernels) entries() []utilEntry {
	return []utilEntry{{&u.readBW, kernels.ReadBW}, {&u.block, kernels.Block}, {&u.clock, kernels.Clock},
		{&u.digest, kernels.Digest}, {&u.fill, kernels.Fill}, {&u.copies, kernels.Copies}}
}

func (b *Backend) loadUtil() (*utilKernels, error) {
	src, err := utilSource()
	if err != nil {
		return nil, err
	}
	bld, err := b.compile(src, compileOptions(b.arch, nil, nil))
	if err != nil {
		return nil, fmt.Errorf("compiling the measurement kernels: %w", err)
	}
	if bld.failed {
		return nil, fmt.Errorf("compiling the measurement kernels (util.cu) for %s: NVRTC rejected it:\n%s", b.arch, bld.record.Log)
	}
	u := &utilKernels{}
	if u.mod, err = b.ctx.LoadModule(bld.cubin); err != nil {
		return nil, fmt.Errorf("loading the measurement kernels: %w", err)
	}
	for _, f := range u.entries() {
		if *f.fn, err = u.mod.Function(f.name); err != nil {
			u.mod.Unload()
			return nil, fmt.Errorf("finding %s in util.cu: %w", f.name, err)
		}
	}
	grids := fillGridBytes()
	if u.grids, err = b.ctx.Alloc(int64(len(grids))); err != nil {
		u.mod.Unload()
		return nil, fmt.Errorf("allocating the fill's tables: %w", err)
	}
	if err := b.ctx.CopyHtoD(u.grids, grids); err != nil {
		b.ctx.Free(u.grids)
		u.mod.Unload()
		return nil, fmt.Errorf("writing the fill's tables: %w", err)
	}
	return u, nil
}

// block enqueues the stream blocker: the launches enqueued after it wait
// until releaseBlocker, so that the timed region starts with all of them
// already queued on the device and host launch overhead is not measured.
// Every block must be followed by releaseBlocker, on error paths too.
func (b *Backend) block() error {
	atomic.StoreUint32(b.flag(0), 0)
	atomic.StoreUint32(b.flag(1), 0)
	err := b.ctx.Launch(b.util.block, [3]int{1, 1, 1}, [3]int{1, 1, 1}, 0, b.stream,
		b.flagsDev, uint64(blockerTimeout.Nanoseconds()), b.flagsDev+4)
	if err != nil {
		return fmt.Errorf("launching the stream blocker: %w", err)
	}
	return nil
}

// blockerTimedOut reports whether the last blocker gave up waiting; read
// it after the stream synchronized.
func (b *Backend) blockerTimedOut() bool { return atomic.LoadUint32(b.flag(1)) != 0 }

// sampleClock returns the SM clock in MHz measured by ktune_clock.
func (b *Backend) sampleClock() (float64, error) {
	cycles, ns, err := b.gpu.clockSpin()
	if err != nil {
		return 0, err
	}
	return clockMHz(cycles, ns), nil
}

// clockSpin launches ktune_clock, waits for it and reads back the cycles
// and nanoseconds it counted.
func (b *Backend) clockSpin() (cycles, ns uint64, err error) {
	err = b.ctx.Launch(b.util.clock, [3]int{1, 1, 1}, [3]int{1, 1, 1}, 0, b.stream, uint64(clockCycles), b.scratch)
	if err != nil {
		return 0, 0, fmt.Errorf("launching the clock probe: %w", err)
	}
	if err := b.stream.Synchronize(); err != nil {
		return 0, 0, fmt.Errorf("running the clock probe: %w", err)
	}
	var out [16]byte
	if err := b.ctx.CopyDtoH(out[:], b.scratch); err != nil {
		return 0, 0, fmt.Errorf("reading the clock probe: %w", err)
	}
	return binary.LittleEndian.Uint64(out[0:]), binary.LittleEndian.Uint64(out[8:]), nil
}

// clockMHz converts elapsed cycles over elapsed nanoseconds to MHz.
func clockMHz(cycles, ns uint64) float64 {
	if ns == 0 {
		return 0
	}
	return 1000 * float64(cycles) / float64(ns)
}

// bwBufferBytes is the bandwidth buffer: at least 1 GiB and 16 × L2, so
// that L2 hits are a negligible share of the bytes read, shrunk to half of
// what is free when the device is short of memory.
func bwBufferBytes(l2, free int64) (int64, error) {
	n := max(int64(1)<<30, 16*l2)
	if avail := (free - headroom) / 2; n > avail {
		n = avail
	}
	n &^= 1<<20 - 1 // whole MiB: a multiple of every float4 stride
	if n < 4*l2 || n <= 0 {
		return 0, fmt.Errorf("only %s of device memory is free: too little to measure bandwidth past the %s L2", gib(free), gib(l2))
	}
	return n, nil
}

// readBandwidth measures the streaming read bandwidth in GB/s (1e9 B/s):
// the median over bwReps passes, each timed alone with events, of a
// float4 grid-stride read over a buffer far larger than L2.
func (b *Backend) readBandwidth(ctx context.Context) (float64, error) {
	d := b.gpu
	free, err := d.memFree()
	if err != nil {
		return 0, err
	}
	n, err := bwBufferBytes(b.env.L2Bytes, free)
	if err != nil {
		return 0, err
	}
	buf, err := d.alloc(n)
	if err != nil {
		return 0, fmt.Errorf("allocating %s: %w", gib(n), err)
	}
	defer d.free(buf)
	// Zeros: the kernel's conditional store then never fires.
	if err := d.fill32(buf, 0, n); err != nil {
		return 0, err
	}
	// One untimed pass: module load and first-touch costs stay out.
	if err := d.readPass(buf, n); err != nil {
		return 0, err
	}
	var ms []float64
	for range bwReps {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		if err := d.record(evStart); err != nil {
			return 0, err
		}
		if err := d.readPass(buf, n); err != nil {
			return 0, err
		}
		if err := d.record(evStop); err != nil {
			return 0, err
		}
		if err := d.waitStop(); err != nil {
			return 0, err
		}
		t, err := d.elapsedMS()
		if err != nil {
			return 0, err
		}
		ms = append(ms, t)
	}
	med := stats.Summarize(ms).Median
	if med <= 0 {
		return 0, fmt.Errorf("the bandwidth kernel took no measurable time")
	}
	return float64(n) / (med * 1e6), nil // bytes per ns = GB/s
}

// SMClockMHz samples the current SM clock (MHz) with ktune_clock: cycles
// counted over a fixed spin divided by the global timer's elapsed time.
func (b *Backend) SMClockMHz() (float64, error) {
	if b.dead != nil {
		return 0, fmt.Errorf("probe: device unusable after an earlier fault: %w", b.dead)
	}
	return b.sampleClock()
}

// flushL2 reads the whole (zero-filled) flush buffer with the streaming
// read kernel: 2 × L2 of clean lines displace everything in L2 without
// leaving write-back work behind. The kernel's conditional store never
// fires on zeros, so the flush writes nothing.
func (b *Backend) flushL2() error { return b.gpu.readPass(b.flush, flushBytes(b.env.L2Bytes)) }

// readPass launches the streaming read kernel over n bytes at p, with
// enough resident blocks to fill every SM; the grid-stride loop makes the
// count a matter of occupancy only, not of coverage.
func (b *Backend) readPass(p cuda.DevPtr, n int64) error {
	grid := [3]int{b.env.SMs * max(1, b.maxThreadsPerSM/bwBlock), 1, 1}
	return b.ctx.Launch(b.util.readBW, grid, [3]int{bwBlock, 1, 1}, 0, b.stream, p, uint64(n/16), b.scratch)
}

// allocZeroed allocates n bytes (a multiple of 4) and zeroes them from the
// host. It is for the buffers only ktune's own kernels (ktune_*) write and
// the host reads back: compute-sanitizer runs with those kernels excluded
// (internal/sanitizer), so initcheck does not see their stores and, with
// the memory never initialised otherwise, reported every readback of the
// digests as the kernel under test's error (on the H200: ~3000 "Host API
// memory access error" findings per kernel, d2 included). A host memset
// counts as initialisation for initcheck.
func (b *Backend) allocZeroed(n int64) (cuda.DevPtr, error) {
	p, err := b.ctx.Alloc(n)
	if err != nil {
		return 0, err
	}
	if err := b.ctx.MemsetD32Async(p, 0, n/4, b.stream); err != nil {
		b.ctx.Free(p)
		return 0, fmt.Errorf("zeroing %d bytes: %w", n, err)
	}
	if err := b.stream.Synchronize(); err != nil {
		b.ctx.Free(p)
		return 0, fmt.Errorf("zeroing %d bytes: %w", n, err)
	}
	return p, nil
}

// digestBlocks bounds ktune_digest's grid: enough blocks to fill the H200
// several times over, few enough that a small buffer's launch is cheap.
const digestBlocks = 1024

// digest runs ktune_digest over the n bytes at p in segments of seg bytes
// and reads the digests back.
func (b *Backend) digest(p cuda.DevPtr, n, seg int64) ([]uint64, error) {
	u := b.util
	nseg := (n + seg - 1) / seg
	if nseg > u.digestCap {
		if u.digestOut != 0 {
			if err := b.ctx.Free(u.digestOut); err != nil {
				return nil, fmt.Errorf("freeing the digest buffer: %w", err)
			}
			u.digestOut, u.digestCap = 0, 0
		}
		out, err := b.allocZeroed(8 * nseg)
		if err != nil {
			return nil, fmt.Errorf("allocating the digest buffer: %w", err)
		}
		u.digestOut, u.digestCap = out, nseg
	}
	grid := [3]int{int(min(nseg, digestBlocks)), 1, 1}
	if err := b.ctx.Launch(u.digest, grid, [3]int{256, 1, 1}, 0, b.stream, p, uint64(n/16), uint64(seg/16), u.digestOut); err != nil {
		return nil, fmt.Errorf("launching the digest kernel: %w", err)
	}
	if err := b.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("running the digest kernel: %w", err)
	}
	raw := make([]byte, 8*nseg)
	if err := b.ctx.CopyDtoH(raw, u.digestOut); err != nil {
		return nil, fmt.Errorf("reading the digests: %w", err)
	}
	out := make([]uint64, nseg)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(raw[8*i:])
	}
	return out, nil
}

// fillBlock is ktune_fill's block size.
const fillBlock = 256

// fillDevice enqueues ktune_fill: elements [first, first+n) of the random
// fill of type t and seed (fill.go) into the buffer at p, element 0 at p,
// with as many blocks as are resident at once (the kernel strides over
// the rest). p must be 16-byte aligned, as every allocation is: the
// kernel stores whole 16-byte words.
func (b *Backend) fillDevice(p cuda.DevPtr, first, n int64, t *kvtype.Type, seed uint64) error {
	if p%16 != 0 {
		return fmt.Errorf("filling at %#x: not 16-byte aligned", p)
	}
	if first < 0 || n < 0 {
		return fmt.Errorf("filling elements %d..%d: a negative index", first, first+n)
	}
	if n == 0 {
		return nil
	}
	grid := [3]int{b.env.SMs * max(1, b.maxThreadsPerSM/fillBlock), 1, 1}
	err := b.ctx.Launch(b.util.fill, grid, [3]int{fillBlock, 1, 1}, 0, b.stream,
		p, uint64(first), uint64(n), seed, t.Code, b.util.grids)
	if err != nil {
		return fmt.Errorf("launching the fill kernel: %w", err)
	}
	return nil
}

// A devCopy is one device-to-device copy of copyList: n bytes from src to
// dst.
type devCopy struct {
	dst, src cuda.DevPtr
	n        int64
}

// copyBytes is the size of one copy in ktune_copies' list (struct
// ktune_copy: dst, src, n).
const copyBytes = 24

// copyList enqueues cs as ktune_copies launches, as many copies a launch
// as the device's stage holds: the list is written there (after the
// stream's earlier work, so the stage's last use has run) and the kernel
// reads it. A copy's destination overlaps no other copy's source or
// destination (the kernel runs them in no order), which copyList checks.
func (b *Backend) copyList(cs []devCopy) error {
	if err := disjointCopies(cs); err != nil {
		return err
	}
	d := cudaDevice{b} // not b.gpu: a clocked device charges copyList once
	dev, err := d.stageDevice()
	if err != nil {
		return err
	}
	const per = stageMax / copyBytes
	for len(cs) > 0 {
		n := min(len(cs), per)
		host, err := d.stage(int64(n) * copyBytes)
		if err != nil {
			return err
		}
		for i, c := range cs[:n] {
			binary.LittleEndian.PutUint64(host[copyBytes*i:], uint64(c.dst))
			binary.LittleEndian.PutUint64(host[copyBytes*i+8:], uint64(c.src))
			binary.LittleEndian.PutUint64(host[copyBytes*i+16:], uint64(c.n))
		}
		if err := d.write(dev, host); err != nil {
			return err
		}
		grid := [3]int{int(min(int64(n), int64(b.env.SMs*max(1, b.maxThreadsPerSM/copiesBlock)))), 1, 1}
		if err := b.ctx.Launch(b.util.copies, grid, [3]int{copiesBlock, 1, 1}, 0, b.stream, dev, uint64(n)); err != nil {
			return fmt.Errorf("launching the copy kernel: %w", err)
		}
		cs = cs[n:]
	}
	return nil
}

// copiesBlock is ktune_copies' block size.
const copiesBlock = 256

// disjointCopies reports a copy of cs whose destination overlaps another
// copy's source or destination, or whose length is negative.
func disjointCopies(cs []devCopy) error {
	type span struct {
		lo, hi cuda.DevPtr
		dst    bool
		i      int
	}
	spans := make([]span, 0, 2*len(cs))
	for i, c := range cs {
		if c.n < 0 {
			return fmt.Errorf("copy %d: %d bytes", i, c.n)
		}
		if c.n == 0 {
			continue
		}
		spans = append(spans, span{c.dst, c.dst + devOff(c.n), true, i}, span{c.src, c.src + devOff(c.n), false, i})
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.lo, b.lo) })
	// Sources may overlap each other; a destination may overlap nothing.
	// In order of start, an earlier span overlaps s when it ends past
	// s.lo, so the one of each kind that ends furthest is the one to ask.
	var any, dst *span
	for k := range spans {
		s := &spans[k]
		for _, e := range []*span{dst, any} {
			if e != nil && s.lo < e.hi && (s.dst || e.dst) {
				return fmt.Errorf("copy %d's %s overlaps copy %d's %s", s.i, role(s.dst), e.i, role(e.dst))
			}
		}
		if any == nil || s.hi > any.hi {
			any = s
		}
		if s.dst && (dst == nil || s.hi > dst.hi) {
			dst = s
		}
	}
	return nil
}

func role(dst bool) string {
	if dst {
		return "destination"
	}
	return "source"
}
