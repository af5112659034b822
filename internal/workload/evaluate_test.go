package workload

import (
	"strings"
	"testing"
)

// noisy returns n samples around v (±1%, deterministic).
func noisy(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v * (1 + 0.01*float64(i%5-2)/2)
	}
	return out
}

func side(batch int, pts map[int]float64) Side {
	c := Curve{}
	for n, v := range pts {
		c[n] = noisy(v, 20)
	}
	return Side{batch: c}
}

func wl(bs ...Bucket) *Workload {
	w := &Workload{Buckets: bs}
	if err := w.normalize(); err != nil {
		panic(err)
	}
	return w
}

func TestEvaluateInterpolatesAndRefuses(t *testing.T) {
	t.Parallel()
	cand := side(1, map[int]float64{100: 10, 300: 30})
	base := side(1, map[int]float64{100: 20, 300: 60})
	ev := Evaluate(wl(Bucket{1, 200, 1, ""}, Bucket{1, 400, 1, ""}, Bucket{4, 100, 2, ""}), cand, base, Options{Threshold: 0.02, Resamples: 200})
	if len(ev.Buckets) != 1 || len(ev.Refused) != 2 {
		t.Fatalf("buckets %+v refused %+v, want 1 evaluated and 2 refused", ev.Buckets, ev.Refused)
	}
	b := ev.Buckets[0]
	if !b.Interpolated || b.From != 100 || b.To != 300 || !near(b.Cand.Center, 20) || !near(b.Base.Center, 40) {
		t.Errorf("bucket at nkv 200: %+v, want interpolated 100–300 at 20 and 40", b)
	}
	if !near(ev.Covered, 0.25) {
		t.Errorf("covered %g, want 0.25 (the other buckets refused)", ev.Covered)
	}
	if !strings.Contains(ev.Refused[0].Reason, "outside the candidate's measured range 100–300") ||
		!strings.Contains(ev.Refused[1].Reason, "not measured at batch 4") {
		t.Errorf("refusals %+v", ev.Refused)
	}
}

func TestEvaluateFindsHiddenRegression(t *testing.T) {
	t.Parallel()
	cand := side(1, map[int]float64{512: 13, 8192: 50, 32768: 270})
	base := side(1, map[int]float64{512: 12.5, 8192: 90, 32768: 550})
	w := wl(Bucket{1, 512, 2, ""}, Bucket{1, 8192, 30, ""}, Bucket{1, 32768, 68, ""})
	ev := Evaluate(w, cand, base, Options{Threshold: 0.02, Resamples: 500})
	if !(ev.Ratio.Hi < 0.6) {
		t.Errorf("weighted ratio %+v, want about 0.5", ev.Ratio)
	}
	if !ev.Buckets[0].Regressed || ev.Buckets[1].Regressed || ev.Buckets[2].Regressed {
		t.Errorf("regressed: %v %v %v, want only the nkv 512 bucket", ev.Buckets[0].Regressed, ev.Buckets[1].Regressed, ev.Buckets[2].Regressed)
	}
	if !near(ev.RegressedWeight, 0.02) {
		t.Errorf("regressed weight %g, want 0.02", ev.RegressedWeight)
	}
	// Within the threshold, the same bucket does not regress.
	if ev := Evaluate(w, cand, base, Options{Threshold: 0.05, Resamples: 200}); ev.RegressedWeight != 0 {
		t.Errorf("threshold 5%%: regressed weight %g, want 0 (the bucket is 4%% slower)", ev.RegressedWeight)
	}
}

// Metamorphic: scaling every candidate sample by k scales the candidate's
// times and every ratio by k, intervals included, and leaves the
// baseline alone; the interval always holds its estimate.
func TestEvaluateScalesWithTheCandidate(t *testing.T) {
	t.Parallel()
	cand := side(1, map[int]float64{1: 7, 512: 16, 8192: 77})
	base := side(1, map[int]float64{1: 9, 512: 17, 8192: 137})
	w := wl(Bucket{1, 1, 1, ""}, Bucket{1, 2048, 5, ""}, Bucket{1, 8192, 4, ""})
	a := Evaluate(w, cand, base, Options{Resamples: 300})
	const k = 1.5
	scaled := Side{1: Curve{}}
	for n, s := range cand[1] {
		for _, v := range s {
			scaled[1][n] = append(scaled[1][n], v*k)
		}
	}
	b := Evaluate(w, scaled, base, Options{Resamples: 300})
	rel := func(x, y float64) bool { return x == y || (x-y)/y < 1e-9 && (y-x)/y < 1e-9 }
	for _, p := range [][2]Estimate{{a.Cand, b.Cand}, {a.Ratio, b.Ratio}} {
		if !rel(p[0].Center*k, p[1].Center) || !rel(p[0].Lo*k, p[1].Lo) || !rel(p[0].Hi*k, p[1].Hi) {
			t.Errorf("scaled by %g: %+v → %+v", k, p[0], p[1])
		}
	}
	if a.Base != b.Base {
		t.Errorf("baseline moved: %+v → %+v", a.Base, b.Base)
	}
	for _, e := range []Estimate{a.Cand, a.Base, a.Ratio, b.Ratio} {
		if !(e.Lo <= e.Center && e.Center <= e.Hi) {
			t.Errorf("interval %+v does not hold its estimate", e)
		}
	}
}

func TestSpread(t *testing.T) {
	t.Parallel()
	w := wl(Bucket{1, 100, 1, ""}, Bucket{1, 200, 2, ""}, Bucket{16, 50, 1, ""})
	got, err := w.Spread(1, []int{100, 300})
	if err != nil || !near(got[0], 0.25+0.25) || !near(got[1], 0.25) {
		t.Errorf("spread %v, %v: want [0.5 0.25] (the batch-16 quarter elsewhere)", got, err)
	}
	if _, err := w.Spread(1, []int{150, 300}); err == nil || !strings.Contains(err.Error(), "outside the measured nkv 150–300") {
		t.Errorf("a bucket below the measured range: %v", err)
	}
}
