package oracle

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// Inputs are one seeded set of gate inputs: the query in float32 and K, V
// both as the raw little-endian bytes the device gets and as the exact
// float64 values those bytes hold (already rounded to the KV dtype), so
// that the oracle and the kernel see identical numbers.
type Inputs struct {
	Shape abi.Shape
	Seed  uint64
	// Rows is the number of rows generated per sequence (≤ Shape.Capacity);
	// K and V hold [batch][Rows][kv_heads][head_dim]. The device buffers
	// have Capacity rows per sequence; see Upload offsets in package probe.
	Rows int
	Q    []float32 // [batch][q_len][heads][head_dim]
	// K and V are the rounded values; V rows are dv wide (Attention.VDim)
	// and V is nil when V lives in K's rows (an MLA latent cache).
	K, V []float64
	// KBytes and VBytes are K and V in the device representation (the
	// bits of the KV element type), in the same layout as K and V.
	KBytes, VBytes []byte
	// KScale and VScale are the scales of a scaled KV type (kvtype), one
	// per KV head, each an exact float32: K[i] = decode(KBytes[i])·KScale
	// of its head. nil for the other types.
	KScale, VScale []float64
	// Slopes and Sinks are the ALiBi slopes and the sink logits, one per
	// query head, each an exact float32 (the kernel reads them as f32);
	// nil when the shape has no such option.
	Slopes, Sinks []float64
	// KStride and VStride are the rows per sequence that K's and V's
	// arrays hold (0: Rows): a set that leaves K or V as its base has
	// them shares the base's longer arrays (FromBaseShared), of which
	// it uses each sequence's first Rows rows. Read-only: no set or
	// upload writes a shared array.
	KStride, VStride int
	// kPatch holds the rows of K that differ from a shared K array, by
	// b·Rows + r (KPatches); nil when K is the set's own.
	kPatch map[int]*rowPatch
	// Tiled says that the device holds every sequence's rows up to the
	// capacity with row r equal to row r mod Rows (see TileRows): the
	// oracle then takes lengths up to the capacity. A gate at the
	// capacity needs its rows and drawing 131,072 rows per sequence is
	// out of reach (17 GB at batch 16), so the long rows repeat the drawn
	// ones; a kernel that mixes up rows a multiple of Rows apart is the
	// one defect this cannot see.
	Tiled bool
}

// Generate makes deterministic inputs for shape s: q uniform in [−1, 1],
// K and V uniform in [−1, 1] rounded to s.KVDtype, rows rows per sequence.
// The same (shape, rows, seed) always gives the same bytes, on any machine
// and with any number of cores, and a sequence's first rows do not depend
// on how many rows are drawn.
func Generate(s abi.Shape, rows int, seed uint64) (*Inputs, error) {
	if err := checkShape(s); err != nil {
		return nil, err
	}
	a := s.Attention
	// PCG with a fixed stream constant: math/rand/v2 documents the
	// algorithm, so the inputs do not change with the Go release.
	rng := rand.New(rand.NewPCG(seed, 0x6b74756e65)) // "ktune"
	in := &Inputs{Shape: s, Seed: seed, Rows: rows}
	in.Q = make([]float32, s.Batch*a.Queries()*s.Heads*s.HeadDim)
	for i := range in.Q {
		in.Q[i] = uniform(rng)
	}
	in.drawOptions(rng)
	t := s.KVType()
	in.K, in.KBytes = drawRows(s, rows, s.HeadDim, t, seed, 'K')
	if !a.Latent() {
		in.V, in.VBytes = drawRows(s, rows, a.VDim(s.HeadDim), t, seed, 'V')
	}
	if t.Scaled {
		in.quantize(nil, nil)
	}
	return in, nil
}

func uniform(rng *rand.Rand) float32 { return float32(rng.Float64()*2 - 1) }

// drawBlock is the number of rows of one sequence drawn from one random
// stream: blocks are drawn on every core, and a block's values depend only
// on (seed, tensor, sequence, block), not on the number of rows or cores.
const drawBlock = 64

// drawRows draws K or V (tensor 'K' or 'V'), width elements per KV head,
// uniform in [−1, 1], and stores them in type t (a scaled type only
// records the values; quantize stores them).
func drawRows(s abi.Shape, rows, width int, t *kvtype.Type, seed uint64, tensor byte) ([]float64, []byte) {
	row := s.KVHeads * width
	vals := make([]float64, s.Batch*rows*row)
	raw := make([]byte, len(vals)*t.Bytes)
	eachBlock(s.Batch, rows, row, seed, func(b, blk int) uint64 { return blockStream(tensor, b, blk) },
		func(rng *rand.Rand, first, last int) {
			for i := first; i < last; i++ {
				vals[i] = encode(raw, t, i, float64(uniform(rng)))
			}
		})
	return vals, raw
}

// eachBlock runs draw over an array of batch sequences of rows rows, row
// elements a row, a block of drawBlock rows of one sequence at a time, on
// every core, each block with the random stream of (seed, stream(b, blk))
// and its elements [first, last) of the array: a block's draws depend
// neither on the rows after it nor on the cores.
func eachBlock(batch, rows, row int, seed uint64, stream func(b, blk int) uint64, draw func(rng *rand.Rand, first, last int)) {
	blocks := (rows + drawBlock - 1) / drawBlock
	parallelN(batch*blocks, 1, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			b, blk := j/blocks, j%blocks
			rng := rand.New(rand.NewPCG(seed, stream(b, blk)))
			draw(rng, (b*rows+blk*drawBlock)*row, (b*rows+min(rows, (blk+1)*drawBlock))*row)
		}
	})
}

// blockStream is the PCG stream of one block, apart from every other
// block's, the query's and the sets' (setStream).
func blockStream(tensor byte, b, blk int) uint64 {
	return 0x6b74756e65<<24 ^ uint64(tensor)<<56 ^ uint64(b)<<32 ^ uint64(blk)
}

// ScaleBytes returns the kv_scale buffer of a scaled type: f32
// [2][kv_heads], K's scales then V's, little-endian; nil for the other
// types.
func (in *Inputs) ScaleBytes() []byte {
	if in.KScale == nil {
		return nil
	}
	out := make([]byte, 0, 4*(len(in.KScale)+len(in.VScale)))
	for _, s := range append(slices.Clone(in.KScale), in.VScale...) {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(s)))
	}
	return out
}

// HeadParamBytes returns the head_params buffer of a shape with ALiBi or
// sinks: f32 [2][heads], the slopes then the sink logits, little-endian
// (zeros for the option the shape does not have); nil for the others.
func (in *Inputs) HeadParamBytes() []byte {
	if in.Slopes == nil && in.Sinks == nil {
		return nil
	}
	h := in.Shape.Heads
	out := make([]byte, 8*h)
	for i, x := range in.Slopes {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(float32(x)))
	}
	for i, x := range in.Sinks {
		binary.LittleEndian.PutUint32(out[4*(h+i):], math.Float32bits(float32(x)))
	}
	return out
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
	return in.Shape.KVHeads * in.Shape.HeadDim * in.Shape.KVType().Bytes
}

func (in *Inputs) row(x []float64, stride, width, b, r, kh int) []float64 {
	off := ((b*stride+r)*in.Shape.KVHeads + kh) * width
	return x[off : off+width]
}

// Strides are the rows per sequence of K's and V's arrays (KStride,
// VStride): sequence b's row r of K starts at element
// ((b·k + r)·kv_heads)·head_dim, its bytes at that times the element size.
func (in *Inputs) Strides() (k, v int) {
	k, v = in.KStride, in.VStride
	if k == 0 {
		k = in.Rows
	}
	if v == 0 {
		v = in.Rows
	}
	return k, v
}

// KRow returns the key of sequence b, row r (< Rows), KV head kh.
func (in *Inputs) KRow(b, r, kh int) []float64 {
	if in.kPatch != nil {
		if p := in.kPatch[b*in.Rows+r]; p != nil {
			d := in.Shape.HeadDim
			return p.vals[kh*d : (kh+1)*d]
		}
	}
	k, _ := in.Strides()
	return in.row(in.K, k, in.Shape.HeadDim, b, r, kh)
}

// A rowPatch is one row of K, every KV head: its values and bytes.
type rowPatch struct {
	vals []float64
	raw  []byte
}

// A KPatch is row R of sequence B of K as the set holds it, in place of
// the shared array's: [kv_heads][head_dim] in the device representation.
type KPatch struct {
	B, R  int
	Bytes []byte
}

// KPatches are the rows of K that differ from the K array the set shares
// (its needles' rows for FromBaseShared's peaked set), by sequence and
// row; nil when K is the set's own. The set's K is the array's rows with
// these in their place.
func (in *Inputs) KPatches() []KPatch {
	var out []KPatch
	for key, p := range in.kPatch {
		out = append(out, KPatch{key / in.Rows, key % in.Rows, p.raw})
	}
	slices.SortFunc(out, func(a, b KPatch) int { return (a.B*in.Rows + a.R) - (b.B*in.Rows + b.R) })
	return out
}

// patchRow returns row r of sequence b as a patch, made from the shared
// array's row on first use.
func (in *Inputs) patchRow(b, r int) *rowPatch {
	key := b*in.Rows + r
	if p := in.kPatch[key]; p != nil {
		return p
	}
	k, _ := in.Strides()
	per := in.Shape.KVHeads * in.Shape.HeadDim
	elt := in.Shape.KVType().Bytes
	at := (b*k + r) * per
	p := &rowPatch{slices.Clone(in.K[at : at+per]), slices.Clone(in.KBytes[at*elt : (at+per)*elt])}
	in.kPatch[key] = p
	return p
}

// VRow returns the value of sequence b, row r (< Rows), KV head kh: dv
// wide, and the first dv channels of the key in a latent cache.
func (in *Inputs) VRow(b, r, kh int) []float64 {
	a := in.Shape.Attention
	if a.Latent() {
		return in.KRow(b, r, kh)[:a.VDim(in.Shape.HeadDim)]
	}
	_, v := in.Strides()
	return in.row(in.V, v, a.VDim(in.Shape.HeadDim), b, r, kh)
}

// QRow returns query token t of sequence b, head h.
func (in *Inputs) QRow(b, t, h int) []float32 {
	s := in.Shape
	off := ((b*s.Attention.Queries()+t)*s.Heads + h) * s.HeadDim
	return in.Q[off : off+s.HeadDim]
}

// Prefix returns a copy of in with the first rows rows of each sequence
// (rows ≤ in.Rows): the same values those rows hold in in. Gates draw one
// uniform base per compiled kernel and derive every input set and length
// from it, because drawing and rounding the base is the expensive part
// (a batch-16 base of 1,700 rows is 28 million K/V elements).
func (in *Inputs) Prefix(rows int) *Inputs {
	rows = min(max(rows, 0), in.Rows)
	s := in.Shape
	out := &Inputs{Shape: s, Seed: in.Seed, Rows: rows, Q: append([]float32(nil), in.Q...),
		KScale: slices.Clone(in.KScale), VScale: slices.Clone(in.VScale),
		Slopes: slices.Clone(in.Slopes), Sinks: slices.Clone(in.Sinks)}
	kStride, vStride := in.Strides()
	out.K, out.KBytes = in.prefixOf(in.K, in.KBytes, s.HeadDim, kStride, rows)
	out.V, out.VBytes = in.prefixOf(in.V, in.VBytes, s.Attention.VDim(s.HeadDim), vStride, rows)
	per, elt := s.KVHeads*s.HeadDim, s.KVType().Bytes
	for _, p := range in.KPatches() {
		if p.R < rows {
			at := (p.B*rows + p.R) * per
			copy(out.K[at:at+per], in.kPatch[p.B*in.Rows+p.R].vals)
			copy(out.KBytes[at*elt:], p.Bytes)
		}
	}
	return out
}

// prefixOf copies the first rows rows of each sequence of one of in's
// arrays (values x and their bytes raw, stride rows per sequence, rows
// width wide per KV head) into packed new ones.
func (in *Inputs) prefixOf(x []float64, raw []byte, width, stride, rows int) ([]float64, []byte) {
	if x == nil {
		return nil, nil
	}
	s := in.Shape
	elt := s.KVType().Bytes
	per := s.KVHeads * width // elements of one row
	vals, bytes := make([]float64, s.Batch*rows*per), make([]byte, s.Batch*rows*per*elt)
	// In runs of rows on every core: a batch-16 prefix is a few
	// hundred MB of copying (and of fresh pages), and one chunk per
	// sequence left it to one core (parallel's grain is elements).
	parallelN(s.Batch*rows, 64, func(lo, hi int) {
		for j := lo; j < hi; {
			b, r := j/rows, j%rows
			n := min(hi-j, rows-r) * per // the chunk's elements of sequence b
			src, dst := (b*stride+r)*per, (b*rows+r)*per
			copy(vals[dst:dst+n], x[src:src+n])
			copy(bytes[dst*elt:(dst+n)*elt], raw[src*elt:(src+n)*elt])
			j += n / per
		}
	})
	return vals, bytes
}

// view returns in's first rows rows of each sequence (rows ≤ in.Rows)
// with K and V shared, not copied: the same values as Prefix(rows) in
// in's longer arrays (Strides). q, the scales, slopes and sinks are the
// view's own, which a set rewrites (and an upload rounds) in place.
func (in *Inputs) view(rows int) *Inputs {
	rows = min(max(rows, 0), in.Rows)
	k, v := in.Strides()
	out := *in
	out.Rows, out.KStride, out.VStride, out.Tiled, out.kPatch = rows, k, v, false, nil
	out.Q = slices.Clone(in.Q)
	out.KScale, out.VScale = slices.Clone(in.KScale), slices.Clone(in.VScale)
	out.Slopes, out.Sinks = slices.Clone(in.Slopes), slices.Clone(in.Sinks)
	return &out
}

// View returns in's first rows rows of each sequence, K and V shared
// with in (view), and of a set with patched rows the patches of those
// rows, shared too (no set rewrites a patch once derived).
func (in *Inputs) View(rows int) *Inputs {
	out := in.view(rows)
	if in.kPatch != nil {
		out.kPatch = map[int]*rowPatch{}
		for key, p := range in.kPatch {
			if b, r := key/in.Rows, key%in.Rows; r < out.Rows {
				out.kPatch[b*out.Rows+r] = p
			}
		}
	}
	return out
}

// ownK gives a view its own packed copy of K (Prefix's), for a set that
// rewrites K.
func (in *Inputs) ownK() {
	k, _ := in.Strides()
	in.K, in.KBytes = in.prefixOf(in.K, in.KBytes, in.Shape.HeadDim, k, in.Rows)
	in.KStride = 0
}

// ownV gives a view its own packed V, each element f of the shared V's
// rows (nil f: zeros, for a set that draws all of V anew), stored in the
// type, in one pass on every core rather than a copy and a rewrite.
func (in *Inputs) ownV(f func(x float64) float64) {
	s := in.Shape
	t := s.KVType()
	_, stride := in.Strides()
	per := s.KVHeads * s.Attention.VDim(s.HeadDim)
	x := in.V
	if x == nil {
		return // a latent cache: V is K's first channels
	}
	in.V, in.VBytes = make([]float64, s.Batch*in.Rows*per), make([]byte, s.Batch*in.Rows*per*t.Bytes)
	in.VStride = 0
	if f == nil {
		return
	}
	parallelN(s.Batch*in.Rows, 64, func(lo, hi int) {
		for j := lo; j < hi; j++ {
			b, r := j/in.Rows, j%in.Rows
			src, dst := (b*stride+r)*per, j*per
			for i := range per {
				in.V[dst+i] = encode(in.VBytes, t, dst+i, f(x[src+i]))
			}
		}
	})
}

// encode stores f as element i of raw in the type and returns the value
// the stored bits hold; for a scaled type it returns f as it is (quantize
// stores it).
func encode(raw []byte, t *kvtype.Type, i int, f float64) float64 {
	if t.Scaled {
		return f
	}
	return t.Put(raw, i, f)
}

// The scales of a scaled type's inputs. Every set chooses its own from
// its intended values, amax/448 per tensor or per KV head, the way an
// engine calibrates an fp8 cache, so that every set uses the format's
// whole range. The factors then make each scale distinct: V's differ from
// K's by vScaleFactor and, in head mode, the heads' by headScaleFactors,
// none a power of two, so that a kernel that applies K's scale to V or
// one head's scale to another is off by 10% or more on every element,
// far outside any tolerance, instead of by the rounding of two nearly
// equal amax values. The factors are ≥ 1: a scale above amax/448 never
// saturates the largest value.
var headScaleFactors = []float64{1, 1.9, 1.37, 2.6, 1.17, 2.23, 1.61, 3.1}

const vScaleFactor = 1.29

// chooseScales returns the scales of x (K or V, intended values, rows of
// width elements per KV head) for the shape's kv_scale mode, factor being
// 1 for K and vScaleFactor for V.
func chooseScales(s abi.Shape, x []float64, width int, factor float64) []float64 {
	amax := make([]float64, s.KVHeads)
	for i, v := range x {
		kh := (i / width) % s.KVHeads
		amax[kh] = max(amax[kh], math.Abs(v))
	}
	head := s.KVScale == kvtype.ScaleHead
	if !head {
		all := slices.Max(amax)
		for kh := range amax {
			amax[kh] = all
		}
	}
	out := make([]float64, s.KVHeads)
	for kh, a := range amax {
		if a == 0 {
			a = kvtype.E4M3Max // all zeros: any scale holds them; use 1
		}
		f := factor
		if head {
			f *= headScaleFactors[kh%len(headScaleFactors)]
		}
		out[kh] = float64(float32(a / kvtype.E4M3Max * f))
	}
	return out
}

// quantize encodes K and V, which hold a scaled type's intended values,
// with the given scales (nil: chosen from the values by chooseScales) and
// replaces them by the values the bytes and scales hold.
func (in *Inputs) quantize(ks, vs []float64) {
	s, t := in.Shape, in.Shape.KVType()
	if ks == nil {
		ks = chooseScales(s, in.K, s.HeadDim, 1)
	}
	if vs == nil {
		vs = chooseScales(s, in.V, s.Attention.VDim(s.HeadDim), vScaleFactor)
	}
	if s.KVScale == kvtype.ScaleShared {
		// One scale for K and V: the larger, so that neither saturates.
		sc := max(ks[0], vs[0])
		ks, vs = slices.Repeat([]float64{sc}, s.KVHeads), slices.Repeat([]float64{sc}, s.KVHeads)
	}
	in.KScale, in.VScale = ks, vs
	for _, x := range []struct {
		vals   []float64
		raw    []byte
		scales []float64
		width  int
	}{{in.K, in.KBytes, ks, s.HeadDim}, {in.V, in.VBytes, vs, s.Attention.VDim(s.HeadDim)}} {
		parallel(len(x.vals), func(lo, hi int) {
			for i := lo; i < hi; i++ {
				sc := x.scales[(i/x.width)%s.KVHeads]
				x.vals[i] = t.Put(x.raw, i, x.vals[i]/sc) * sc
			}
		})
	}
}

// parallel runs f over [0, n) in contiguous chunks, one per core.
func parallel(n int, f func(lo, hi int)) { parallelN(n, 4096, f) }

// parallelN is parallel with at least grain items per chunk.
func parallelN(n, grain int, f func(lo, hi int)) {
	workers := min(runtime.GOMAXPROCS(0), max(1, n/grain))
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

// OwnBytes is the host memory of the set's arrays but K's and V's: q, the
// scales, the options' per-head values and the patched rows of a shared
// K. An option that adds an array of the set adds it here.
func (in *Inputs) OwnBytes() int64 {
	n := 8*(len(in.KScale)+len(in.VScale)+len(in.Slopes)+len(in.Sinks)) + 4*len(in.Q)
	for _, p := range in.KPatches() {
		n += len(p.Bytes) * (1 + 8/max(1, in.Shape.KVType().Bytes))
	}
	return int64(n)
}
