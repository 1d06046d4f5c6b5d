// Package gelu computes GELU in its tanh form, and its derivative, for
// float32 slices: after the matrix products the largest cost of a training
// step, when computed one element at a time (two tanh per element per step).
//
//	gelu(x) = ½x(1 + tanh(u)),  u = c(x + 0.044715x³),  c = √(2/π)
//	gelu′(x) = ½(1 + t) + ½x(1 − t²)·c(1 + 3·0.044715x²),  t = tanh(u)
//
// tanh is Eigen's float32 rational approximation (ptanh_float), accurate to
// a few float32 ulps. On amd64 with AVX2 and FMA eight elements go at once
// (gelu_amd64.s), on arm64 four with NEON (gelu_arm64.s); elsewhere, with
// the build tag purego, and for the last len%vecLen elements, the plain
// loops below do the same arithmetic. On amd64 the assembly fuses
// multiply-adds that the Go loops round twice, so the last bit may differ;
// on arm64 the Go compiler fuses x*y + z and the assembly fuses exactly
// those, so the two give the same bits. exact.go does the same for the
// exact GELU, x·Φ(x) with erf.
package gelu

// Formula constants.
const (
	a = 0.044715
	c = 0.7978845608028654 // √(2/π)
)

// Forward sets y[i] = gelu(x[i]).
func Forward(y, x []float32) {
	y = y[:len(x)]
	i := 0
	if haveAsm && len(x) >= vecLen {
		i = len(x) &^ (vecLen - 1)
		forwardVec(&y[0], &x[0], i)
	}
	for ; i < len(x); i++ {
		y[i] = forward(x[i])
	}
}

// Backward sets dx[i] = dy[i]·gelu′(x[i]).
func Backward(dx, x, dy []float32) {
	dx, dy = dx[:len(x)], dy[:len(x)]
	i := 0
	if haveAsm && len(x) >= vecLen {
		i = len(x) &^ (vecLen - 1)
		backwardVec(&dx[0], &x[0], &dy[0], i)
	}
	for ; i < len(x); i++ {
		dx[i] = dy[i] * derivative(x[i])
	}
}

func forward(x float32) float32 {
	return 0.5 * x * (1 + tanh(c*(x+a*x*x*x)))
}

func derivative(x float32) float32 {
	t := tanh(c * (x + a*x*x*x))
	return 0.5 * (1 + t + x*(1-t*t)*c*(1+3*a*x*x))
}

// Eigen's ptanh_float: tanh(x) ≈ x·p(x²)/q(x²) on [−clamp, clamp]. Past
// clamp the approximation stays a few ulps short of ±1, where float32 tanh
// is ±1 from sat on: returning exactly ±1 there keeps 1 − t² at 0 and so
// the derivative of a saturated GELU at 0 (or 1), as PyTorch's.
const (
	sat   = 9.02
	clamp = 7.99881172180175781
	a1    = 4.89352455891786e-03
	a3    = 6.37261928875436e-04
	a5    = 1.48572235717979e-05
	a7    = 5.12229709037114e-08
	a9    = -8.60467152213735e-11
	a11   = 2.00018790482477e-13
	a13   = -2.76076847742355e-16
	b0    = 4.89352518554385e-03
	b2    = 2.26843463243900e-03
	b4    = 1.18534705686654e-04
	b6    = 1.19825839466702e-06
)

func tanh(x float32) float32 {
	switch {
	case x >= sat:
		return 1
	case x <= -sat:
		return -1
	}
	x = max(-clamp, min(clamp, x))
	x2 := x * x
	p := x2*a13 + a11
	p = x2*p + a9
	p = x2*p + a7
	p = x2*p + a5
	p = x2*p + a3
	p = x2*p + a1
	q := x2*b6 + b4
	q = x2*q + b2
	q = x2*q + b0
	return x * p / q
}
