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

// fillBuffer fills n bytes of one buffer with random elements of elt bytes
// (2: f16, 4: f32), generating and writing chunk bytes at a time. n must
// be a multiple of elt (every buffer is a multiple of 16 bytes).
func fillBuffer(write writeFunc, n int64, elt int, seed uint64, chunk int64) error {
	if elt != 2 && elt != 4 {
		return fmt.Errorf("filling a buffer of %d-byte elements: only 2 (f16) and 4 (f32) exist", elt)
	}
	if n%int64(elt) != 0 {
		return fmt.Errorf("filling %d bytes with %d-byte elements: not a whole number of elements", n, elt)
	}
	chunk -= chunk % int64(elt)
	if chunk <= 0 {
		chunk = int64(elt)
	}
	buf := make([]byte, min(chunk, n))
	for off := int64(0); off < n; off += chunk {
		b := buf[:min(chunk, n-off)]
		fillValues(b, elt, seed, off/int64(elt))
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
func fillValues(dst []byte, elt int, seed uint64, first int64) {
	n := len(dst) / elt
	workers := runtime.GOMAXPROCS(0)
	if n < fillParallelMin || workers == 1 {
		fillSerial(dst, elt, seed, first)
		return
	}
	per := (n + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < n; lo += per {
		hi := min(n, lo+per)
		wg.Add(1)
		go func() {
			defer wg.Done()
			fillSerial(dst[lo*elt:hi*elt], elt, seed, first+int64(lo))
		}()
	}
	wg.Wait()
}

func fillSerial(dst []byte, elt int, seed uint64, first int64) {
	if elt == 2 {
		for i := 0; i < len(dst)/2; i++ {
			binary.LittleEndian.PutUint16(dst[2*i:], fillF16(seed, first+int64(i)))
		}
		return
	}
	for i := 0; i < len(dst)/4; i++ {
		binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(fillF32(seed, first+int64(i))))
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
// so no rounding is involved and a table lookup is the conversion.
var f16Grid = func() (t [2048]uint16) {
	for k := range t {
		t[k] = kvtype.F32ToF16(float32(k-1024) / 1024)
	}
	return t
}()

// fillF16 is element i of an f16 fill: uniform over the 2048 multiples of
// 2^-10 in [−1, 1), the same range as the oracle's inputs.
func fillF16(seed uint64, i int64) uint16 { return f16Grid[fillHash(seed, i)>>53] }

// fillF32 is element i of an f32 fill: uniform over the multiples of 2^-23
// in [−1, 1).
func fillF32(seed uint64, i int64) float32 {
	return float32(int64(fillHash(seed, i)>>40)-1<<23) / (1 << 23)
}
