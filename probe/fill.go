package probe

import (
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"sync"

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

// fillSeed seeds the fill. It is fixed rather than taken from a point:
// a workspace outlives the point that allocated it, and one layout must
// always time on the same bytes.
const fillSeed uint64 = 0x6b74756e652d6b76 // "ktune-kv"

// fillChunkBytes is the host buffer the fill generates into between two
// copies: large enough that the copies run at PCIe speed, small enough
// that a 4 GiB K buffer does not need 4 GiB of host memory.
const fillChunkBytes = 32 << 20

// A writeFunc copies b to byte offset off of one device buffer.
type writeFunc func(off int64, b []byte) error

// fillBuffer fills n bytes of one buffer with random elements of type t
// (f32, f16, bf16 or fp8e4m3 codes), generating and writing chunk bytes
// at a time. n must be a multiple of the element size (every buffer is a
// multiple of 16 bytes).
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
// predecessors (which is what lets chunks and goroutines split the work).
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

// scaleFill returns n bytes of fillScale, f32 little-endian.
func scaleFill(n int64) []byte {
	out := make([]byte, 0, n)
	for range n / 4 {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(fillScale))
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
