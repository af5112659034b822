package oracle

import (
	"math"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// hand builds f32 inputs of one sequence, one KV head and head_dim d from
// explicit values: q [q_len][heads][d], K rows of d, V rows of dv.
func hand(a abi.Attention, heads, d int, q []float32, k, v []float64) *Inputs {
	s := abi.Shape{Heads: heads, KVHeads: 1, HeadDim: d, KVDtype: "f32", Batch: 1, Capacity: 64, Attention: a}
	return &Inputs{Shape: s, Rows: len(k) / d, Q: q, K: k, V: v}
}

func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-14*max(1, math.Abs(want)) || math.IsNaN(got) {
		t.Errorf("%s: %.17g, want %.17g", what, got, want)
	}
}

func ref(t *testing.T, in *Inputs, nkv int) Output {
	t.Helper()
	o, err := References(in, [][]int{{nkv}})
	if err != nil {
		t.Fatal(err)
	}
	return o[0]
}

// Each option against a case computed by hand: head_dim 1 (the scale is
// 1, a score is q·k) or q = 0 (every score 0), so that the weights have a
// closed form.
func TestOptionsHandComputed(t *testing.T) {
	t.Run("softcap", func(t *testing.T) {
		// Scores 4 and 0, capped at 2: 2·tanh(2) and 0.
		in := hand(abi.Attention{Softcap: 2}, 1, 1, []float32{1}, []float64{4, 0}, []float64{1, 0})
		x := 2 * math.Tanh(2)
		near(t, "out", ref(t, in, 2).Out[0], math.Exp(x)/(math.Exp(x)+1))
	})
	t.Run("softcap after the scale", func(t *testing.T) {
		// head_dim 4: q·k = 8, scaled 4, capped at 3: 3·tanh(4/3).
		in := hand(abi.Attention{Softcap: 3}, 1, 4, []float32{1, 1, 1, 1}, []float64{2, 2, 2, 2, 0, 0, 0, 0}, []float64{1, 0, 0, 0, 0, 0, 0, 0})
		x := 3 * math.Tanh(4.0/3)
		near(t, "out", ref(t, in, 2).Out[0], math.Exp(x)/(math.Exp(x)+1))
	})
	t.Run("alibi", func(t *testing.T) {
		// Every score 0; query at position 2: bias −2m, −m, 0 for rows
		// 0, 1, 2 with V 0, 1, 2. Two heads, the standard slopes 2^-4, 2^-8.
		in := hand(abi.Attention{ALiBi: abi.ALiBiStandard}, 2, 1, []float32{0, 0}, []float64{5, 5, 5}, []float64{0, 1, 2})
		in.Slopes = StandardSlopes(2)
		o := ref(t, in, 3)
		for h, m := range []float64{1.0 / 16, 1.0 / 256} {
			a, b := math.Exp(-2*m), math.Exp(-m)
			near(t, "out", o.Out[h], (b+2)/(a+b+1))
		}
	})
	t.Run("sinks", func(t *testing.T) {
		// Scores 0, V 1 and 3, a sink of ln 2: Σ = 1 + 1 + 2, out = 4/4,
		// lse = ln 4.
		in := hand(abi.Attention{Sinks: true, LSE: abi.LSENatural}, 1, 1, []float32{0}, []float64{1, 1}, []float64{1, 3})
		in.Sinks = []float64{math.Ln2}
		o := ref(t, in, 2)
		near(t, "out", o.Out[0], 1)
		near(t, "lse", o.LSE[0], math.Log(4))
	})
	t.Run("window", func(t *testing.T) {
		// Window 1 at nkv 4: the query at position 3 sees rows 2 and 3.
		in := hand(abi.Attention{Window: 1}, 1, 1, []float32{0}, []float64{0, 0, 0, 0}, []float64{10, 20, 1, 2})
		near(t, "out", ref(t, in, 4).Out[0], 1.5)
		// nkv 1: the window reaches before row 0; row 0 alone.
		near(t, "out", ref(t, in, 1).Out[0], 10)
	})
	t.Run("q_len", func(t *testing.T) {
		// Two new tokens of nkv 3: query 0 at position 1 sees rows 0-1,
		// query 1 rows 0-2; out is [q_len][heads][dv].
		in := hand(abi.Attention{QLen: 2, LSE: abi.LSELog2}, 1, 1, []float32{0, 0}, []float64{0, 0, 0}, []float64{1, 3, 8})
		o := ref(t, in, 3)
		near(t, "out[0]", o.Out[0], 2)
		near(t, "out[1]", o.Out[1], 4)
		near(t, "lse[0]", o.LSE[0], 1)            // log2 2
		near(t, "lse[1]", o.LSE[1], math.Log2(3)) // log2 3
		if _, err := References(in, [][]int{{1}}); err == nil {
			t.Error("nkv 1 with q_len 2: want an error")
		}
	})
	t.Run("q_len with window and alibi", func(t *testing.T) {
		// q_len 2, window 1, nkv 4: query 0 (position 2) sees rows 1-2,
		// query 1 (position 3) rows 2-3; slope m: bias −m on the older row.
		in := hand(abi.Attention{QLen: 2, Window: 1, ALiBi: abi.ALiBiBuffer}, 1, 1, []float32{0, 0}, []float64{0, 0, 0, 0}, []float64{0, 1, 2, 3})
		in.Slopes = []float64{0.5}
		o := ref(t, in, 4)
		w := math.Exp(-0.5)
		near(t, "out[0]", o.Out[0], (1*w+2)/(w+1))
		near(t, "out[1]", o.Out[1], (2*w+3)/(w+1))
	})
	t.Run("mla latent", func(t *testing.T) {
		// head_dim 4, dv 2, V the first two channels of K; q·k = 4 on row
		// 1, 0 on row 0; the scale is 1/2.
		in := hand(abi.Attention{MLA: abi.MLA{DV: 2, Layout: abi.MLALatent}}, 1, 4, []float32{1, 1, 1, 1},
			[]float64{1, -1, 0, 0, 1, 1, 1, 1}, nil)
		o := ref(t, in, 2)
		w := math.Exp(2) / (1 + math.Exp(2))
		near(t, "out[0]", o.Out[0], 1)
		near(t, "out[1]", o.Out[1], -1*(1-w)+w)
		if len(o.Out) != 2 {
			t.Errorf("out has %d elements, want dv 2", len(o.Out))
		}
	})
	t.Run("mla split", func(t *testing.T) {
		in := hand(abi.Attention{MLA: abi.MLA{DV: 1, Layout: abi.MLASplit}}, 1, 4, []float32{0, 0, 0, 0},
			[]float64{1, 1, 1, 1, 2, 2, 2, 2}, []float64{5, 7})
		near(t, "out", ref(t, in, 2).Out[0], 6)
	})
	t.Run("lse without options", func(t *testing.T) {
		// Scores 0 and ln 3 (q 1, k ln 3): lse = ln(1 + 3).
		in := hand(abi.Attention{LSE: abi.LSENatural}, 1, 1, []float32{1}, []float64{0, math.Log(3)}, []float64{0, 1})
		o := ref(t, in, 2)
		near(t, "lse", o.LSE[0], math.Log(4))
		near(t, "out", o.Out[0], 0.75)
	})
}

func TestStandardSlopes(t *testing.T) {
	for h, s := range StandardSlopes(8) {
		if s != math.Exp2(-float64(h+1)) {
			t.Errorf("8 heads, head %d: %v, want 2^-%d", h, s, h+1)
		}
	}
	// 12 heads: the 8 of 8, then 2^-0.5, 2^-1.5, 2^-2.5, 2^-3.5.
	got := StandardSlopes(12)
	for i, e := range []float64{-0.5, -1.5, -2.5, -3.5} {
		if want := float64(float32(math.Exp2(e))); got[8+i] != want {
			t.Errorf("12 heads, head %d: %v, want %v", 8+i, got[8+i], want)
		}
	}
}

// kv_scale: shared gives K and V one scale, in every entry of the
// buffer, on every set, and the values are what the bytes and that scale
// hold.
func TestSharedScale(t *testing.T) {
	s := abi.Shape{Heads: 4, KVHeads: 2, HeadDim: 16, KVDtype: "fp8e4m3", KVScale: kvtype.ScaleShared, Batch: 2, Capacity: 64}
	for _, set := range Sets {
		in, err := GenerateSet(set, s, 64, []int{64, 40}, 4, 2)
		if err != nil {
			t.Fatal(err)
		}
		sc := in.KScale[0]
		for i := range in.KScale {
			if in.KScale[i] != sc || in.VScale[i] != sc {
				t.Fatalf("%s: scales K %v V %v, want one", set, in.KScale, in.VScale)
			}
		}
		for i, v := range in.V {
			if got := kvtype.FP8E4M3.Decode(uint32(in.VBytes[i])) * sc; got != v {
				t.Fatalf("%s: V[%d] = %v, the byte and the scale hold %v", set, i, v, got)
			}
		}
		// Against a per-tensor set, V's scale changed: the shared set is
		// the one a kernel reading a single scale passes.
		tensor := s
		tensor.KVScale = kvtype.ScaleTensor
		tin, _ := GenerateSet(set, tensor, 64, []int{64, 40}, 4, 2)
		if tin.KScale[0] == tin.VScale[0] {
			t.Errorf("%s: per-tensor K and V scales are equal; the shared mode tests nothing", set)
		}
	}
}
