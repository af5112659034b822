package oracle

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

func kvShape(dtype, scale string) abi.Shape {
	s := setShape
	s.KVDtype, s.KVScale = abi.Dtype(dtype), scale
	s.KVHeads = 4 // more than one head per scale mode, fewer than the factors
	return s
}

// TestScaledSetsHoldTheirBytes checks every set of the new types: the
// values are what the bytes (and scales) hold, VScale bounds |V|, the
// scales are exact f32 and ScaleBytes lays them out K first.
func TestScaledSetsHoldTheirBytes(t *testing.T) {
	t.Parallel()
	for _, s := range []abi.Shape{kvShape("bf16", ""), kvShape("fp8e4m3", "tensor"), kvShape("fp8e4m3", "head")} {
		ty := s.KVType()
		lengths := lengthsAt(200, s.Batch)
		for _, set := range Sets {
			in, err := GenerateSet(set, s, 200, lengths, 8, 3)
			if err != nil {
				t.Fatal(err)
			}
			if (in.KScale != nil) != ty.Scaled || len(in.KBytes) != len(in.K)*ty.Bytes {
				t.Fatalf("%s %s: scales %v, %d bytes for %d elements", s.KVDtype, set, in.KScale, len(in.KBytes), len(in.K))
			}
			for _, x := range []struct {
				vals   []float64
				raw    []byte
				scales []float64
			}{{in.K, in.KBytes, in.KScale}, {in.V, in.VBytes, in.VScale}} {
				for i, v := range x.vals {
					want := ty.Decode(ty.Bits(x.raw, i))
					if x.scales != nil {
						want *= x.scales[(i/s.HeadDim)%s.KVHeads]
					}
					if v != want || math.IsNaN(v) {
						t.Fatalf("%s %s: element %d is %v, its bytes hold %v", s.KVDtype, set, i, v, want)
					}
				}
			}
			vmax := 0.0
			for _, v := range in.V {
				vmax = max(vmax, math.Abs(v))
			}
			if vs := set.VScale(s); vmax > vs || vmax < vs/2 {
				t.Errorf("%s %s %s: max |V| %g, VScale %g", s.KVDtype, s.KVScale, set, vmax, vs)
			}
			if !ty.Scaled {
				if in.ScaleBytes() != nil {
					t.Errorf("%s: scale bytes", s.KVDtype)
				}
				continue
			}
			sb := in.ScaleBytes()
			if len(sb) != 8*s.KVHeads {
				t.Fatalf("ScaleBytes: %d bytes", len(sb))
			}
			for i, sc := range append(slices.Clone(in.KScale), in.VScale...) {
				if float64(float32(sc)) != sc || sc <= 0 || math.Float32frombits(binary.LittleEndian.Uint32(sb[4*i:])) != float32(sc) {
					t.Errorf("%s %s: scale %d = %v", s.KVScale, set, i, sc)
				}
			}
			checkScaleModes(t, s, set, in)
		}
	}
}

// checkScaleModes: tensor mode has one scale per tensor, head mode one
// per head, all distinct, and K's never equal V's.
func checkScaleModes(t *testing.T, s abi.Shape, set InputSet, in *Inputs) {
	t.Helper()
	for kh := range s.KVHeads {
		if in.KScale[kh] == in.VScale[kh] {
			t.Errorf("%s %s: K and V share scale %v at head %d", s.KVScale, set, in.KScale[kh], kh)
		}
	}
	for _, sc := range [][]float64{in.KScale, in.VScale} {
		distinct := len(slices.Compact(slices.Sorted(slices.Values(sc))))
		if s.KVScale == kvtype.ScaleHead && distinct != s.KVHeads {
			t.Errorf("head mode %s: scales %v not distinct", set, sc)
		}
		if s.KVScale != kvtype.ScaleHead && distinct != 1 {
			t.Errorf("tensor mode %s: scales %v differ", set, sc)
		}
	}
}

// TestFP8SubnormalCodes: the fp8e4m3 subnormal set's V is made of e4m3
// subnormal codes only, and so is about half of K.
func TestFP8SubnormalCodes(t *testing.T) {
	for _, mode := range []string{"tensor", "head"} {
		s := kvShape("fp8e4m3", mode)
		in, err := GenerateSet(SetSubnormal, s, 300, lengthsAt(300, s.Batch), 8, 5)
		if err != nil {
			t.Fatal(err)
		}
		sub := func(b byte) bool { return b&0x78 == 0 && b&7 != 0 }
		signs := map[byte]bool{}
		for i, b := range in.VBytes {
			if !sub(b) {
				t.Fatalf("%s: V byte %d is %#02x, not a subnormal code", mode, i, b)
			}
			signs[b&0x80] = true
		}
		if len(signs) != 2 {
			t.Errorf("%s: V subnormals of one sign only", mode)
		}
		n := 0
		for _, b := range in.KBytes {
			if sub(b) {
				n++
			}
		}
		if f := float64(n) / float64(len(in.KBytes)); f < 0.4 || f > 0.65 {
			t.Errorf("%s: %.2f of K are subnormal codes", mode, f)
		}
	}
}

// TestBF16SubnormalSameValues: bf16's subnormal set has the f16 set's
// intended values (f16 subnormals), which bf16 holds as normals.
func TestBF16SubnormalSameValues(t *testing.T) {
	f16, bf := kvShape("f16", ""), kvShape("bf16", "")
	a, _ := GenerateSet(SetSubnormal, f16, 100, lengthsAt(100, 2), 8, 7)
	b, _ := GenerateSet(SetSubnormal, bf, 100, lengthsAt(100, 2), 8, 7)
	for i, v := range a.V {
		if math.Abs(v) >= 0x1p-14 || v == 0 {
			t.Fatalf("f16 V[%d] = %v is not an f16 subnormal", i, v)
		}
		if want := kvtype.BF16.Decode(kvtype.BF16.Encode(v)); b.V[i] != want {
			t.Fatalf("bf16 V[%d] = %v, want %v (f16's %v rounded)", i, b.V[i], want, v)
		}
	}
}

// TestFP8PeakedNeedlesDominate: after quantization the peaked set's
// output is still the mean of the needles' V rows.
func TestFP8PeakedNeedlesDominate(t *testing.T) {
	for _, mode := range []string{"tensor", "head"} {
		s := kvShape("fp8e4m3", mode)
		lengths := lengthsAt(900, s.Batch)
		const splits = 16
		in, err := GenerateSet(SetPeaked, s, 900, lengths, splits, 11)
		if err != nil {
			t.Fatal(err)
		}
		ref, err := Reference(in, lengths)
		if err != nil {
			t.Fatal(err)
		}
		group := s.Heads / s.KVHeads
		worst := 0.0
		for b, n := range lengths {
			rows := needleRows(n, splits)
			for h := range s.Heads {
				for j := range s.HeadDim {
					mean := 0.0
					for _, r := range rows {
						mean += in.VRow(b, r, h/group)[j]
					}
					mean /= float64(len(rows))
					worst = max(worst, math.Abs(ref[(b*s.Heads+h)*s.HeadDim+j]-mean))
				}
			}
		}
		if worst > 1e-3 {
			t.Errorf("%s: the reference is %g from the needles' mean", mode, worst)
		}
	}
}

// TestFP8WrongScaleFails: a kernel that applies the wrong head's scale,
// or K's scale to V, fails the gate by far on every set; one that uses
// the right scales passes.
func TestFP8WrongScaleFails(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"tensor", "head"} {
		s := kvShape("fp8e4m3", mode)
		lengths := lengthsAt(400, s.Batch)
		for _, set := range Sets {
			in, err := GenerateSet(set, s, 400, lengths, 8, 13)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := Reference(in, lengths)
			b := set.Bounds(defaultBounds, s)
			// rescale returns in with its values dequantized with other
			// scales, as a kernel that reads the wrong ones sees them.
			rescale := func(ks, vs func(kh int) float64) []float32 {
				w := *in
				w.K, w.V = slices.Clone(in.K), slices.Clone(in.V)
				for i := range w.K {
					kh := (i / s.HeadDim) % s.KVHeads
					w.K[i] *= ks(kh) / in.KScale[kh]
					w.V[i] *= vs(kh) / in.VScale[kh]
				}
				out, err := Reference(&w, lengths)
				if err != nil {
					t.Fatal(err)
				}
				f := make([]float32, len(out))
				for i, x := range out {
					f[i] = float32(x)
				}
				return f
			}
			right := func(x []float64) func(int) float64 { return func(kh int) float64 { return x[kh] } }
			next := func(x []float64) func(int) float64 {
				return func(kh int) float64 { return x[(kh+1)%s.KVHeads] }
			}
			if m, _ := Compare(rescale(right(in.KScale), right(in.VScale)), ref, b); !m.Pass(b) {
				t.Errorf("%s %s: the right scales fail: %+v", mode, set, m)
			}
			wrong := map[string][]float32{"V with K's scale": rescale(right(in.KScale), right(in.KScale))}
			if mode == "head" {
				wrong["the next head's V scale"] = rescale(right(in.KScale), next(in.VScale))
				wrong["head 0's V scale"] = rescale(right(in.KScale), func(int) float64 { return in.VScale[0] })
			}
			for name, out := range wrong {
				if m, _ := Compare(out, ref, b); m.Pass(b) || m.NMSE < 1000*b.NMSE {
					t.Errorf("%s %s: a kernel using %s passes or is close: %+v", mode, set, name, m)
				}
			}
		}
	}
}

// TestCorrectKernelPassesNewTypes: the float32 emulation passes every set
// of bf16 and fp8e4m3 inputs with the default bounds.
func TestCorrectKernelPassesNewTypes(t *testing.T) {
	t.Parallel()
	for _, s := range []abi.Shape{kvShape("bf16", ""), kvShape("fp8e4m3", "tensor"), kvShape("fp8e4m3", "head")} {
		for _, set := range Sets {
			lengths := lengthsAt(700, s.Batch)
			in, err := GenerateSet(set, s, 700, lengths, 32, 1)
			if err != nil {
				t.Fatal(err)
			}
			ref, _ := Reference(in, lengths)
			b := set.Bounds(defaultBounds, s)
			if m, _ := Compare(emu{}.run(in, lengths, 32), ref, b); !m.Pass(b) || m.Worst > 0.25 {
				t.Errorf("%s %s %s: %+v", s.KVDtype, s.KVScale, set, m)
			}
		}
	}
}
