package oracle

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// An InputSet names one family of gate inputs. Uniform data alone is too
// gentle a test: q and K uniform in [−1, 1] give every row a score within
// about ±1 of the others, so the softmax is nearly flat, any one row moves
// the output by about 1/nkv, and a kernel that drops a row, flushes f16
// subnormals or overflows exp on large scores stays inside the tolerance.
// Each other set is built to make one class of defect move the output by
// far more than the bound.
type InputSet string

// The input sets, in the order the gates run them.
const (
	// SetUniform is Generate's data: q, K and V uniform in [−1, 1].
	SetUniform InputSet = "uniform"
	// SetPeaked puts one "needle" key at the first and at the last row of
	// every split's chunk and at the last row of the context; needles score
	// peakedScore above the rest, so the output is the mean of the needles'
	// V rows and skipping, repeating or misplacing any chunk-edge row moves
	// it by about 1/needles — over a hundred times the bound.
	SetPeaked InputSet = "peaked"
	// SetLarge has spike keys scoring up to largeScore (exp of which
	// overflows float32: a kernel that does not subtract the running max
	// yields Inf or NaN) and V scaled by largeV, the range an f16
	// accumulator or sum cannot hold.
	SetLarge InputSet = "large"
	// SetSubnormal has V made of f16 subnormals only (|V| < 2^-14), and
	// half of K too: a kernel that decodes them as zero returns zero, an
	// error of the output's whole size (the NMSE is then 1). bf16 gets the
	// same values, normals to it, which a kernel that converts bf16
	// through f16 loses; fp8e4m3 gets its own subnormal codes times the
	// scale (subnormalE4M3).
	SetSubnormal InputSet = "subnormal"
	// SetOutliers gives K a few channels outlierScale times larger than
	// the rest, with a sign fixed per channel, as the key activations of
	// real LLMs have: scores then carry a large shared offset and a peakier
	// softmax than uniform data.
	SetOutliers InputSet = "outliers"
)

// Sets lists every input set, uniform first.
var Sets = []InputSet{SetUniform, SetPeaked, SetLarge, SetSubnormal, SetOutliers}

const (
	// peakedScore is a needle's score (natural-log units) for the query
	// head its key is built for: e^20 ≈ 5e8, so even 10^5 background rows
	// (score within ±1 or so) weigh under 10^-3 of one needle.
	peakedScore = 20
	// largeScore is the top spike's score: e^96 ≈ 5e41 overflows float32
	// (max 3.4e38). Lower spikes score 4 and 8 less, so the top spikes,
	// whose keys are identical, carry the output and a kernel's rounding of
	// the lower ones' weights (e^-4, e^-8) stays far inside the bound.
	largeScore = 96
	// largeV scales V in the large set.
	largeV = 1024
	// largeEvery places a spike at every row r with r % largeEvery == 17.
	largeEvery = 61
	// subnormalMax is the largest f16 subnormal, (1023/1024)·2^-14.
	subnormalMax = 1023.0 / (1 << 24)
	// outlierEvery picks the outlier channels (i % outlierEvery == 5) and
	// outlierScale their magnitude.
	outlierEvery = 32
	outlierScale = 16
)

// PerLength reports whether the set's data depends on the context
// lengths, so that it must be generated again at every gate length: the
// peaked set's needles sit at the chunk edges of each length.
func (s InputSet) PerLength() bool { return s == SetPeaked || s == SetWindow || s == SetCausal }

// PerSplits reports whether the set's data depends on the split count:
// the peaked set's needles sit at the chunk edges.
func (s InputSet) PerSplits() bool { return s == SetPeaked }

// VScale is the largest |V| of the set for shape sh, relative to the
// uniform set's 1. The f16 and f32 bounds (1, largeV, the largest f16
// subnormal) are values those types hold exactly; a value rounded to
// bf16 or quantized to fp8e4m3 may exceed its intended bound by the
// type's unit roundoff, which the bound then allows for. The fp8e4m3
// subnormal set's V is the largest subnormal code, 7·2^-9, times the
// largest of its V scales.
func (s InputSet) VScale(sh abi.Shape) float64 {
	t := sh.KVType()
	v := 1.0
	switch {
	case s == SetLarge:
		v = largeV
	case s == SetSubnormal && t == kvtype.FP8E4M3:
		return 7 * 0x1p-9 * slices.Max(fp8SubnormalScales(sh))
	case s == SetSubnormal:
		v = subnormalMax
	}
	if t == kvtype.F16 || t == kvtype.F32 {
		return v
	}
	return v * (1 + t.UnitRoundoff())
}

// Bounds returns the bounds the set is judged with. A spec's max_abs is
// an absolute error for outputs of |V| ≤ 1; every rounding error of the
// attention (the weights' and the accumulation's) is a relative error of
// V, so the absolute bound scales with the set's V. max_rel and the NMSE
// are already relative and stay as they are.
func (s InputSet) Bounds(b Bounds, sh abi.Shape) Bounds {
	b.MaxAbs *= s.VScale(sh)
	return b
}

// GenerateSet makes the inputs of set for shape s, rows rows per sequence.
// lengths (one per sequence) and splits place the peaked set's needles;
// the other sets ignore them. The uniform set is exactly Generate's.
func GenerateSet(set InputSet, s abi.Shape, rows int, lengths []int, splits int, seed uint64) (*Inputs, error) {
	base, err := Generate(s, rows, seed)
	if err != nil {
		return nil, err
	}
	return FromBase(set, base, rows, lengths, splits)
}

// FromBase makes set's inputs of rows rows per sequence (≤ base.Rows) from
// a uniform base (Generate's), which it does not change: the rows are a
// copy of the base's first rows of each sequence (the base itself for the
// uniform set at its own size), and the set's rewrites follow the same
// seeded stream as GenerateSet's.
func FromBase(set InputSet, base *Inputs, rows int, lengths []int, splits int) (*Inputs, error) {
	return fromBase(set, base, rows, lengths, splits, false)
}

// FromBaseShared makes the inputs FromBase makes, the same values and
// bytes row for row, sharing with base the arrays the set leaves as the
// base has them (Inputs.Strides): K and V for the uniform set, V for the
// peaked and outlier sets of a type without scales, and K for the peaked
// and large sets but for the rows they aim (Inputs.KPatches); the large
// set's V is the base's scaled in one pass, and the subnormal set's V is
// drawn without a copy of the base's first (InputSet.shares). A copy is
// most of what deriving a set costs at batch 16 (hundreds of MB of fresh
// memory per set and length). base must not change while the set lives.
func FromBaseShared(set InputSet, base *Inputs, rows int, lengths []int, splits int) (*Inputs, error) {
	return fromBase(set, base, rows, lengths, splits, true)
}

// RowsNest reports whether the set's inputs at fewer rows per sequence
// are its inputs at more, row for row, so that the shorter may be a view
// of the longer (Inputs.View): every set of a type without scales whose
// data does not depend on the lengths. Their rewrites are per element and
// per row, and their draws per block of rows (setGen.blocks), so a row's
// values do not depend on how many rows follow it. A scaled type's
// scales come from every value, so its sets do not nest.
func (s InputSet) RowsNest(t *kvtype.Type) bool {
	return !t.Scaled && (s == SetUniform || s == SetLarge || s == SetSubnormal || s == SetOutliers)
}

// sharesV reports whether set leaves V as the base has it (and K too,
// for the uniform set), so that FromBaseShared may share it.
func (s InputSet) sharesV(t *kvtype.Type) bool {
	return !t.Scaled && (s == SetUniform || s == SetPeaked || s == SetOutliers)
}

// shares reports whether FromBaseShared derives set from views of its
// base's arrays, copying only what the set rewrites: K patched at the
// rows it aims (peaked, large) or copied (outliers, subnormal), V shared
// (sharesV), mapped (large) or drawn anew (subnormal). A scaled type's
// sets are quantized whole, and the option sets copy both.
func (s InputSet) shares(t *kvtype.Type) bool {
	return s.sharesV(t) || !t.Scaled && (s == SetLarge || s == SetSubnormal)
}

func fromBase(set InputSet, base *Inputs, rows int, lengths []int, splits int, share bool) (*Inputs, error) {
	s, seed := base.Shape, base.Seed
	t := s.KVType()
	share = share && set.shares(t) && base.kPatch == nil
	if set == SetUniform {
		switch {
		case share:
			return base.view(rows), nil
		case rows == base.Rows:
			return base, nil
		}
		return base.Prefix(rows), nil
	}
	var in *Inputs
	if share {
		in = base.view(rows)
		switch set {
		case SetPeaked, SetLarge:
			// A few rows per sequence: those rows patched, the rest
			// shared (Inputs.KPatches).
			in.kPatch = map[int]*rowPatch{}
		default:
			in.ownK()
		}
		switch set {
		case SetLarge:
			in.ownV(func(x float64) float64 { return x * largeV })
		case SetSubnormal:
			in.ownV(nil)
		}
	} else {
		in = base.Prefix(rows)
	}
	rows = in.Rows
	if set.PerLength() && len(lengths) != s.Batch || set.PerSplits() && splits < 1 {
		return nil, fmt.Errorf("oracle: the %s set needs one length per sequence (%d for batch %d) and SPLITS ≥ 1 (%d)", set, len(lengths), s.Batch, splits)
	}
	g := &setGen{in: in, t: t, rng: rand.New(rand.NewPCG(seed, setStream(set)))}
	// A scaled type's set is quantized once, at the end, with scales
	// chosen from its values (nil) unless the set chooses them itself.
	var kScales, vScales []float64
	switch set {
	case SetPeaked:
		g.groupQueries()
		for b, n := range lengths {
			for _, r := range needleRows(min(n, rows), splits) {
				for kh := range s.KVHeads {
					g.aim(b, r, kh, peakedScore)
				}
			}
		}
	case SetLarge:
		g.groupQueries()
		if !share {
			// In place, on every core: V is the set's own copy (shared,
			// ownV scaled it as it copied).
			parallel(len(in.V), func(lo, hi int) {
				for i := lo; i < hi; i++ {
					in.V[i] = encode(in.VBytes, t, i, in.V[i]*largeV)
				}
			})
		}
		for b := range s.Batch {
			for r := 17; r < rows; r += largeEvery {
				level := (r / largeEvery) % 3
				for kh := range s.KVHeads {
					g.aim(b, r, kh, largeScore-4*float64(level))
				}
			}
		}
	case SetSubnormal:
		if t == kvtype.FP8E4M3 {
			kScales, vScales = g.subnormalE4M3()
			break
		}
		// Every V element, and K's where a coin says so, drawn and
		// stored block by block on every core (blocks).
		g.blocks(set, 'V', in.V, func(rng *rand.Rand, lo, hi int) {
			for i := lo; i < hi; i++ {
				in.V[i] = encode(in.VBytes, t, i, subnormal(rng))
			}
		})
		g.blocks(set, 'K', in.K, func(rng *rand.Rand, lo, hi int) {
			for i := lo; i < hi; i++ {
				if rng.IntN(2) == 0 {
					in.K[i] = encode(in.KBytes, t, i, subnormal(rng))
				}
			}
		})
	case SetOutliers:
		sign := make([]float64, s.HeadDim)
		for i := range sign {
			sign[i] = float64(1 - 2*g.rng.IntN(2))
		}
		g.blocks(set, 'K', in.K, func(rng *rand.Rand, lo, hi int) {
			for i := lo; i < hi; i++ {
				if c := i % s.HeadDim; c%outlierEvery == 5 {
					g.setK(i, sign[c]*outlierScale*(0.5+0.5*rng.Float64()))
				}
			}
		})
	default:
		if err := g.optionSet(set, lengths); err != nil {
			return nil, err
		}
	}
	if t.Scaled {
		in.quantize(kScales, vScales)
	}
	return in, nil
}

// needleRows lists the peaked set's needle rows for one sequence of n
// rows: the first and last row of every live split's chunk
// (kt_split_range's chunk = ceil(n/splits)) and the last row of the
// context, in ascending order without repeats.
func needleRows(n, splits int) []int {
	if n < 1 {
		return nil
	}
	chunk := (n + splits - 1) / splits
	var out []int
	for sp := 0; sp < splits; sp++ {
		lo := sp * chunk
		if lo >= n {
			break
		}
		hi := min(n, lo+chunk)
		out = append(out, lo)
		if hi-1 != lo {
			out = append(out, hi-1)
		}
	}
	return out // the last chunk's last row is n−1
}

// setStream separates the random streams of the sets from Generate's.
func setStream(set InputSet) uint64 {
	h := uint64(0xcbf29ce484222325)
	for _, c := range []byte(set) {
		h = (h ^ uint64(c)) * 0x100000001b3
	}
	return h
}

// A setGen rewrites Generate's inputs into one set's.
type setGen struct {
	in  *Inputs
	t   *kvtype.Type
	rng *rand.Rand
	// dir holds one unit-free direction per (sequence, KV head): the query
	// heads of the group lean towards it and aimed keys point along it.
	dir [][]float64
}

// groupQueries makes every query head of a KV group lean towards one
// shared direction u (q = 0.8u + 0.2·noise), so that a key along u scores
// high for every head of the group, not just one of them.
func (g *setGen) groupQueries() {
	s := g.in.Shape
	d, group := s.HeadDim, s.Heads/s.KVHeads
	g.dir = make([][]float64, s.Batch*s.KVHeads)
	for i := range g.dir {
		u := make([]float64, d)
		for j := range u {
			u[j] = g.rng.Float64()*2 - 1
		}
		g.dir[i] = u
	}
	for b := range s.Batch {
		for t := range s.Attention.Queries() {
			for h := range s.Heads {
				u := g.dir[b*s.KVHeads+h/group]
				q := g.in.QRow(b, t, h)
				for j := range q {
					q[j] = float32(0.8*u[j] + 0.2*(g.rng.Float64()*2-1))
				}
			}
		}
	}
}

// aim makes the key of (b, r, kh) c·u, with c such that the shared part
// of the group's queries, 0.8u, scores score against it.
func (g *setGen) aim(b, r, kh int, score float64) {
	s := g.in.Shape
	u := g.dir[b*s.KVHeads+kh]
	uu := 0.0
	for _, x := range u {
		uu += x * x
	}
	c := score * math.Sqrt(float64(s.HeadDim)) / (0.8 * max(uu, 1e-3))
	c = min(c, 1000) // a tiny head_dim: stay far inside the f16 range
	if g.in.kPatch != nil {
		p := g.in.patchRow(b, r)
		for j, x := range u {
			i := kh*s.HeadDim + j
			p.vals[i] = encode(p.raw, g.t, i, c*x)
		}
		return
	}
	off := ((b*g.in.Rows+r)*s.KVHeads + kh) * s.HeadDim
	for j, x := range u {
		g.setK(off+j, c*x)
	}
}

// subnormal draws an f16 subnormal of random sign: m·2^-24, m in 1..1023.
func subnormal(rng *rand.Rand) float64 {
	m := float64(1 + rng.IntN(1023))
	if rng.IntN(2) == 0 {
		m = -m
	}
	return m / (1 << 24)
}

// blocks runs draw over the set's own array x of K or V (tensor 'K' or
// 'V', Rows rows per sequence) a block of drawBlock rows of one sequence
// at a time, on every core, each block with a random stream of its own: a
// function of (seed, set, tensor, sequence, block) alone, as Generate's
// blocks are (drawRows). A row's draws then depend neither on the number
// of rows after it nor on the cores, which is what lets a set at fewer
// rows be a view of the set at more (RowsNest), and lets a batch-16 set's
// tens of millions of draws run on every core.
func (g *setGen) blocks(set InputSet, tensor byte, x []float64, draw func(rng *rand.Rand, lo, hi int)) {
	s, rows := g.in.Shape, g.in.Rows
	if rows == 0 || len(x) == 0 {
		return
	}
	eachBlock(s.Batch, rows, len(x)/(s.Batch*rows), g.in.Seed,
		func(b, blk int) uint64 { return set.blockStream(tensor, b, blk) }, draw)
}

// blockStream is the PCG stream of one block of the set's draws (blocks):
// FNV-1a over the set's name, the tensor, the sequence and the block, so
// that no two blocks, sets or tensors share a stream, nor any of them
// Generate's (blockStream, whose constant this does not take).
func (s InputSet) blockStream(tensor byte, b, blk int) uint64 {
	h := setStream(s)
	for _, x := range []uint64{uint64(tensor), uint64(b), uint64(blk)} {
		for i := range 8 {
			h = (h ^ (x >> (8 * i) & 0xff)) * 0x100000001b3
		}
	}
	return h
}

// subnormalE4M3 is the subnormal set of fp8e4m3: every V element and
// half of K are e4m3 subnormal codes (exponent field 0, mantissa 1..7,
// random sign) times their scale, so that a decoder that flushes the
// subnormals returns zero. The scales are chosen first, K's from the
// values it keeps and V's as for values of magnitude 1 (subnormalV), and
// the values are built as code·scale, which quantize then stores exactly.
func (g *setGen) subnormalE4M3() (kScales, vScales []float64) {
	in, s := g.in, g.in.Shape
	kScales = chooseScales(s, in.K, s.HeadDim, 1)
	vScales = fp8SubnormalScales(s)
	if s.KVScale == kvtype.ScaleShared {
		kScales = vScales // one scale: V's codes must stay codes
	}
	code := func(rng *rand.Rand) float64 {
		m := float64(1 + rng.IntN(7))
		if rng.IntN(2) == 0 {
			m = -m
		}
		return m * 0x1p-9
	}
	dv := s.Attention.VDim(s.HeadDim)
	g.blocks(SetSubnormal, 'V', in.V, func(rng *rand.Rand, lo, hi int) {
		for i := lo; i < hi; i++ {
			in.V[i] = code(rng) * vScales[(i/dv)%s.KVHeads]
		}
	})
	g.blocks(SetSubnormal, 'K', in.K, func(rng *rand.Rand, lo, hi int) {
		for i := lo; i < hi; i++ {
			if rng.IntN(2) == 0 {
				in.K[i] = code(rng) * kScales[(i/s.HeadDim)%s.KVHeads]
			}
		}
	})
	return kScales, vScales
}

// fp8SubnormalScales are the V scales of the fp8e4m3 subnormal set: those
// chooseScales gives V values of largest magnitude 1.
func fp8SubnormalScales(s abi.Shape) []float64 {
	dv := s.Attention.VDim(s.HeadDim)
	return chooseScales(s, slices.Repeat([]float64{1}, s.KVHeads*dv), dv, vScaleFactor)
}

func (g *setGen) setK(i int, f float64) { g.in.K[i] = encode(g.in.KBytes, g.t, i, f) }
