package oracle

import (
	"math"
	"slices"
	"testing"

	"github.com/ktune/ktune/internal/abi"
	"github.com/ktune/ktune/internal/kvtype"
)

// optEmu is a float32 split-KV kernel with the attention options, in the
// order of abi.Attention, and switches for a misuse of each: what a
// kernel of an engine gets wrong when it adds the option. Each split runs
// an online softmax over its chunk of the context (ceil(nkv/splits) rows)
// cut to the rows the query attends; the merge adds the sink.
type optEmu struct {
	capScaledTwice bool // soft-cap of s·scale, the scale applied twice
	noCap          bool // the cap left out
	alibiFlipped   bool // slope·(p − r): the distance from the wrong end
	noALiBi        bool
	windowShort    bool // sees window rows, one fewer than window + 1
	windowLong     bool // sees window + 2 rows
	sinkIgnored    bool
	causalAhead    bool // query t also sees row p + 1 (a future token)
	lseNatural     bool // writes ln where the kernel declares log2
	kScaleForV     bool // decodes V with K's scale (one scale read for both)
}

func (e optEmu) run(in *Inputs, lengths []int, splits int) (out, lse []float32) {
	s, a := in.Shape, in.Shape.Attention
	d, dv, T := s.HeadDim, a.VDim(s.HeadDim), a.Queries()
	group := s.Heads / s.KVHeads
	scale := float32(1 / math.Sqrt(float64(d)))
	out = make([]float32, s.Batch*T*s.Heads*dv)
	lse = make([]float32, s.Batch*T*s.Heads)
	exp := func(x float32) float32 { return float32(math.Exp(float64(x))) }
	for b, n := range lengths {
		chunk := (n + splits - 1) / splits
		for t := range T {
			p := n - T + t
			lo, hi := 0, p
			if e.causalAhead {
				hi = min(n-1, p+1)
			}
			if a.Window > 0 {
				w := a.Window
				switch {
				case e.windowShort:
					w--
				case e.windowLong:
					w++
				}
				lo = max(0, p-w)
			}
			for h := range s.Heads {
				kh := h / group
				q := in.QRow(b, t, h)
				gmx, sum := float32(math.Inf(-1)), float32(0)
				acc := make([]float32, dv)
				type slot struct {
					mx, sum float32
					acc     []float32
				}
				var slots []slot
				for sp := range splits {
					sl := slot{mx: float32(math.Inf(-1)), acc: make([]float32, dv)}
					for r := max(lo, sp*chunk); r <= min(hi, (sp+1)*chunk-1); r++ {
						k, v := in.KRow(b, r, kh), in.VRow(b, r, kh)
						var dot float32
						for i := range d {
							dot = float32(math.FMA(float64(q[i]), float64(float32(k[i])), float64(dot)))
						}
						sc := dot * scale
						if c := float32(a.Softcap); c > 0 && !e.noCap {
							x := sc
							if e.capScaledTwice {
								x *= scale
							}
							sc = c * float32(math.Tanh(float64(x/c)))
						}
						if in.Slopes != nil && !e.noALiBi {
							dist := float32(r - p)
							if e.alibiFlipped {
								dist = -dist
							}
							sc += float32(in.Slopes[h]) * dist
						}
						nmx := max(sl.mx, sc)
						w, corr := exp(sc-nmx), exp(sl.mx-nmx)
						sl.sum = sl.sum*corr + w
						for i := range dv {
							x := float32(v[i])
							if e.kScaleForV {
								x = float32(v[i] / in.VScale[kh] * in.KScale[kh])
							}
							sl.acc[i] = float32(math.FMA(float64(w), float64(x), float64(sl.acc[i]*corr)))
						}
						sl.mx = nmx
					}
					slots = append(slots, sl)
					gmx = max(gmx, sl.mx)
				}
				if in.Sinks != nil && !e.sinkIgnored {
					gmx = max(gmx, float32(in.Sinks[h]))
				}
				for _, sl := range slots {
					if math.IsInf(float64(sl.mx), -1) {
						continue
					}
					w := exp(sl.mx - gmx)
					sum += sl.sum * w
					for i := range acc {
						acc[i] += sl.acc[i] * w
					}
				}
				if in.Sinks != nil && !e.sinkIgnored {
					sum += exp(float32(in.Sinks[h]) - gmx)
				}
				row := (b*T+t)*s.Heads + h
				for i := range acc {
					out[row*dv+i] = acc[i] / sum
				}
				l := float64(gmx) + math.Log(float64(sum))
				if a.LSE == abi.LSELog2 && !e.lseNatural {
					l /= math.Ln2
				}
				lse[row] = float32(l)
			}
		}
	}
	return out, lse
}

// optShape has every option but MLA; mlaShape a latent MLA cache.
var (
	optShape = abi.Shape{Name: "opt", Heads: 8, KVHeads: 2, HeadDim: 64, KVDtype: "f16", Batch: 2, Capacity: 4096,
		Attention: abi.Attention{Softcap: 30, ALiBi: abi.ALiBiStandard, Sinks: true, Window: 100, QLen: 4, LSE: abi.LSELog2}}
	mlaShape = abi.Shape{Name: "mla", Heads: 8, KVHeads: 1, HeadDim: 96, KVDtype: "fp8e4m3", KVScale: kvtype.ScaleShared, Batch: 1, Capacity: 4096,
		Attention: abi.Attention{MLA: abi.MLA{DV: 64, Layout: abi.MLALatent}, LSE: abi.LSENatural}}
)

// optLengths are a shape's gate lengths at splits: plain ones and those
// that put the window's edge and the causal diagonal on split boundaries.
func optLengths(s abi.Shape, splits int) []int {
	out := []int{4, 29, 33, 65, 512, 1641}
	if a := s.Attention; a.Window > 0 {
		out = append(out, WindowLengths(a.Window, splits, s.Capacity)...)
	}
	if T := s.Attention.Queries(); T > 1 {
		out = append(out, CausalLengths(T, splits, s.Capacity)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// optJudge runs e on every set of s at every gate length and returns the
// first failure (set, nkv, metrics of out, of lse), or ok.
type optVerdict struct {
	set      InputSet
	nkv      int
	out, lse Metrics
	ok       bool
}

func optJudge(t *testing.T, e optEmu, s abi.Shape, splits int, sets []InputSet) []optVerdict {
	t.Helper()
	var out []optVerdict
	for _, set := range sets {
		for _, nkv := range optLengths(s, splits) {
			lengths := lengthsAt(nkv, s.Batch)
			for b := range lengths {
				lengths[b] = max(lengths[b], s.Attention.Queries())
			}
			in, err := GenerateSet(set, s, nkv, lengths, splits, 1)
			if err != nil {
				t.Fatal(err)
			}
			ref, err := References(in, [][]int{lengths})
			if err != nil {
				t.Fatal(err)
			}
			o, l := e.run(in, lengths, splits)
			b := set.Bounds(defaultBounds, s)
			mo, err := Compare(o, ref[0].Out, b)
			if err != nil {
				t.Fatal(err)
			}
			ml, err := Compare(l, ref[0].LSE, defaultBounds)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, optVerdict{set, nkv, mo, ml, mo.Pass(b) && ml.Pass(defaultBounds)})
		}
	}
	return out
}

// A correct kernel with every option passes every set of its shape at
// every gate length, out and lse, with room to spare.
func TestOptionSetsPassCorrectKernel(t *testing.T) {
	t.Parallel()
	for _, s := range []abi.Shape{optShape, mlaShape} {
		for _, v := range optJudge(t, optEmu{}, s, 8, SetsFor(s)) {
			if !v.ok || v.out.Worst > 0.25 || v.lse.Worst > 0.25 {
				t.Errorf("%s %s nkv %d: out %+v lse %+v: a correct kernel is too close to the bound", s.Name, v.set, v.nkv, v.out, v.lse)
			}
		}
	}
}

// Each misuse of an option fails the gates, on the set built for it.
func TestOptionMisusesCaught(t *testing.T) {
	t.Parallel()
	tensor := mlaShape
	tensor.KVScale = kvtype.ScaleTensor
	tensor.Attention.MLA.Layout = abi.MLASplit // a split cache may have two scales
	for _, c := range []struct {
		name  string
		e     optEmu
		shape abi.Shape
		set   InputSet
	}{
		{"soft-cap of the twice-scaled score", optEmu{capScaledTwice: true}, optShape, SetLarge},
		{"soft-cap left out", optEmu{noCap: true}, optShape, SetLarge},
		{"ALiBi distance from the wrong end", optEmu{alibiFlipped: true}, optShape, SetALiBi},
		{"ALiBi left out", optEmu{noALiBi: true}, optShape, SetALiBi},
		{"window one row short", optEmu{windowShort: true}, optShape, SetWindow},
		{"window one row long", optEmu{windowLong: true}, optShape, SetWindow},
		{"sink ignored", optEmu{sinkIgnored: true}, optShape, SetSinks},
		{"causal mask one row ahead", optEmu{causalAhead: true}, optShape, SetCausal},
		{"lse in ln, declared log2", optEmu{lseNatural: true}, optShape, SetUniform},
		{"K's scale read for V", optEmu{kScaleForV: true}, tensor, SetUniform},
	} {
		caught := false
		for _, v := range optJudge(t, c.e, c.shape, 8, []InputSet{c.set}) {
			caught = caught || !v.ok
		}
		if !caught {
			t.Errorf("%s: passed the %s set at every gate length", c.name, c.set)
		}
	}
	// The shared mode is what lets the single-scale kernel pass.
	for _, v := range optJudge(t, optEmu{kScaleForV: true}, mlaShape, 8, []InputSet{SetUniform}) {
		if !v.ok {
			t.Errorf("one scale for K and V on shared-scale inputs, nkv %d: %+v", v.nkv, v.out)
		}
	}
}

// The option lengths land where they say.
func TestOptionLengths(t *testing.T) {
	for _, n := range WindowLengths(100, 8, 4096) {
		chunk, e := (n+7)/8, n-1-100
		if m := e % chunk; m != 0 && m != 1 && m != chunk-1 {
			t.Errorf("window length %d: edge %d is %d rows into its chunk of %d", n, e, m, chunk)
		}
	}
	// ceil(n/8)-row chunks leave the last split at least n/8 − 8 rows, so
	// the new tokens straddle a boundary only at short lengths.
	got := CausalLengths(4, 8, 4096)
	if len(got) != 2 {
		t.Fatalf("causal lengths %v", got)
	}
	if w := WindowLengths(100, 8, 4096); len(w) != 4 || w[3] < 512 {
		t.Errorf("window lengths %v: want two short and two from 512 rows", w)
	}
	for _, n := range got {
		chunk := (n + 7) / 8
		if (n-4)/chunk == (n-1)/chunk {
			t.Errorf("causal length %d: rows %d to %d lie in one chunk of %d", n, n-4, n-1, chunk)
		}
	}
	// Pages: the new tokens cross a page boundary at each length, two
	// short and two long, and a page and a split boundary at one of them
	// at least; one-row pages and one new token add none.
	for _, P := range []int{16, 64} {
		pages := CausalPageLengths(4, P, 8, 4096)
		both := 0
		for _, n := range pages {
			if (n-4)/P == (n-1)/P {
				t.Errorf("page length %d: rows %d to %d lie in one page of %d", n, n-4, n-1, P)
			}
			if chunk := (n + 7) / 8; (n-4)/chunk != (n-1)/chunk && (n-1)/chunk < 8 {
				both++
			}
		}
		if len(pages) < 4 || both == 0 || pages[3] < 512 {
			t.Errorf("page size %d: lengths %v (%d crossing a split boundary too)", P, pages, both)
		}
	}
	if got := CausalPageLengths(4, 1, 8, 4096); got != nil {
		t.Errorf("one-row pages: %v", got)
	}
	if got := CausalPageLengths(1, 16, 8, 4096); got != nil {
		t.Errorf("q_len 1: %v", got)
	}
}
