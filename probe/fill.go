package probe

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

	"github.com/ktune/ktune/internal/cuda"
	"github.com/ktune/ktune/internal/kvtype"
)

// The random fill of a workspace.
//
// Every byte of q, K and V holds seeded random data from the moment a
// workspace exists, before the first gate or probe. The gates then
// overwrite q and the first rows of every sequence with their oracle
// inputs; the rows above the largest gate nkv keep the fill, and the timed
// probes read them. The method forbids timing on zeros: a zero K row gives
// every query the same score and a zero V row adds nothing, so a kernel
// that skips, repeats or misplaces such rows, or leaves an output at zero,
// looks right; and zeros can run at a speed real data does not (equal
// scores keep the softmax rescale at 1, uniform lines may compress).
//
// The values are a function of (seed, element index) alone: the bytes do
// not depend on the chunk size or on how many goroutines generate them, so
// a workspace of one layout always holds the same data.
//
// Where the fill is made: on a GPU, by ktune_fill (kernels/util.cu) in
// the buffer itself, at device bandwidth (fillOnDevice); generating
// gigabytes a workspace on the host and copying them over the bus cost
// seconds of every kernel of a sweep. fillValues is the definition the
// kernel reproduces bit for bit: the host's record of the read-only
// buffers (inputs.go) draws the fill's bytes from it, so every device fill
// is read back in a few spans and compared with it. A device without the
// measurement kernels fills from the host (fillBuffer).

// fillSeed seeds the fill. It is fixed rather than taken from a point:
// a workspace outlives the point that allocated it, and one layout must
// always time on the same bytes.
const fillSeed uint64 = 0x6b74756e652d6b76 // "ktune-kv"

// fillChunkBytes is the host buffer a fill from the host generates into
// between two copies: large enough that the copies run at PCIe speed,
// small enough that a 4 GiB K buffer does not need 4 GiB of host memory.
const fillChunkBytes = 32 << 20

// A writeFunc copies b to byte offset off of one device buffer.
type writeFunc func(off int64, b []byte) error

// fillBuffer fills n bytes of one buffer from the host with random
// elements of type t (f32, f16, bf16 or fp8e4m3 codes), generating and
// writing chunk bytes at a time. n must be a multiple of the element size
// (every buffer is a multiple of 16 bytes).
func fillBuffer(write writeFunc, n int64, t *kvtype.Type, seed uint64, chunk int64) error {
	elt := int64(t.Bytes)
	if n%elt != 0 {
		return fmt.Errorf("filling %d bytes with %d-byte elements: not a whole number of elements", n, elt)
	}
	chunk -= chunk % elt
	if chunk <= 0 {
		chunk = elt
	}
	buf := make([]byte, min(chunk, n))
	for off := int64(0); off < n; off += chunk {
		b := buf[:min(chunk, n-off)]
		fillValues(b, t, seed, off/elt)
		if err := write(off, b); err != nil {
			return fmt.Errorf("writing bytes %d..%d of %d: %w", off, off+int64(len(b)), n, err)
		}
	}
	return nil
}

// fillCheckBytes is each span of a device fill that fillOnDevice reads
// back and compares with fillValues, at the buffer's start, middle and
// end: enough to catch a kernel that computes another function (every
// element differs) or mishandles the ends of the range, at a cost of
// microseconds.
const fillCheckBytes = 64 << 10

// A deviceFill enqueues elements [first, first+n) of the fill of type t
// and seed into the buffer at p, element 0 at p (ktune_fill on a GPU).
type deviceFill func(p cuda.DevPtr, first, n int64, t *kvtype.Type, seed uint64) error

// A readFunc copies the device bytes at src into b, after the stream's
// earlier work.
type readFunc func(b []byte, src cuda.DevPtr) error

// fillOnDevice fills the whole of buffer f with fill, then checks that
// the device holds what fillValues says: a device fill the host's record
// disagrees with would make every read-only check of the buffer wrong.
func fillOnDevice(f bufferFill, fill deviceFill, read readFunc) error {
	if err := fill(f.p, 0, f.n/int64(f.t.Bytes), f.t, f.seed); err != nil {
		return fmt.Errorf("filling %s on the device: %w", f.name, err)
	}
	return checkFill(f, read)
}

// checkFill compares fillCheckSpans of buffer f on the device with
// fillValues and names the first byte that differs.
func checkFill(f bufferFill, read readFunc) error {
	for _, sp := range fillCheckSpans(f.n) {
		got := make([]byte, sp[1]-sp[0])
		if err := read(got, f.p+devOff(sp[0])); err != nil {
			return fmt.Errorf("reading back the device fill of %s: %w", f.name, err)
		}
		want := make([]byte, len(got))
		fillValues(want, f.t, f.seed, sp[0]/int64(f.t.Bytes))
		for i := range got {
			if got[i] != want[i] {
				return fmt.Errorf("the device fill of %s differs from the host's (fillValues) at byte %d of %d: %#04x on the device, %#04x expected (%s elements, seed %#x)",
					f.name, sp[0]+int64(i), f.n, got[i], want[i], f.t, f.seed)
			}
		}
	}
	return nil
}

// fillCheckSpans are the byte ranges [lo, hi) of an n-byte buffer that
// checkFill reads: all of it when it is small, else fillCheckBytes at its
// start, its middle and its end. n is a multiple of 16 (every buffer is),
// and so is every bound, hence a whole number of elements of any type.
func fillCheckSpans(n int64) [][2]int64 {
	const c = fillCheckBytes
	if n <= 3*c {
		return [][2]int64{{0, n}}
	}
	mid := (n/2 - c/2) &^ 15
	return [][2]int64{{0, c}, {mid, mid + c}, {n - c, n}}
}

// fillParallelMin is the element count below which fillValues does not
// bother to start goroutines.
const fillParallelMin = 1 << 16

// fillValues writes elements first, first+1, … of the fill into dst,
// splitting the work over the available CPUs.
func fillValues(dst []byte, t *kvtype.Type, seed uint64, first int64) {
	elt := t.Bytes
	n := len(dst) / elt
	workers := runtime.GOMAXPROCS(0)
	if n < fillParallelMin || workers == 1 {
		fillSerial(dst, t, seed, first)
		return
	}
	onCores(n, func(lo, hi int) { fillSerial(dst[lo*elt:hi*elt], t, seed, first+int64(lo)) })
}

// fillSerial writes elements first, first+1, … of the fill into dst on
// the calling goroutine: one loop per type, so that the loop body is the
// element's function and a little-endian store, with no per-element
// dispatch on the type.
func fillSerial(dst []byte, t *kvtype.Type, seed uint64, first int64) {
	switch t {
	case kvtype.F16:
		fillGridLoop(dst, &f16Grid, seed, first)
	case kvtype.BF16:
		fillGridLoop(dst, &bf16Grid, seed, first)
	case kvtype.FP8E4M3:
		for i := range dst {
			dst[i] = fillE4M3(seed, first+int64(i))
		}
	default:
		for i := 0; i+4 <= len(dst); i += 4 {
			binary.LittleEndian.PutUint32(dst[i:], math.Float32bits(fillF32(seed, first+int64(i/4))))
		}
	}
}

// fillGridLoop is fillSerial for a type drawn from a 2048-entry grid.
func fillGridLoop(dst []byte, grid *[2048]uint16, seed uint64, first int64) {
	for i := 0; i+2 <= len(dst); i += 2 {
		binary.LittleEndian.PutUint16(dst[i:], fillGrid(grid, seed, first+int64(i/2)))
	}
}

// fillHash is splitmix64's finalizer over the element index: a counter
// based generator, so any element can be produced without its
// predecessors (which is what lets chunks, goroutines and the threads of
// ktune_fill split the work). kernels/util.cu's kt_fill_bits repeats it
// and the element mappings below in CUDA: a change here is a change there.
func fillHash(seed uint64, i int64) uint64 {
	z := seed + uint64(i)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// f16Grid holds the binary16 bits of k/1024 for k in [−1024, 1024): every
// one of them is an exact half (a multiple of 2^-10 below 1 in magnitude),
// so no rounding is involved and a table lookup is the conversion. An f16
// fill is uniform over it: the same range as the oracle's inputs.
var f16Grid = func() (t [2048]uint16) {
	for k := range t {
		t[k] = kvtype.F32ToF16(float32(k-1024) / 1024)
	}
	return t
}()

// bf16Grid holds the bfloat16 bits of k/1024 for k in [−1024, 1024),
// rounded (bf16 keeps 8 significant bits): finite, in [−1, 1].
var bf16Grid = func() (t [2048]uint16) {
	for k := range t {
		t[k] = kvtype.F32ToBF16(float32(k-1024) / 1024)
	}
	return t
}()

// fillGrid is element i of an f16 or bf16 fill (grid f16Grid or
// bf16Grid): the top 11 bits of the hash pick the entry.
func fillGrid(grid *[2048]uint16, seed uint64, i int64) uint16 { return grid[fillHash(seed, i)>>53] }

// fillGridBytes is f16Grid then bf16Grid, little-endian: the tables
// ktune_fill looks its f16 and bf16 elements up in (kernels/util.cu), so
// that the grids' values, bf16's rounding included, have their one home
// here.
func fillGridBytes() []byte {
	out := make([]byte, 0, 2*(len(f16Grid)+len(bf16Grid)))
	for _, g := range []*[2048]uint16{&f16Grid, &bf16Grid} {
		for _, v := range g {
			out = binary.LittleEndian.AppendUint16(out, v)
		}
	}
	return out
}

// fillE4M3 is element i of an fp8e4m3 fill: a uniformly drawn finite
// code. Random bytes would hold the NaN codes S.1111.111, which the fill
// turns into ±448; with scaleFill's scales the values lie in [−1, 1].
func fillE4M3(seed uint64, i int64) uint8 {
	b := uint8(fillHash(seed, i) >> 56)
	if b&0x7f == 0x7f {
		b ^= 1
	}
	return b
}

// fillScale is the kv_scale a workspace starts with for every (K or V,
// KV head): what amax/448 calibrates for values of magnitude 1, so that
// the fp8 fill decodes to [−1, 1] like the other types' fills.
const fillScale = float32(1.0 / kvtype.E4M3Max)

// scaleFill returns n bytes of the kv_scale a workspace starts with, f32
// little-endian: fillScale for a scaled KV type, 1.0 for an unscaled one,
// whose values are their own (an engine that passes scale pointers for
// every type multiplies by them).
func scaleFill(n int64, scaled bool) []byte {
	v := float32(1)
	if scaled {
		v = fillScale
	}
	out := make([]byte, 0, n)
	for range n / 4 {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(v))
	}
	return out
}

// fillF32 is element i of an f32 fill: uniform over the multiples of 2^-23
// in [−1, 1).
func fillF32(seed uint64, i int64) float32 {
	return float32(int64(fillHash(seed, i)>>40)-1<<23) / (1 << 23)
}

// onCores splits [0, n) into one range per CPU and runs f on each at
// once, returning when all are done.
func onCores(n int, f func(lo, hi int)) {
	if n <= 0 {
		return
	}
	workers := runtime.GOMAXPROCS(0)
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(lo, hi)
		}()
	}
	wg.Wait()
}
