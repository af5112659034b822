package oracle

import (
	"bytes"
	"math"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// splitKV computes decode attention the way the kernels do, in float64:
// each split runs an online softmax over its chunk of rows and keeps
// (max, sum, acc); the splits are then merged with exp(max_sp − gmax)
// weights. Idle splits (lo ≥ nkv) keep max = −inf and contribute nothing.
// It shares no code with Reference, so agreement checks both.
func splitKV(in *Inputs, nkv []int, splits int) []float64 {
	s := in.Shape
	d := s.HeadDim
	out := make([]float64, s.Batch*s.Heads*d)
	type part struct {
		mx, sum float64
		acc     []float64
	}
	for b := 0; b < s.Batch; b++ {
		n := nkv[b]
		chunk := (n + splits - 1) / splits
		for h := 0; h < s.Heads; h++ {
			kh := h * s.KVHeads / s.Heads // same mapping as h/(heads/kv_heads) for whole groups
			q := in.Q[(b*s.Heads+h)*d:]
			parts := make([]part, splits)
			for sp := range parts {
				p := part{mx: math.Inf(-1), acc: make([]float64, d)}
				lo, hi := sp*chunk, min(n, (sp+1)*chunk)
				for r := lo; r < hi; r++ {
					k := in.K[((b*in.Rows+r)*s.KVHeads+kh)*d:]
					v := in.V[((b*in.Rows+r)*s.KVHeads+kh)*d:]
					var dot float64
					for i := d - 1; i >= 0; i-- { // reverse order on purpose
						dot += k[i] * float64(q[i])
					}
					sc := dot / math.Sqrt(float64(d))
					nmx := math.Max(p.mx, sc)
					corr := math.Exp(p.mx - nmx)
					e := math.Exp(sc - nmx)
					p.sum = p.sum*corr + e
					for i := 0; i < d; i++ {
						p.acc[i] = p.acc[i]*corr + e*v[i]
					}
					p.mx = nmx
				}
				parts[sp] = p
			}
			gmx := math.Inf(-1)
			for _, p := range parts {
				gmx = math.Max(gmx, p.mx)
			}
			var sum float64
			acc := make([]float64, d)
			for _, p := range parts {
				if math.IsInf(p.mx, -1) {
					continue // exp(−inf − gmx) = 0; also avoids −inf − (−inf)
				}
				w := math.Exp(p.mx - gmx)
				sum += p.sum * w
				for i := range acc {
					acc[i] += p.acc[i] * w
				}
			}
			for i := range acc {
				if sum > 0 {
					out[(b*s.Heads+h)*d+i] = acc[i] / sum
				}
			}
		}
	}
	return out
}

func TestReferenceMatchesSplitKV(t *testing.T) {
	cases := []struct {
		name   string
		shape  abi.Shape
		nkv    []int
		splits int
	}{
		{"gqa f16", abi.Shape{Heads: 8, KVHeads: 2, HeadDim: 16, KVDtype: "f16", Batch: 1, Capacity: 64}, []int{53}, 8},
		{"fewer rows than splits", abi.Shape{Heads: 4, KVHeads: 4, HeadDim: 8, KVDtype: "f32", Batch: 1, Capacity: 8}, []int{3}, 8},
		{"one row", abi.Shape{Heads: 4, KVHeads: 1, HeadDim: 8, KVDtype: "f16", Batch: 1, Capacity: 8}, []int{1}, 32},
		{"ragged batch", abi.Shape{Heads: 6, KVHeads: 3, HeadDim: 12, KVDtype: "f32", Batch: 3, Capacity: 40}, []int{40, 7, 0}, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, err := Generate(c.shape, c.shape.Capacity, 7)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Reference(in, c.nkv)
			if err != nil {
				t.Fatal(err)
			}
			want := splitKV(in, c.nkv, c.splits)
			for i := range want {
				if d := math.Abs(got[i] - want[i]); d > 1e-12 || math.IsNaN(got[i]) {
					t.Fatalf("element %d: reference %v, split-KV %v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestReferenceOneRowIsV(t *testing.T) {
	// With a single row the softmax weight is exactly 1: out = V row.
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 8, KVDtype: "f16", Batch: 1, Capacity: 4}
	in, err := Generate(s, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Reference(in, []int{1})
	if err != nil {
		t.Fatal(err)
	}
	for h := 0; h < 4; h++ {
		v := in.VRow(0, 0, h/2)
		for i := 0; i < 8; i++ {
			if out[h*8+i] != v[i] {
				t.Fatalf("head %d dim %d: %v, want V %v", h, i, out[h*8+i], v[i])
			}
		}
	}
}

func TestReferenceRejectsRowsNotGenerated(t *testing.T) {
	s := abi.Shape{Heads: 1, KVHeads: 1, HeadDim: 4, KVDtype: "f32", Batch: 1, Capacity: 8}
	in, _ := Generate(s, 4, 1)
	if _, err := Reference(in, []int{5}); err == nil {
		t.Fatal("nkv 5 with 4 generated rows: want an error")
	}
}

func TestGenerate(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 8, KVDtype: "f16", Batch: 2, Capacity: 16}
	a, err := Generate(s, 16, 42)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Generate(s, 16, 42)
	c, _ := Generate(s, 16, 43)
	if !bytes.Equal(a.KBytes, b.KBytes) || !bytes.Equal(a.VBytes, b.VBytes) || !bytes.Equal(a.QBytes(), b.QBytes()) {
		t.Error("same seed gave different inputs")
	}
	if bytes.Equal(a.KBytes, c.KBytes) {
		t.Error("different seeds gave the same K")
	}
	if len(a.KBytes) != 2*16*2*8*2 {
		t.Errorf("K is %d bytes, want %d", len(a.KBytes), 2*16*2*8*2)
	}
	for i, v := range a.K {
		h := uint16(a.KBytes[2*i]) | uint16(a.KBytes[2*i+1])<<8
		if kvtype.F16ToF64(h) != v || v < -1 || v > 1 {
			t.Fatalf("K[%d] = %v, bytes hold %v", i, v, kvtype.F16ToF64(h))
		}
	}
	for _, q := range a.Q {
		if q < -1 || q > 1 {
			t.Fatalf("q %v outside [-1, 1]", q)
		}
	}
	if _, err := Generate(abi.Shape{Heads: 3, KVHeads: 2, HeadDim: 4, KVDtype: "f16", Batch: 1}, 1, 1); err == nil {
		t.Error("heads 3, kv_heads 2: want an error")
	}
	if _, err := Generate(abi.Shape{Heads: 2, KVHeads: 2, HeadDim: 4, KVDtype: "fp16", Batch: 1}, 1, 1); err == nil {
		t.Error("kv_dtype fp16: want an error")
	}
}
