package search

import (
	"errors"
	"math"
	"slices"
)

// A gp is a Gaussian-process regression of y over x in [0,1]^d. Its
// covariance is a sum of Matérn-5/2 kernels that share one length scale
// per dimension (ARD), each over its own dimensions and with a variance
// of its own, plus noise: one over every dimension, and, when the model
// gives a split of the dimensions (the configuration's and nkv's), one
// over each side. That is the structure of kernel times: log time is
// close to a(nkv) + b(configuration) + c(both) — every configuration
// slows with nkv alike, a configuration faster at one nkv is mostly
// faster at the next — and a product kernel alone learns either only
// from many points: a configuration not yet measured would fall back to
// the mean of every nkv.
//
// The hyperparameters are fitted by maximising the log marginal
// likelihood plus weak log-normal priors (a MAP estimate), by gradient
// ascent: with a handful of points the priors keep the length scales
// from running to the edges of the space.
//
// Matérn-5/2 rather than the squared exponential: kernel times move in
// steps (a split count that crosses the SM count, a tile that stops
// fitting), and the squared exponential's infinitely smooth functions
// over-smooth them.
type gp struct {
	masks [][]bool // each term's dimensions; nil: all
	x     [][]float64
	y     []float64 // standardised
	mean  float64   // of the raw y
	scale float64   // of the raw y
	// theta is log ℓ_1..d, log σn, then log σ of each term.
	theta []float64
	chol  [][]float64
	alpha []float64
}

// Priors and bounds of the hyperparameters, on the standardised y and
// the [0,1] inputs.
const (
	gpLogLenMean = -0.7 // ℓ ≈ 0.5: half the range of an axis
	gpLogLenSD   = 1.5
	gpLogSigMean = 0
	gpLogSigSD   = 1
	// A floor on the noise: recorded medians repeat within about 1%, which
	// on a standardised log time is of the order of 1e-2.
	gpMinLogNoise = -6.0
	gpMaxLogNoise = 0.0
)

// newGP returns an unfitted process over d dimensions with the priors'
// means as hyperparameters. split, if it marks some dimensions and not
// all, adds a kernel over the marked ones and one over the others.
func newGP(d int, split []bool) *gp {
	masks := [][]bool{nil}
	if slices.Contains(split, true) && slices.Contains(split, false) {
		other := make([]bool, len(split))
		for i, v := range split {
			other[i] = !v
		}
		masks = append(masks, split, other)
	}
	th := make([]float64, d+1+len(masks))
	for i := range d {
		th[i] = gpLogLenMean
	}
	th[d] = -3
	for t := range masks {
		th[d+1+t] = gpLogSigMean
	}
	return &gp{theta: th, masks: masks}
}

// fit sets the data, runs iters steps of Adam on the hyperparameters
// (starting from the current ones: a refit after a few more points moves
// little) and factorises the covariance.
func (g *gp) fit(x [][]float64, y []float64, iters int) error {
	if len(x) == 0 {
		return errors.New("fitting a surrogate: no points")
	}
	g.x = x
	g.mean, g.scale = meanSD(y)
	g.y = make([]float64, len(y))
	for i, v := range y {
		g.y[i] = (v - g.mean) / g.scale
	}
	const lr, b1, b2 = 0.05, 0.9, 0.999
	m := make([]float64, len(g.theta))
	v := make([]float64, len(g.theta))
	for t := 1; t <= iters; t++ {
		grad, err := g.gradient()
		if err != nil {
			break // keep the last hyperparameters that factorised
		}
		for i := range g.theta {
			m[i] = b1*m[i] + (1-b1)*grad[i]
			v[i] = b2*v[i] + (1-b2)*grad[i]*grad[i]
			mh := m[i] / (1 - math.Pow(b1, float64(t)))
			vh := v[i] / (1 - math.Pow(b2, float64(t)))
			g.theta[i] += lr * mh / (math.Sqrt(vh) + 1e-8) // ascent
		}
		g.clamp()
	}
	return g.factor()
}

func (g *gp) dims() int { return len(g.theta) - 1 - len(g.masks) }

func (g *gp) clamp() {
	d := g.dims()
	for i := range d {
		g.theta[i] = min(max(g.theta[i], -4), 3)
	}
	g.theta[d] = min(max(g.theta[d], gpMinLogNoise), gpMaxLogNoise)
	for t := range g.masks {
		g.theta[d+1+t] = min(max(g.theta[d+1+t], -4), 3)
	}
}

func meanSD(y []float64) (float64, float64) {
	var s float64
	for _, v := range y {
		s += v
	}
	mean := s / float64(len(y))
	var ss float64
	for _, v := range y {
		ss += (v - mean) * (v - mean)
	}
	sd := math.Sqrt(ss / float64(len(y)))
	if sd < 1e-9 {
		sd = 1
	}
	return mean, sd
}

// matern returns the Matérn-5/2 correlation of a and b over the
// dimensions in mask (nil: all) and the factor dk that gives its
// derivative by log ℓ_i as dk·(a_i−b_i)²/ℓ_i².
func (g *gp) matern(a, b []float64, mask []bool) (k, dk float64) {
	var r2 float64
	for i := range a {
		if mask != nil && !mask[i] {
			continue
		}
		d := (a[i] - b[i]) / math.Exp(g.theta[i])
		r2 += d * d
	}
	r := math.Sqrt(r2)
	s5 := math.Sqrt(5) * r
	e := math.Exp(-s5)
	return (1 + s5 + 5*r2/3) * e, 5.0 / 3 * (1 + s5) * e
}

// cov is the covariance of a and b without noise; terms, if not nil,
// receives each term's value and derivative factor.
func (g *gp) cov(a, b []float64, terms [][2]float64) float64 {
	d := g.dims()
	var k float64
	for t, mask := range g.masks {
		s2 := math.Exp(2 * g.theta[d+1+t])
		c, dc := g.matern(a, b, mask)
		k += s2 * c
		if terms != nil {
			terms[t] = [2]float64{s2 * c, s2 * dc}
		}
	}
	return k
}

// gradient is the gradient of the log posterior of the hyperparameters:
// ½ tr((ααᵀ − K⁻¹) ∂K/∂θ) plus the priors'.
func (g *gp) gradient() ([]float64, error) {
	n, d, nt := len(g.x), g.dims(), len(g.masks)
	sn2 := math.Exp(2 * g.theta[d])
	k := square(n)
	terms := make([][][][2]float64, n) // [i][j][term]
	for i := range n {
		terms[i] = make([][][2]float64, i+1)
		for j := 0; j <= i; j++ {
			terms[i][j] = make([][2]float64, nt)
			c := g.cov(g.x[i], g.x[j], terms[i][j])
			k[i][j], k[j][i] = c, c
		}
		k[i][i] += sn2 + 1e-8
	}
	l, err := cholesky(k)
	if err != nil {
		return nil, err
	}
	alpha := cholSolve(l, g.y)
	kinv := cholInverse(l)
	w := func(i, j int) float64 { return alpha[i]*alpha[j] - kinv[i][j] } // ααᵀ − K⁻¹
	grad := make([]float64, len(g.theta))
	for dim := range d {
		l2 := math.Exp(2 * g.theta[dim])
		var s float64
		for i := range n {
			for j := range i {
				diff := g.x[i][dim] - g.x[j][dim]
				if diff == 0 {
					continue
				}
				var f float64
				for t, mask := range g.masks {
					if mask == nil || mask[dim] {
						f += terms[i][j][t][1]
					}
				}
				s += 2 * w(i, j) * f * diff * diff / l2
			}
		}
		grad[dim] = s/2 - (g.theta[dim]-gpLogLenMean)/(gpLogLenSD*gpLogLenSD)
	}
	var sn float64
	sig := make([]float64, nt)
	for i := range n {
		sn += w(i, i) * 2 * sn2
		for j := 0; j <= i; j++ {
			mult := 2.0 // both (i, j) and (j, i)
			if i == j {
				mult = 1
			}
			for t := range nt {
				sig[t] += mult * w(i, j) * 2 * terms[i][j][t][0]
			}
		}
	}
	grad[d] = sn / 2
	for t := range nt {
		grad[d+1+t] = sig[t]/2 - (g.theta[d+1+t]-gpLogSigMean)/(gpLogSigSD*gpLogSigSD)
	}
	return grad, nil
}

// factor factorises K for predictions.
func (g *gp) factor() error {
	n, d := len(g.x), g.dims()
	sn2 := math.Exp(2 * g.theta[d])
	k := square(n)
	for i := range n {
		for j := 0; j <= i; j++ {
			c := g.cov(g.x[i], g.x[j], nil)
			k[i][j], k[j][i] = c, c
		}
		k[i][i] += sn2 + 1e-8
	}
	l, err := cholesky(k)
	if err != nil {
		return err
	}
	g.chol, g.alpha = l, cholSolve(l, g.y)
	return nil
}

// predict returns the posterior mean and standard deviation of the raw y
// at x.
func (g *gp) predict(x []float64) (mu, sd float64) {
	n := len(g.x)
	ks := make([]float64, n)
	for i := range n {
		ks[i] = g.cov(x, g.x[i], nil)
		mu += ks[i] * g.alpha[i]
	}
	prior := g.cov(x, x, nil)
	v := forward(g.chol, ks)
	var vv float64
	for _, e := range v {
		vv += e * e
	}
	sd = math.Sqrt(max(prior-vv, 1e-12))
	return g.mean + g.scale*mu, g.scale * sd
}

func square(n int) [][]float64 {
	m := make([][]float64, n)
	for i := range m {
		m[i] = make([]float64, n)
	}
	return m
}

// cholesky returns the lower factor L of a symmetric positive definite a.
func cholesky(a [][]float64) ([][]float64, error) {
	n := len(a)
	l := square(n)
	for j := range n {
		s := a[j][j]
		for k := range j {
			s -= l[j][k] * l[j][k]
		}
		if s <= 0 || math.IsNaN(s) {
			return nil, errors.New("covariance not positive definite")
		}
		l[j][j] = math.Sqrt(s)
		for i := j + 1; i < n; i++ {
			s := a[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			l[i][j] = s / l[j][j]
		}
	}
	return l, nil
}

// forward solves L v = b.
func forward(l [][]float64, b []float64) []float64 {
	v := make([]float64, len(b))
	for i := range b {
		s := b[i]
		for k := range i {
			s -= l[i][k] * v[k]
		}
		v[i] = s / l[i][i]
	}
	return v
}

// backward solves Lᵀ x = v.
func backward(l [][]float64, v []float64) []float64 {
	n := len(v)
	x := make([]float64, n)
	for i := n - 1; i >= 0; i-- {
		s := v[i]
		for k := i + 1; k < n; k++ {
			s -= l[k][i] * x[k]
		}
		x[i] = s / l[i][i]
	}
	return x
}

// cholSolve solves (L Lᵀ) x = b.
func cholSolve(l [][]float64, b []float64) []float64 { return backward(l, forward(l, b)) }

// cholInverse returns (L Lᵀ)⁻¹.
func cholInverse(l [][]float64) [][]float64 {
	n := len(l)
	inv := square(n)
	e := make([]float64, n)
	for j := range n {
		clear(e)
		e[j] = 1
		col := cholSolve(l, e)
		for i := range n {
			inv[i][j] = col[i]
		}
	}
	return inv
}
