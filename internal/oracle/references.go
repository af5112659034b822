package oracle

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/ktune/ktune/internal/abi"
)

// An Output is the reference of one launch.
type Output struct {
	// Out is laid out like the kernel's out buffer:
	// [batch][q_len][heads][dv].
	Out []float64
	// LSE is the log-sum-exp of every query row's scores (sinks
	// included), [batch][q_len][heads], in the base the shape's
	// Attention.LSE names; nil when the shape declares no lse output.
	LSE []float64
}

// References returns the reference of every launch in launches, each a
// list of context lengths (one per sequence), in one pass over the
// inputs: every (sequence, head) computes its scores q·k once over the
// rows the longest length needs, and each length then takes its own
// softmax of them. The gates ask for all the lengths of an input set in
// one call, the capacity and the longest timed length included, and the
// dot products, half the work of one length, are then shared by all.
//
// Each query row's softmax is the plain two-pass one in float64, with no
// online rescaling, so that it shares no summation order, and no bug,
// with any kernel it judges:
//
//	m = max_r s_r;  e_r = exp(s_r − m);  Σ = Σ_r e_r (+ exp(sink − m));
//	out = Σ_r (e_r / Σ) · v_r;  lse = m + ln Σ
//
// summed over r in ascending order. A length's result is the same bits
// whatever other lengths the call asks for and whatever the number of
// cores, and equal, for plain attention, to the one-length oracle this
// replaced. Query head h reads KV head h / (heads/kv_heads) and the scale
// is 1/√dk. A query row with no row to attend yields zeros (and an lse of
// −Inf, or the sink's logit), which is what the combine kernel writes
// when every split is idle.
//
// Rows at or past in.Rows exist only on tiled inputs (Inputs.Tiled): row
// r holds row r mod in.Rows there, so the oracle's dot products stop at
// in.Rows and a length up to the capacity costs one scalar pass of its
// rows for the weights plus in.Rows rows of V.
func References(in *Inputs, launches [][]int) ([]Output, error) {
	s, a := in.Shape, in.Shape.Attention
	limit := in.Rows
	if in.Tiled {
		limit = s.Capacity
	}
	T := a.Queries()
	for j, nkv := range launches {
		if len(nkv) != s.Batch {
			return nil, fmt.Errorf("oracle: launch %d: %d context lengths for batch %d", j, len(nkv), s.Batch)
		}
		for b, n := range nkv {
			switch {
			case n < 0 || n > limit:
				return nil, fmt.Errorf("oracle: sequence %d: nkv %d outside the %d rows the inputs hold", b, n, limit)
			case n > 0 && n < T:
				return nil, fmt.Errorf("oracle: sequence %d: nkv %d is shorter than q_len %d (the new tokens are part of the context)", b, n, T)
			}
		}
	}
	group := s.Heads / s.KVHeads
	dv := a.VDim(s.HeadDim)
	outs := make([]Output, len(launches))
	for j := range outs {
		outs[j].Out = make([]float64, s.Batch*T*s.Heads*dv)
		if a.LSE != "" {
			outs[j].LSE = make([]float64, s.Batch*T*s.Heads)
		}
	}
	// A job is a (sequence, KV head) and a run of that group's query heads:
	// the heads of a group share every K and V row they read. Each query
	// row writes only its own output, in the same order whatever the
	// number of workers, so nothing depends on the parallelism. A group
	// is cut into runs when there are too few groups to keep every core
	// busy (batch 1, 4 KV heads on 16 cores).
	workers := runtime.GOMAXPROCS(0)
	runs := min(group, max(1, (2*workers+s.Batch*s.KVHeads-1)/(s.Batch*s.KVHeads)))
	per := (group + runs - 1) / runs
	type job struct{ b, kh, h0, h1 int }
	jobs := make(chan job)
	var wg sync.WaitGroup
	for range min(workers, s.Batch*s.KVHeads*runs) {
		wg.Go(func() {
			for j := range jobs {
				in.referenceJob(launches, outs, j.b, j.kh, j.h0, j.h1)
			}
		})
	}
	for b := range s.Batch {
		for kh := range s.KVHeads {
			for h0 := kh * group; h0 < (kh+1)*group; h0 += per {
				jobs <- job{b, kh, h0, min(h0+per, (kh+1)*group)}
			}
		}
	}
	close(jobs)
	wg.Wait()
	return outs, nil
}

// referenceJob computes query heads [h0, h1) of KV head kh, sequence b,
// at every launch.
func (in *Inputs) referenceJob(launches [][]int, outs []Output, b, kh, h0, h1 int) {
	s, a := in.Shape, in.Shape.Attention
	d, dv, T := s.HeadDim, a.VDim(s.HeadDim), a.Queries()
	H := h1 - h0
	// The distinct lengths of sequence b, and the rows their scores need.
	var ns []int
	for _, nkv := range launches {
		if !slices.Contains(ns, nkv[b]) {
			ns = append(ns, nkv[b])
		}
	}
	dots := min(slices.Max(ns), in.Rows)
	// scores[(t·H + h)·dots + r]: the scaled (and capped) score of row r.
	scale := 1 / math.Sqrt(float64(d))
	scores := make([]float64, T*H*dots)
	for r := range dots {
		k := in.KRow(b, r, kh)
		for t := range T {
			for h := range H {
				q := in.QRow(b, t, h0+h)[:len(k)]
				dot := 0.0
				for i, x := range k {
					dot += float64(q[i]) * x
				}
				sc := dot * scale
				if c := a.Softcap; c > 0 {
					sc = c * math.Tanh(sc/c)
				}
				scores[(t*H+h)*dots+r] = sc
			}
		}
	}
	// Per length and query row: the weights of rows [lo, hi), folded onto
	// the rows held (w[h][r mod Rows]), then out = Σ w·v in row order.
	e := make([]float64, 0, 1024)
	w := make([][]float64, H)
	for h := range w {
		w[h] = make([]float64, dots)
	}
	o := make([][]float64, H)
	ex := make([]float64, dots) // tiledWeights' exps, one per row held
	for _, n := range ns {
		for t := range T {
			if n == 0 {
				if a.LSE != "" {
					for h := range H {
						in.storeLSE(launches, outs, b, t, h0+h, n, math.Inf(-1), 0)
					}
				}
				continue
			}
			p := n - T + t // the query's position; it attends rows [lo, p]
			lo, hi := a.Rows(n, t)
			span := hi - lo
			wraps := span > in.Rows || (hi-1)%in.Rows < lo%in.Rows
			for h := range H {
				hq := h0 + h
				sc := scores[(t*H+h)*dots : (t*H+h+1)*dots]
				wh := w[h]
				o[h] = make([]float64, dv)
				if wraps && in.Slopes == nil {
					m, sum := tiledWeights(sc, lo, hi, in.Sinks, hq, wh, ex)
					if a.LSE != "" {
						in.storeLSE(launches, outs, b, t, hq, n, m, sum)
					}
					continue
				}
				e = e[:0]
				m := math.Inf(-1)
				for r := lo; r < hi; r++ {
					x := sc[r%in.Rows]
					if in.Slopes != nil {
						x += in.Slopes[hq] * float64(r-p)
					}
					e = append(e, x)
					m = math.Max(m, x)
				}
				if in.Sinks != nil {
					m = math.Max(m, in.Sinks[hq])
				}
				// Subtracting the max only guards exp against overflow; in
				// float64 it changes nothing else.
				sum := 0.0
				for i, x := range e {
					e[i] = math.Exp(x - m)
					sum += e[i]
				}
				if in.Sinks != nil {
					sum += math.Exp(in.Sinks[hq] - m)
				}
				if a.LSE != "" {
					in.storeLSE(launches, outs, b, t, hq, n, m, sum)
				}
				if wraps {
					clear(wh)
					for i, x := range e {
						wh[(lo+i)%in.Rows] += x / sum
					}
				} else {
					for i, x := range e {
						wh[(lo+i)%in.Rows] = x / sum
					}
				}
			}
			// The rows V is read at, ascending: those the span covers, or
			// every row held when the span wraps.
			first, last := lo%in.Rows, (hi-1)%in.Rows
			if wraps {
				first, last = 0, in.Rows-1
			}
			for r := first; r <= last; r++ {
				v := in.VRow(b, r, kh)
				for h := range H {
					wt := w[h][r]
					if wraps && wt == 0 {
						continue // a row the span does not cover
					}
					oh := o[h][:len(v)]
					for i, x := range v {
						oh[i] += wt * x
					}
				}
			}
			for h := range H {
				in.storeOut(launches, outs, b, t, h0+h, n, o[h])
			}
		}
	}
}

// storeOut copies a query row's output into every launch whose sequence b
// has length n.
func (in *Inputs) storeOut(launches [][]int, outs []Output, b, t, h, n int, o []float64) {
	s := in.Shape
	dv, T := s.Attention.VDim(s.HeadDim), s.Attention.Queries()
	off := ((b*T+t)*s.Heads + h) * dv
	for j, nkv := range launches {
		if nkv[b] == n {
			copy(outs[j].Out[off:off+dv], o)
		}
	}
}

// storeLSE stores m + ln(sum) in the shape's base into every launch whose
// sequence b has length n.
func (in *Inputs) storeLSE(launches [][]int, outs []Output, b, t, h, n int, m, sum float64) {
	s := in.Shape
	lse := m + math.Log(sum)
	if sum == 0 {
		lse = math.Inf(-1)
	}
	if s.Attention.LSE == abi.LSELog2 {
		lse /= math.Ln2
	}
	off := (b*s.Attention.Queries()+t)*s.Heads + h
	for j, nkv := range launches {
		if nkv[b] == n {
			outs[j].LSE[off] = lse
		}
	}
}

// tiledWeights is the general loop's softmax, bit for bit, for a span
// [lo, hi) that wraps the rows held on tiled inputs with no per-row bias:
// row r's score is then sc[r mod R], so each held row's exp and weight are
// computed once instead of once per row it stands for (at the capacity,
// 131,072 rows stand for a few thousand held ones). The sum and every
// weight are still accumulated one row at a time in ascending order, as
// the general loop does, and the max is order-free, so nothing rounds
// differently. wh receives the folded weights; ex is scratch of len(sc).
func tiledWeights(sc []float64, lo, hi int, sinks []float64, hq int, wh, ex []float64) (m, sum float64) {
	R := len(sc)
	j0, covered := lo%R, min(hi-lo, R)
	m = math.Inf(-1)
	for i, j := 0, j0; i < covered; i++ {
		m = math.Max(m, sc[j])
		if j++; j == R {
			j = 0
		}
	}
	if sinks != nil {
		m = math.Max(m, sinks[hq])
	}
	for i, j := 0, j0; i < covered; i++ {
		ex[j] = math.Exp(sc[j] - m)
		if j++; j == R {
			j = 0
		}
	}
	for r, j := lo, j0; r < hi; r++ {
		sum += ex[j]
		if j++; j == R {
			j = 0
		}
	}
	if sinks != nil {
		sum += math.Exp(sinks[hq] - m)
	}
	for i, j := 0, j0; i < covered; i++ {
		ex[j] /= sum
		if j++; j == R {
			j = 0
		}
	}
	clear(wh)
	for r, j := lo, j0; r < hi; r++ {
		wh[j] += ex[j]
		if j++; j == R {
			j = 0
		}
	}
	return m, sum
}
