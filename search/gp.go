package search

import (
	"errors"
	"math"
)

// A gp is a Gaussian-process regression of y over x in [0,1]^d with a
// Matérn-5/2 kernel, one length scale per dimension (ARD), a signal and a
// noise variance. Its hyperparameters are fitted by maximising the log
// marginal likelihood plus weak log-normal priors (a MAP estimate), by
// gradient ascent: with a handful of points the priors keep the length
// scales from running to the edges of the space.
//
// Matérn-5/2 rather than the squared exponential: kernel times move in
// steps (a split count that crosses the SM count, a tile that stops
// fitting), and the squared exponential's infinitely smooth functions
// over-smooth them.
type gp struct {
	x      [][]float64
	y      []float64 // standardised
	mean   float64   // of the raw y
	scale  float64   // of the raw y
	theta  []float64 // log ℓ_1..d, log σf, log σn
	chol   [][]float64
	alpha  []float64
	kernel func(a, b []float64) float64
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
// means as hyperparameters.
func newGP(d int) *gp {
	th := make([]float64, d+2)
	for i := range d {
		th[i] = gpLogLenMean
	}
	th[d], th[d+1] = gpLogSigMean, -3
	return &gp{theta: th}
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

func (g *gp) clamp() {
	d := len(g.theta) - 2
	for i := range d {
		g.theta[i] = min(max(g.theta[i], -4), 3)
	}
	g.theta[d] = min(max(g.theta[d], -3), 3)
	g.theta[d+1] = min(max(g.theta[d+1], gpMinLogNoise), gpMaxLogNoise)
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

// matern returns the Matérn-5/2 correlation and, through dk, the factor
// that gives its derivative by log ℓ_i as dk·(a_i−b_i)²/ℓ_i².
func (g *gp) matern(a, b []float64) (k, dk float64) {
	var r2 float64
	for i := range a {
		l := math.Exp(g.theta[i])
		d := (a[i] - b[i]) / l
		r2 += d * d
	}
	r := math.Sqrt(r2)
	s5 := math.Sqrt(5) * r
	e := math.Exp(-s5)
	return (1 + s5 + 5*r2/3) * e, 5.0 / 3 * (1 + s5) * e
}

// covariance builds K = σf²·C + σn²·I and the derivative factors.
func (g *gp) covariance() (k, dk [][]float64) {
	n, d := len(g.x), len(g.theta)-2
	sf2, sn2 := math.Exp(2*g.theta[d]), math.Exp(2*g.theta[d+1])
	k, dk = square(n), square(n)
	for i := range n {
		for j := 0; j <= i; j++ {
			c, dc := g.matern(g.x[i], g.x[j])
			k[i][j], k[j][i] = sf2*c, sf2*c
			dk[i][j], dk[j][i] = sf2*dc, sf2*dc
		}
		k[i][i] += sn2 + 1e-8
	}
	return k, dk
}

// gradient is the gradient of the log posterior of the hyperparameters:
// ½ tr((ααᵀ − K⁻¹) ∂K/∂θ) plus the priors'.
func (g *gp) gradient() ([]float64, error) {
	n, d := len(g.x), len(g.theta)-2
	k, dk := g.covariance()
	l, err := cholesky(k)
	if err != nil {
		return nil, err
	}
	alpha := cholSolve(l, g.y)
	kinv := cholInverse(l)
	// w = ααᵀ − K⁻¹
	w := square(n)
	for i := range n {
		for j := range n {
			w[i][j] = alpha[i]*alpha[j] - kinv[i][j]
		}
	}
	grad := make([]float64, d+2)
	for dim := range d {
		l2 := math.Exp(2 * g.theta[dim])
		var s float64
		for i := range n {
			for j := range i {
				diff := g.x[i][dim] - g.x[j][dim]
				s += 2 * w[i][j] * dk[i][j] * diff * diff / l2
			}
		}
		grad[dim] = s/2 - (g.theta[dim]-gpLogLenMean)/(gpLogLenSD*gpLogLenSD)
	}
	sn2 := math.Exp(2 * g.theta[d+1])
	var sf, sn float64
	for i := range n {
		for j := range n {
			kf := k[i][j]
			if i == j {
				kf -= sn2 + 1e-8
				sn += w[i][i] * 2 * sn2
			}
			sf += w[i][j] * 2 * kf
		}
	}
	grad[d] = sf/2 - (g.theta[d]-gpLogSigMean)/(gpLogSigSD*gpLogSigSD)
	grad[d+1] = sn / 2
	return grad, nil
}

// factor factorises K for predictions.
func (g *gp) factor() error {
	k, _ := g.covariance()
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
	n, d := len(g.x), len(g.theta)-2
	sf2 := math.Exp(2 * g.theta[d])
	ks := make([]float64, n)
	for i := range n {
		c, _ := g.matern(x, g.x[i])
		ks[i] = sf2 * c
		mu += ks[i] * g.alpha[i]
	}
	v := forward(g.chol, ks)
	var vv float64
	for _, e := range v {
		vv += e * e
	}
	sd = math.Sqrt(max(sf2-vv, 1e-12))
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
