package oracle

import (
	"math"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// defaultBounds are the spec's default tolerance bounds (internal/spec).
var defaultBounds = Bounds{MaxAbs: 2e-3, MaxRel: 2e-2, NMSE: 1e-6}

// emu is a float32 emulation of a split-KV kernel and the combine, with
// the precision choices of the built-ins and switches for planted
// defects. It is what lets the gates' input sets be judged without a GPU:
// a correct kernel must pass every set, a defective one must fail one.
type emu struct {
	// tensor rounds like mma.cu: q·scale·log2e and the weights P to f16,
	// exp2 in base 2, f32 accumulation. Without it, like the seed kernels:
	// fmaf dot products and expf, all float32.
	tensor bool
	// Planted defects.
	noMax        bool // exp(score) without the running max
	ftz          bool // f16 subnormals of K and V read as zero
	skipNewest   int  // > 0: row nkv−1 is left out when nkv > skipNewest
	readPastEdge bool // each split also reads the first row of the next chunk
}

func f16(x float32) float32 { return float32(kvtype.F16ToF64(kvtype.F32ToF16(x))) }

func (e emu) load(x float64) float32 {
	if e.ftz && x != 0 && math.Abs(x) < 1.0/(1<<14) {
		return 0
	}
	return float32(x)
}

// run returns out ([batch][heads][head_dim]) for lengths at SPLITS splits.
func (e emu) run(in *Inputs, lengths []int, splits int) []float32 {
	s := in.Shape
	d := s.HeadDim
	group := s.Heads / s.KVHeads
	scale := float32(1 / math.Sqrt(float64(d)))
	out := make([]float32, s.Batch*s.Heads*d)
	type slot struct {
		mx, sum float32
		acc     []float32
	}
	for b, n := range lengths {
		chunk := (n + splits - 1) / splits
		for h := range s.Heads {
			kh := h / group
			q := in.Q[(b*s.Heads+h)*d : (b*s.Heads+h+1)*d]
			qs := make([]float32, d)
			for i := range qs {
				if e.tensor {
					qs[i] = f16(q[i] * scale * math.Log2E)
				} else {
					qs[i] = q[i]
				}
			}
			slots := make([]slot, splits)
			for sp := range slots {
				p := slot{mx: float32(math.Inf(-1)), acc: make([]float32, d)}
				lo, hi := sp*chunk, min(n, (sp+1)*chunk)
				if e.readPastEdge && hi < n {
					hi++
				}
				for r := lo; r < hi; r++ {
					if e.skipNewest > 0 && n > e.skipNewest && r == n-1 {
						continue
					}
					k, v := in.KRow(b, r, kh), in.VRow(b, r, kh)
					var dot float32
					for i := range d {
						dot = float32(math.FMA(float64(qs[i]), float64(e.load(k[i])), float64(dot)))
					}
					var w, corr float32
					sc := dot
					if !e.tensor {
						sc = dot * scale
					}
					nmx := max(p.mx, sc)
					exp := func(x float32) float32 {
						if e.tensor {
							return float32(math.Exp2(float64(x)))
						}
						return float32(math.Exp(float64(x)))
					}
					if e.noMax {
						w, corr, nmx = exp(sc), 1, 0
					} else {
						w, corr = exp(sc-nmx), exp(p.mx-nmx)
					}
					if e.tensor {
						w = f16(w)
					}
					p.sum = p.sum*corr + w
					for i := range d {
						p.acc[i] = float32(math.FMA(float64(w), float64(e.load(v[i])), float64(p.acc[i]*corr)))
					}
					p.mx = nmx
				}
				slots[sp] = p
			}
			gmx := float32(math.Inf(-1))
			for _, p := range slots {
				gmx = max(gmx, p.mx)
			}
			var sum float32
			acc := make([]float32, d)
			for _, p := range slots {
				w := float32(math.Exp(float64(p.mx - gmx)))
				if e.tensor { // the max is in base-2 units there
					w = float32(math.Exp2(float64(p.mx - gmx)))
				}
				if math.IsInf(float64(p.mx), -1) {
					w = 0
				}
				sum += p.sum * w
				for i := range acc {
					acc[i] += p.acc[i] * w
				}
			}
			o := out[(b*s.Heads+h)*d:]
			for i := range acc {
				if sum > 0 {
					o[i] = acc[i] / sum
				}
			}
		}
	}
	return out
}

var setShape = abi.Shape{Name: "t", Heads: 8, KVHeads: 2, HeadDim: 128, KVDtype: "f16", Batch: 2, Capacity: 4096}

// lengthsAt mirrors the gates' per-sequence lengths (probe.gateLengths):
// sequence b gets nkv − b·nkv/(2·batch).
func lengthsAt(nkv, batch int) []int {
	out := make([]int, batch)
	for b := range out {
		out[b] = max(1, nkv-b*nkv/(2*batch))
	}
	return out
}

// judge runs e over set at nkv and returns the metrics and the verdict.
func judge(t *testing.T, e emu, set InputSet, nkv, splits int) (Metrics, bool) {
	t.Helper()
	lengths := lengthsAt(nkv, setShape.Batch)
	in, err := GenerateSet(set, setShape, nkv, lengths, splits, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := Reference(in, lengths)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range ref {
		if math.IsNaN(r) || math.IsInf(r, 0) {
			t.Fatalf("%s nkv %d: reference element %d is %v", set, nkv, i, r)
		}
	}
	b := set.Bounds(defaultBounds, setShape)
	m, err := Compare(e.run(in, lengths, splits), ref, b)
	if err != nil {
		t.Fatal(err)
	}
	return m, m.Pass(b)
}

// TestSetsPassCorrectKernels is the false-alarm check: float32
// emulations of the seed kernels' and the tensor-core kernel's precision
// pass every set at the gate lengths with the default bounds, with room
// to spare (Worst, the error over the bound, at most 1/4).
func TestSetsPassCorrectKernels(t *testing.T) {
	t.Parallel()
	lengths := []int{1, 29, 31, 33, 65, 512, 1641}
	if testing.Short() {
		lengths = []int{29, 1641}
	}
	for _, e := range []emu{{}, {tensor: true}} {
		for _, set := range Sets {
			for _, nkv := range lengths {
				m, ok := judge(t, e, set, nkv, 32)
				if !ok || m.Worst > 0.25 || m.NMSE > defaultBounds.NMSE/4 {
					t.Errorf("tensor=%v %s nkv %d: %+v (pass %v): a correct kernel is too close to the bound", e.tensor, set, nkv, m, ok)
				}
			}
		}
	}
}

// TestSetsCatchDefects checks that each planted defect fails the set
// built for it, including those the uniform set lets through.
func TestSetsCatchDefects(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		e    emu
		set  InputSet
		nkv  int
	}{
		{"skips the newest row past 1024", emu{skipNewest: 1024}, SetPeaked, 1641},
		{"reads one row past its chunk", emu{readPastEdge: true}, SetPeaked, 1641},
		{"reads one row past its chunk, short", emu{readPastEdge: true}, SetPeaked, 65},
		{"flushes f16 subnormals", emu{ftz: true}, SetSubnormal, 512},
		{"no running max", emu{noMax: true}, SetLarge, 512},
	} {
		if m, ok := judge(t, c.e, c.set, c.nkv, 32); ok {
			t.Errorf("%s: passed the %s set at nkv %d: %+v", c.name, c.set, c.nkv, m)
		}
	}
	// The reason for the sets: on uniform data these defects pass the
	// element-wise bound (only the NMSE, if anything, sees them).
	for _, e := range []emu{{skipNewest: 1024}, {ftz: true}} {
		if m, _ := judge(t, e, SetUniform, 1641, 32); m.Outside != 0 {
			t.Logf("uniform already catches %+v element-wise: %+v", e, m)
		}
	}
}

func TestNeedleRows(t *testing.T) {
	for _, c := range []struct {
		n, splits int
		want      []int
	}{
		{1, 8, []int{0}},
		{5, 8, []int{0, 1, 2, 3, 4}},
		{16, 8, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}},
		{17, 8, []int{0, 2, 3, 5, 6, 8, 9, 11, 12, 14, 15, 16}},
		{100, 4, []int{0, 24, 25, 49, 50, 74, 75, 99}},
	} {
		if got := needleRows(c.n, c.splits); !slices.Equal(got, c.want) {
			t.Errorf("needleRows(%d, %d) = %v, want %v", c.n, c.splits, got, c.want)
		}
	}
}

func TestGenerateSet(t *testing.T) {
	t.Parallel()
	s := setShape
	lengths := lengthsAt(100, s.Batch)
	uni, _ := Generate(s, 100, 3)
	for _, set := range Sets {
		in, err := GenerateSet(set, s, 100, lengths, 8, 3)
		if err != nil {
			t.Fatal(err)
		}
		again, _ := GenerateSet(set, s, 100, lengths, 8, 3)
		if !slices.Equal(in.KBytes, again.KBytes) || !slices.Equal(in.VBytes, again.VBytes) || !slices.Equal(in.Q, again.Q) {
			t.Errorf("%s: not deterministic", set)
		}
		// The values must be what the bytes hold. One scratch element,
		// not a K-sized buffer per value (most of the package's CPU).
		scratch := make([]byte, 8)
		for i := range in.K {
			if got := encode(scratch, s.KVType(), 0, in.K[i]); got != in.K[i] {
				t.Fatalf("%s: K[%d] = %v is not an f16 value", set, i, in.K[i])
			}
		}
		vmax := 0.0
		for _, v := range in.V {
			vmax = max(vmax, math.Abs(v))
		}
		if vmax > set.VScale(s) || vmax < set.VScale(s)/2 {
			t.Errorf("%s: max |V| %g, VScale %g", set, vmax, set.VScale(s))
		}
		if set == SetUniform && (!slices.Equal(in.KBytes, uni.KBytes) || !slices.Equal(in.Q, uni.Q)) {
			t.Errorf("uniform differs from Generate")
		}
		if set != SetUniform && slices.Equal(in.KBytes, uni.KBytes) && slices.Equal(in.VBytes, uni.VBytes) {
			t.Errorf("%s: same bytes as uniform", set)
		}
		if b := set.Bounds(defaultBounds, s); b.MaxRel != defaultBounds.MaxRel || b.NMSE != defaultBounds.NMSE || b.MaxAbs != defaultBounds.MaxAbs*set.VScale(s) {
			t.Errorf("%s: bounds %+v", set, b)
		}
	}
	if _, err := GenerateSet(SetPeaked, s, 100, []int{100}, 8, 3); err == nil {
		t.Error("peaked with one length for batch 2: no error")
	}
	if _, err := GenerateSet("bogus", s, 10, lengths, 8, 3); err == nil {
		t.Error("unknown set: no error")
	}
	f32 := s
	f32.KVDtype = "f32"
	in, err := GenerateSet(SetSubnormal, f32, 10, lengthsAt(10, 2), 8, 3)
	if err != nil || len(in.VBytes) != 4*len(in.V) {
		t.Errorf("f32 subnormal set: %v", err)
	}
}

// TestPeakedNeedlesDominate checks the premise of the peaked set: the
// needles carry almost all the weight, so the output is their V mean.
func TestPeakedNeedlesDominate(t *testing.T) {
	s := setShape
	s.Batch = 1
	in, err := GenerateSet(SetPeaked, s, 1641, []int{1641}, 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := Reference(in, []int{1641})
	needles := needleRows(1641, 32)
	d := s.HeadDim
	// Query head 0 reads KV head 0; its mean of needle V rows:
	var worst float64
	for i := range d {
		mean := 0.0
		for _, r := range needles {
			mean += in.VRow(0, r, 0)[i]
		}
		mean /= float64(len(needles))
		worst = max(worst, math.Abs(mean-ref[i]))
	}
	if worst > 0.05/float64(len(needles)) {
		t.Errorf("head 0 output is %g from the needles' mean: the background weighs too much", worst)
	}
}
