package oracle

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"

	"github.com/ktune/ktune/internal/results"
)

// Inputs are one seeded set of gate inputs: the query in float32 and K, V
// both as the raw little-endian bytes the device gets and as the exact
// float64 values those bytes hold (already rounded to the KV dtype), so
// that the oracle and the kernel see identical numbers.
type Inputs struct {
	Shape results.Shape
	Seed  uint64
	// Rows is the number of rows generated per sequence (≤ Shape.Capacity);
	// K and V hold [batch][Rows][kv_heads][head_dim]. The device buffers
	// have Capacity rows per sequence; see Upload offsets in package probe.
	Rows int
	Q    []float32 // [batch][heads][head_dim]
	K, V []float64 // rounded values
	// KBytes and VBytes are K and V in the device representation (f16 bits
	// or f32 bits), in the same layout as K and V.
	KBytes, VBytes []byte
}

// EltBytes returns the size of one K/V element of the dtype.
func EltBytes(dtype string) int {
	if dtype == "f16" {
		return 2
	}
	return 4
}

// Generate makes deterministic inputs for shape s: q uniform in [−1, 1],
// K and V uniform in [−1, 1] rounded to s.KVDtype, rows rows per sequence.
// The same (shape, rows, seed) always gives the same bytes, on any machine.
func Generate(s results.Shape, rows int, seed uint64) (*Inputs, error) {
	if err := checkShape(s); err != nil {
		return nil, err
	}
	// PCG with a fixed stream constant: math/rand/v2 documents the
	// algorithm, so the inputs do not change with the Go release.
	rng := rand.New(rand.NewPCG(seed, 0x6b74756e65)) // "ktune"
	uni := func() float32 { return float32(rng.Float64()*2 - 1) }

	in := &Inputs{Shape: s, Seed: seed, Rows: rows}
	in.Q = make([]float32, s.Batch*s.Heads*s.HeadDim)
	for i := range in.Q {
		in.Q[i] = uni()
	}
	n := s.Batch * rows * s.KVHeads * s.HeadDim
	elt := EltBytes(s.KVDtype)
	// The stream is drawn in order, one thread; rounding to the dtype and
	// widening back, most of the time at batch 16 (28 million elements
	// at 1,700 rows), runs on every core. The bytes do not depend on the
	// number of cores.
	gen := func() ([]float64, []byte) {
		draws := make([]float64, n)
		for i := range draws {
			draws[i] = float64(uni())
		}
		vals := make([]float64, n)
		raw := make([]byte, n*elt)
		encodeAll(raw, vals, s.KVDtype, draws)
		return vals, raw
	}
	in.K, in.KBytes = gen()
	in.V, in.VBytes = gen()
	return in, nil
}

// QBytes returns Q as the little-endian float32 bytes the device gets.
func (in *Inputs) QBytes() []byte {
	out := make([]byte, 4*len(in.Q))
	for i, f := range in.Q {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(f))
	}
	return out
}

// RowBytes returns the bytes of one row (all KV heads) of K or V.
func (in *Inputs) RowBytes() int {
	return in.Shape.KVHeads * in.Shape.HeadDim * EltBytes(in.Shape.KVDtype)
}

func (in *Inputs) row(x []float64, b, r, kh int) []float64 {
	s := in.Shape
	off := ((b*in.Rows+r)*s.KVHeads + kh) * s.HeadDim
	return x[off : off+s.HeadDim]
}

// KRow returns the key of sequence b, row r, KV head kh.
func (in *Inputs) KRow(b, r, kh int) []float64 { return in.row(in.K, b, r, kh) }

// VRow returns the value of sequence b, row r, KV head kh.
func (in *Inputs) VRow(b, r, kh int) []float64 { return in.row(in.V, b, r, kh) }

// Prefix returns a copy of in with the first rows rows of each sequence
// (rows ≤ in.Rows): the same values those rows hold in in. Gates draw one
// uniform base per compiled kernel and derive every input set and length
// from it, because drawing and rounding the base is the expensive part
// (a batch-16 base of 1,700 rows is 28 million K/V elements).
func (in *Inputs) Prefix(rows int) *Inputs {
	rows = min(max(rows, 0), in.Rows)
	s := in.Shape
	out := &Inputs{Shape: s, Seed: in.Seed, Rows: rows, Q: append([]float32(nil), in.Q...)}
	per := s.KVHeads * s.HeadDim // elements of one row
	elt := EltBytes(s.KVDtype)
	n := s.Batch * rows * per
	out.K, out.V = make([]float64, n), make([]float64, n)
	out.KBytes, out.VBytes = make([]byte, n*elt), make([]byte, n*elt)
	parallel(s.Batch, func(lo, hi int) {
		for b := lo; b < hi; b++ {
			src, dst := b*in.Rows*per, b*rows*per
			m := rows * per
			copy(out.K[dst:dst+m], in.K[src:src+m])
			copy(out.V[dst:dst+m], in.V[src:src+m])
			copy(out.KBytes[dst*elt:(dst+m)*elt], in.KBytes[src*elt:(src+m)*elt])
			copy(out.VBytes[dst*elt:(dst+m)*elt], in.VBytes[src*elt:(src+m)*elt])
		}
	})
	return out
}

// encodeAll stores each of values[i] as element i of raw in the dtype and
// the value its bits hold in vals, on every core; math.NaN in values
// leaves element i as it is (a set that rewrites some elements only).
func encodeAll(raw []byte, vals []float64, dtype string, values []float64) {
	parallel(len(values), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			if f := values[i]; !math.IsNaN(f) {
				vals[i] = encode(raw, dtype, i, f)
			}
		}
	})
}

// parallel runs f over [0, n) in contiguous chunks, one per core.
func parallel(n int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/4096))
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	chunk := (n + workers - 1) / workers
	for lo := 0; lo < n; lo += chunk {
		wg.Add(1)
		go func(lo, hi int) {
			defer wg.Done()
			f(lo, hi)
		}(lo, min(n, lo+chunk))
	}
	wg.Wait()
}
