package gelu

import "github.com/gptg/gptg/graph/internal/expf"

// The exact GELU (PyTorch's nn.GELU(), nanoGPT's) uses the normal CDF Φ
// instead of the tanh curve:
//
//	gelu(x) = x·Φ(x) = ½x(1 + erf(x/√2))
//	gelu′(x) = Φ(x) + x·φ(x),  φ(x) = e^(−x²/2)/√(2π)
//
// erf is Eigen's float32 rational approximation (generic_fast_erf_float,
// the same coefficients as XLA's EmitErfF32) clamped to [−1, 1], within 6
// float32 ulps of math.Erf (TestErf); e^(−x²/2) is expf.Exp (Cephes'
// expf). Sixteen elements go at once with AVX-512F, eight with AVX2 and
// FMA (exact_amd64.s; the two give the same bits), four with NEON on arm64
// (exact_arm64.s, which gives the Go loops' bits there, as gelu.go says);
// elsewhere, with the build tag purego, and for the last len%vecLen
// elements, the plain loops below do the same arithmetic.

// ExactForward sets y[i] = x[i]·Φ(x[i]).
func ExactForward(y, x []float32) {
	y = y[:len(x)]
	i := 0
	if have512 && len(x) >= 16 {
		i = len(x) &^ 15
		exactForwardAVX512(&y[0], &x[0], i)
	}
	if n := (len(x) - i) &^ (vecLen - 1); haveAsm && n > 0 {
		exactForwardVec(&y[i], &x[i], n)
		i += n
	}
	for ; i < len(x); i++ {
		y[i] = exactForward(x[i])
	}
}

// ExactBackward sets dx[i] = dy[i]·(Φ(x[i]) + x[i]·φ(x[i])).
func ExactBackward(dx, x, dy []float32) {
	dx, dy = dx[:len(x)], dy[:len(x)]
	i := 0
	if have512 && len(x) >= 16 {
		i = len(x) &^ 15
		exactBackwardAVX512(&dx[0], &x[0], &dy[0], i)
	}
	if n := (len(x) - i) &^ (vecLen - 1); haveAsm && n > 0 {
		exactBackwardVec(&dx[i], &x[i], &dy[i], n)
		i += n
	}
	for ; i < len(x); i++ {
		dx[i] = dy[i] * exactDerivative(x[i])
	}
}

const (
	invSqrt2   = 0.7071067811865476 // 1/√2
	invSqrt2Pi = 0.3989422804014327 // 1/√(2π)
)

func exactForward(x float32) float32 {
	h := 0.5 * x
	return h*erf(x*invSqrt2) + h
}

// exactDerivative: e^(−x²/2) reaches 0 exactly once |x| > 13.25 and erf
// ±1 once |x| > 5.42, so far out gelu′ is exactly 0 or 1, as in float64.
func exactDerivative(x float32) float32 {
	cdf := 0.5*erf(x*invSqrt2) + 0.5
	return cdf + x*expf.Exp(-0.5*x*x)*invSqrt2Pi
}

// erf(x) ≈ x·p(x²)/q(x²), p of degree 4 and q of degree 6 in x². From
// erfSat on float32 erf rounds to ±1 (erfSat = erfinv(1 − 2⁻²⁴)).
const (
	erfSat = 3.832506856900711
	ea1    = 1.128379143519084
	ea3    = 0.18520832239976145
	ea5    = 0.050955695062380861
	ea7    = 0.0034082910107109506
	ea9    = 0.00022905065861350646
	eb0    = 1.0
	eb2    = 0.49746925110067538
	eb4    = 0.11098505178285362
	eb6    = 0.014070470171167667
	eb8    = 0.0010179625278914885
	eb10   = 0.000023547966471313185
	eb12   = -1.1791602954361697e-7
)

func erf(x float32) float32 {
	switch {
	case x >= erfSat:
		return 1
	case x <= -erfSat:
		return -1
	}
	x2 := x * x
	p := x2*ea9 + ea7
	p = x2*p + ea5
	p = x2*p + ea3
	p = x2*p + ea1
	q := x2*eb12 + eb10
	q = x2*q + eb8
	q = x2*q + eb6
	q = x2*q + eb4
	q = x2*q + eb2
	q = x2*q + eb0
	// Near erfSat the quotient overshoots ±1 by a few ulps: Φ = ½(1 + erf)
	// would turn slightly negative, and with it GELU's sign far left.
	return max(-1, min(1, x*p/q))
}
