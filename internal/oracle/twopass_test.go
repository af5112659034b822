package oracle

import (
	"fmt"
	"math"
	"runtime"
	"sync"
)

// twoPassReference is the oracle as it was before References: one call
// per length, a plain two-pass softmax per (sequence, head). The tests
// keep it to show that References gives the same bits at every length
// whatever else it is asked in the same call.
func twoPassReference(in *Inputs, nkv []int) ([]float64, error) {
	s := in.Shape
	if len(nkv) != s.Batch {
		return nil, fmt.Errorf("oracle: %d context lengths for batch %d", len(nkv), s.Batch)
	}
	for b, n := range nkv {
		if n < 0 || n > in.Rows {
			return nil, fmt.Errorf("oracle: sequence %d: nkv %d outside the %d generated rows", b, n, in.Rows)
		}
	}
	d := s.HeadDim
	group := s.Heads / s.KVHeads
	scale := 1 / math.Sqrt(float64(d))
	out := make([]float64, s.Batch*s.Heads*d)
	// One (sequence, head) per job: each writes only its own output row and
	// sums in the same order whatever the number of workers, so the result
	// does not depend on the parallelism. The gates call this at every
	// length of every input set, where it is most of their host time.
	head := func(b, h int) {
		n := nkv[b]
		scores := make([]float64, n)
		q := in.Q[(b*s.Heads+h)*d : (b*s.Heads+h+1)*d]
		kh := h / group
		max := math.Inf(-1)
		for r := 0; r < n; r++ {
			k := in.KRow(b, r, kh)
			dot := 0.0
			for i := range d {
				dot += float64(q[i]) * k[i]
			}
			scores[r] = dot * scale
			max = math.Max(max, scores[r])
		}
		// Subtracting the max only guards exp against overflow; in float64
		// it changes nothing else.
		sum := 0.0
		for r := range scores {
			scores[r] = math.Exp(scores[r] - max)
			sum += scores[r]
		}
		o := out[(b*s.Heads+h)*d : (b*s.Heads+h+1)*d]
		for r := 0; r < n; r++ {
			v := in.VRow(b, r, kh)
			w := scores[r] / sum
			for i := range d {
				o[i] += w * v[i]
			}
		}
	}
	jobs := make(chan [2]int)
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), s.Batch*s.Heads) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				head(j[0], j[1])
			}
		}()
	}
	for b := 0; b < s.Batch; b++ {
		for h := 0; h < s.Heads; h++ {
			jobs <- [2]int{b, h}
		}
	}
	close(jobs)
	wg.Wait()
	return out, nil
}
