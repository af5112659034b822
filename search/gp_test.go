package search

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestGPFindsKnownOptimum fits the process to a smooth function of two
// variables whose minimum is known, from a random design, and checks
// that the posterior mean is accurate away from the data and that its
// minimum over a fine grid lies where the function's does.
func TestGPFindsKnownOptimum(t *testing.T) {
	f := func(x []float64) float64 {
		return math.Log(1+20*(x[0]-0.3)*(x[0]-0.3)+10*(x[1]-0.7)*(x[1]-0.7)) + 0.2*x[0]
	}
	// The true minimum, by a fine grid.
	var tx, ty float64
	tbest := math.Inf(1)
	for i := 0; i <= 200; i++ {
		for j := 0; j <= 200; j++ {
			x := []float64{float64(i) / 200, float64(j) / 200}
			if v := f(x); v < tbest {
				tbest, tx, ty = v, x[0], x[1]
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	var xs [][]float64
	var ys []float64
	for range 40 {
		x := []float64{r.Float64(), r.Float64()}
		xs, ys = append(xs, x), append(ys, f(x))
	}
	g := newGP(2, nil)
	if err := g.fit(xs, ys, 200); err != nil {
		t.Fatal(err)
	}
	var sse float64
	held := 200
	for range held {
		x := []float64{r.Float64(), r.Float64()}
		mu, _ := g.predict(x)
		sse += (mu - f(x)) * (mu - f(x))
	}
	_, sdY := meanSD(ys)
	if rmse := math.Sqrt(sse / float64(held)); rmse > 0.1*sdY {
		t.Errorf("held-out RMSE %.3g, more than a tenth of the data's spread %.3g", rmse, sdY)
	}
	var mx, my float64
	mbest := math.Inf(1)
	for i := 0; i <= 100; i++ {
		for j := 0; j <= 100; j++ {
			x := []float64{float64(i) / 100, float64(j) / 100}
			if mu, _ := g.predict(x); mu < mbest {
				mbest, mx, my = mu, x[0], x[1]
			}
		}
	}
	if d := math.Hypot(mx-tx, my-ty); d > 0.08 {
		t.Errorf("the model's minimum (%.2f, %.2f) is %.2f from the function's (%.2f, %.2f)", mx, my, d, tx, ty)
	}
	// At a measured point the posterior is the measurement, nearly sure.
	mu, sd := g.predict(xs[0])
	if math.Abs(mu-ys[0]) > 0.02 || sd > 0.05 {
		t.Errorf("at a data point: %.4f ± %.4f, measured %.4f", mu, sd, ys[0])
	}
}

// TestGPGradient checks the analytic gradient of the log posterior
// against central differences, for the plain and the split kernel.
func TestGPGradient(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var xs [][]float64
	var ys []float64
	for range 12 {
		x := []float64{r.Float64(), r.Float64(), r.Float64()}
		xs, ys = append(xs, x), append(ys, math.Sin(3*x[0])+x[1]*x[2])
	}
	for _, split := range [][]bool{nil, {false, true, true}} {
		g := newGP(3, split)
		for i := range g.theta {
			g.theta[i] += 0.1 * float64(i%3)
		}
		if err := g.fit(xs, ys, 0); err != nil {
			t.Fatal(err)
		}
		grad, err := g.gradient()
		if err != nil {
			t.Fatal(err)
		}
		for i := range g.theta {
			const h = 1e-5
			old := g.theta[i]
			g.theta[i] = old + h
			up := g.logPosterior(t)
			g.theta[i] = old - h
			down := g.logPosterior(t)
			g.theta[i] = old
			num := (up - down) / (2 * h)
			if math.Abs(num-grad[i]) > 1e-4*(1+math.Abs(num)) {
				t.Errorf("split %v, θ[%d]: gradient %.6g, finite difference %.6g", split, i, grad[i], num)
			}
		}
	}
}

// logPosterior is what gradient differentiates: the log marginal
// likelihood of the standardised data plus the log priors (constants
// left out).
func (g *gp) logPosterior(t *testing.T) float64 {
	t.Helper()
	n, d := len(g.x), g.dims()
	sn2 := math.Exp(2 * g.theta[d])
	k := square(n)
	for i := range n {
		for j := range n {
			k[i][j] = g.cov(g.x[i], g.x[j], nil)
		}
		k[i][i] += sn2 + 1e-8
	}
	l, err := cholesky(k)
	if err != nil {
		t.Fatal(err)
	}
	alpha := cholSolve(l, g.y)
	var fit, logdet float64
	for i := range n {
		fit += g.y[i] * alpha[i]
		logdet += 2 * math.Log(l[i][i])
	}
	lp := -fit/2 - logdet/2
	for i := range d {
		z := (g.theta[i] - gpLogLenMean) / gpLogLenSD
		lp -= z * z / 2
	}
	for tm := range g.masks {
		z := (g.theta[d+1+tm] - gpLogSigMean) / gpLogSigSD
		lp -= z * z / 2
	}
	return lp
}
