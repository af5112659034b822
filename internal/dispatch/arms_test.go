package dispatch

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/ktune/ktune/internal/results"
)

// armsRecords makes one shape measured at nkvs by configs, medians drawn
// from rng: each configuration wins somewhere, so the unlimited table has
// many ranges. skip drops one configuration's record at one nkv.
func armsRecords(rng *rand.Rand, nkvs []int, configs []fixConfig, skip map[[2]int]bool) []results.Record {
	var recs []results.Record
	for ni, n := range nkvs {
		for ci, c := range configs {
			if skip[[2]int{ci, ni}] {
				continue
			}
			med := float64(n) * (1 + 0.5*rng.Float64())
			recs = append(recs, fixRecord(fixShape1, n, fixSamples{c, noisy(med, uint64(ni*10+ci+1))}))
		}
	}
	return recs
}

var armsConfigs = []fixConfig{
	{variant: "a", kernel: "a", splits: 8, landed: true},
	{variant: "b", kernel: "b", splits: 16},
	{variant: "c", kernel: "c", splits: 32},
	{variant: "d", kernel: "d", splits: 64},
}

// cost sums log(arm median / fastest median) over the measured nkv.
// The table minimises the cost against each nkv's winner, which differs
// from this one by a constant (the winners' own cost), so both have the
// same minimum.
func cost(t *testing.T, limited *Table, nkvs []int, med [][]float64) float64 {
	s := 0.0
	for _, r := range limited.Shapes[0].Ranges {
		for _, p := range r.Picks {
			if p.MedianNS == 0 {
				t.Fatalf("nkv %d unmeasured in a fully measured shape", p.NKV)
			}
			j := slices.Index(nkvs, p.NKV)
			w := math.Inf(1)
			for c := range med {
				w = min(w, med[c][j])
			}
			s += math.Log(p.MedianNS / w)
		}
	}
	return s
}

// bruteCost is the least cost over every split of the nkv into at most k
// contiguous ranges, each given one configuration.
func bruteCost(med [][]float64, k int) float64 {
	m := len(med[0])
	best := math.Inf(1)
	var walk func(start, left int, acc float64)
	walk = func(start, left int, acc float64) {
		if start == m {
			best = min(best, acc)
			return
		}
		if left == 0 {
			return
		}
		for end := start + 1; end <= m; end++ {
			for c := range med {
				s := 0.0
				for j := start; j < end; j++ {
					w := math.Inf(1)
					for cc := range med {
						w = min(w, med[cc][j])
					}
					s += math.Log(med[c][j] / w)
				}
				walk(end, left-1, acc+s)
			}
		}
	}
	walk(0, k, 0)
	return best
}

// Properties of the arm limit, over random measurements: at most k ranges;
// the least cost any split into k ranges has (brute force); never worse
// with one more arm; and the unlimited table itself once k allows it.
func TestMaxArmsProperties(t *testing.T) {
	nkvs := []int{1, 64, 512, 2048, 8192, 32768}
	for seed := range uint64(8) {
		rng := rand.New(rand.NewPCG(seed, 7))
		recs := armsRecords(rng, nkvs, armsConfigs, nil)
		free, err := Build(recs, nil, Options{})
		if err != nil {
			t.Fatal(err)
		}
		// Medians as the table sees them, per configuration and nkv.
		med := make([][]float64, len(armsConfigs))
		for i := range recs {
			for ci, c := range armsConfigs {
				if recs[i].Config.Variant == c.variant {
					med[ci] = append(med[ci], recs[i].Probes[0].Summary.Median)
				}
			}
		}
		prev := math.Inf(1)
		for k := 1; k <= 4; k++ {
			tab, err := Build(recs, nil, Options{MaxArms: k})
			if err != nil {
				t.Fatal(err)
			}
			rs := tab.Shapes[0].Ranges
			if len(rs) > k {
				t.Fatalf("seed %d, %d arms: %d ranges", seed, k, len(rs))
			}
			c := cost(t, tab, nkvs, med)
			// Where the unlimited table fits, it stands as decide made it
			// (its ties need not pick the lowest median).
			if bc := bruteCost(med, k); len(free.Shapes[0].Ranges) > k && math.Abs(c-bc) > 1e-9 {
				t.Errorf("seed %d, %d arms: cost %.4f, the least possible is %.4f", seed, k, c, bc)
			}
			if c > prev+1e-9 {
				t.Errorf("seed %d: %d arms cost %.4f > %.4f with one fewer", seed, k, c, prev)
			}
			prev = c
			if len(tab.Shapes[0].Missing) != 0 {
				t.Errorf("seed %d: missing points %v in a fully measured shape", seed, tab.Shapes[0].Missing)
			}
			if len(free.Shapes[0].Ranges) <= k && !sameRanges(tab.Shapes[0].Ranges, free.Shapes[0].Ranges) {
				t.Errorf("seed %d, %d arms: the unlimited table fits but was changed", seed, k)
			}
		}
	}
}

func sameRanges(a, b []Range) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Variant != b[i].Variant || a[i].MinNKV != b[i].MinNKV || a[i].MaxNKV != b[i].MaxNKV {
			return false
		}
	}
	return true
}

// An arm not measured at an nkv of the shape is named there.
func TestMaxArmsNamesMissingPoints(t *testing.T) {
	nkvs := []int{1, 512, 8192, 32768}
	rng := rand.New(rand.NewPCG(3, 7))
	// Configuration b is never measured at nkv 512 (index 1).
	recs := armsRecords(rng, nkvs, armsConfigs, map[[2]int]bool{{1, 1}: true})
	tab, err := Build(recs, nil, Options{MaxArms: 2})
	if err != nil {
		t.Fatal(err)
	}
	arms := map[string]bool{}
	for _, r := range tab.Shapes[0].Ranges {
		arms[r.Variant] = true
	}
	named := false
	for _, m := range tab.Shapes[0].Missing {
		if !arms[m.Variant] {
			t.Errorf("missing point %+v names a configuration that is not an arm", m)
		}
		if m.Variant == "b" && m.NKV == 512 && m.Spec == "fixture" {
			named = true
		}
	}
	if arms["b"] != named {
		t.Errorf("arms %v, missing %+v: b's missing nkv 512 named %v", arms, tab.Shapes[0].Missing, named)
	}
}

// Weighted by a workload, one arm goes to where the traffic is: all of
// it at the first nkv gives that nkv's winner, all at the last the
// last's; an error of the weights (a bucket beyond the measured range)
// is the table's.
func TestMaxArmsWeights(t *testing.T) {
	nkvs := []int{1, 512, 32768}
	configs := armsConfigs[:3]
	var recs []results.Record
	for ni, n := range nkvs {
		for ci, c := range configs {
			med := 100.0
			if ci == ni {
				med = 50 // configuration i wins at nkv i
			}
			recs = append(recs, fixRecord(fixShape1, n, fixSamples{c, noisy(med*float64(ni+1), uint64(ni*10+ci+1))}))
		}
	}
	for at, want := range map[int]string{0: "a", 2: "c"} {
		weights := func(batch int, got []int) ([]float64, error) {
			w := make([]float64, len(got))
			w[at] = 1
			return w, nil
		}
		tab, err := Build(recs, nil, Options{MaxArms: 1, Weights: weights})
		if err != nil {
			t.Fatal(err)
		}
		if rs := tab.Shapes[0].Ranges; len(rs) != 1 || rs[0].Variant != want {
			t.Errorf("all traffic at nkv %d: ranges %+v, want one of %s", nkvs[at], rs, want)
		}
	}
	bad := func(int, []int) ([]float64, error) { return nil, errors.New("bucket beyond the measured range") }
	if _, err := Build(recs, nil, Options{MaxArms: 1, Weights: bad}); err == nil || !strings.Contains(err.Error(), "beyond the measured range") {
		t.Errorf("weights error: %v", err)
	}
}
