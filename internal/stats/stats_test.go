package stats

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	cases := []struct {
		name string
		in   []float64
		want Summary
	}{
		// 1..5: h = 4p → Q1 = x[1] = 2, median = x[2] = 3, Q3 = x[3] = 4.
		{"odd", []float64{5, 1, 4, 2, 3}, Summary{N: 5, Median: 3, Min: 1, Max: 5, Q1: 2, Q3: 4, RelNoise: 2.0 / 3}},
		// 10,20,30,40: h = 3p → Q1 at 0.75: 10+0.75·10 = 17.5; median at
		// 1.5: 25; Q3 at 2.25: 30+0.25·10 = 32.5; noise 15/25.
		{"even", []float64{40, 10, 30, 20}, Summary{N: 4, Median: 25, Min: 10, Max: 40, Q1: 17.5, Q3: 32.5, RelNoise: 0.6}},
		{"one", []float64{7}, Summary{N: 1, Median: 7, Min: 7, Max: 7, Q1: 7, Q3: 7}},
		{"outlier barely moves quartiles", []float64{100, 100, 100, 100, 1e6}, Summary{N: 5, Median: 100, Min: 100, Max: 1e6, Q1: 100, Q3: 100}},
		{"empty", nil, Summary{}},
		{"zeros", []float64{0, 0}, Summary{N: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := append([]float64(nil), c.in...)
			got := Summarize(in)
			if math.Abs(got.RelNoise-c.want.RelNoise) > 1e-12 {
				t.Errorf("RelNoise %v, want %v", got.RelNoise, c.want.RelNoise)
			}
			got.RelNoise = c.want.RelNoise
			if got != c.want {
				t.Errorf("Summarize(%v) = %+v, want %+v", c.in, got, c.want)
			}
			for i := range in {
				if in[i] != c.in[i] {
					t.Fatal("Summarize reordered its input")
				}
			}
		})
	}
}

func TestRule(t *testing.T) {
	r := Rule{MinSamples: 3, MaxSamples: 6, MaxNoise: 0.05, Budget: time.Second}
	quiet := []float64{100, 101, 99, 100}
	noisy := []float64{100, 150, 80, 120}
	cases := []struct {
		name      string
		samples   []float64
		elapsed   time.Duration
		more      bool
		converged bool
		note      string // substring; "" means no note
	}{
		{"nothing yet", nil, 2 * time.Second, true, false, ""},
		{"quiet but below min", quiet[:2], 0, true, false, ""},
		{"quiet at min", quiet[:3], 0, false, true, ""},
		{"noisy within budget", noisy, 0, true, false, ""},
		{"noisy out of budget", noisy, time.Second, false, false, "time budget 1s spent after 4 samples: noise"},
		{"quiet but below min out of budget", quiet[:2], time.Second, false, false, "fewer than the 3 samples"},
		{"noisy at max samples", append(noisy, 90, 140), 0, false, false, "6-sample limit"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := r.Decide(c.samples, c.elapsed)
			if v.More != c.more || v.Converged != c.converged {
				t.Fatalf("Decide = %+v, want more=%v converged=%v", v, c.more, c.converged)
			}
			if c.note == "" && v.Note != "" || !strings.Contains(v.Note, c.note) {
				t.Errorf("note %q, want one containing %q", v.Note, c.note)
			}
		})
	}
}

func TestRuleNoLimits(t *testing.T) {
	// Budget 0 and MaxSamples 0 mean no limit: a noisy set keeps going.
	r := Rule{MinSamples: 1, MaxNoise: 0.01}
	if v := r.Decide([]float64{1, 2, 3, 4, 5, 6, 7, 8}, time.Hour); !v.More {
		t.Errorf("Decide = %+v, want more", v)
	}
}
