// Package expf is e^x in float32 arithmetic, the one definition that the
// float32 graph uses: Exp for one element, Exps, Softmax and LogSumExp
// eight at a time with AVX2 (expf_amd64.s), built from the same operations in the
// same order, so that every path gives the same bits (TestVectorMatchesGo).
// Package gelu's assembly keeps its own copy of the polynomial, with FMA,
// for e^(−x²/2) (see exact_amd64.s there).
package expf

import "math"

// Cephes' expf: x = n·ln2 + r with |r| ≤ ln2/2, e^r by a degree-6
// polynomial, 2ⁿ built in the exponent bits.
const (
	log2e = 1.44269504088896341
	ln2Hi = 0.693359375 // ln2 = ln2Hi + ln2Lo, ln2Hi short enough that n·ln2Hi is exact
	ln2Lo = -2.12194440e-4
	// Below expLo e^x is subnormal: 0 is returned instead (a softmax term
	// under 1.2e-38). Above expHi it is beyond float32.
	expLo = -87.33654475
	expHi = 88.72283905206835
	ep0   = 1.9875691500e-4
	ep1   = 1.3981999507e-3
	ep2   = 8.3334519073e-3
	ep3   = 4.1665795894e-2
	ep4   = 1.6666665459e-1
	ep5   = 5.0000001201e-1
)

// Exp is e^x in float32 arithmetic, within 2 float32 ulps of math.Exp
// (TestExp) and four times cheaper than math.Exp in float64. Below −87.34
// it is 0, above 88.72 +Inf.
//
// The explicit float32 conversions keep the compiler from fusing a
// multiplication and an addition into one FMA (which it may do on
// GOAMD64=v3): the vector code rounds after each operation too, and the
// two must agree bit for bit.
func Exp(x float32) float32 {
	switch {
	case x > expHi:
		return float32(math.Inf(1))
	case x < expLo:
		return 0
	case x != x:
		return x
	}
	n := float32(math.Floor(float64(float32(x*log2e) + 0.5)))
	r := float32(x-float32(n*ln2Hi)) - float32(n*ln2Lo)
	p := float32(ep0)
	p = float32(p*r) + ep1
	p = float32(p*r) + ep2
	p = float32(p*r) + ep3
	p = float32(p*r) + ep4
	p = float32(p*r) + ep5
	y := float32(float32(float32(p*r)*r)+r) + 1
	// 2ⁿ as two factors 2^(n/2)·2^(n−n/2): n reaches 128 near expHi, and
	// 2¹²⁸ is not a float32. Both products are exact unless the result
	// overflows, so this is y·2ⁿ rounded once.
	k := int32(n) >> 1
	return y * pow2(k) * pow2(int32(n)-k)
}

// pow2 is 2ᵏ for −126 ≤ k ≤ 127, built in the exponent bits.
func pow2(k int32) float32 { return math.Float32frombits(uint32(k+127) << 23) }

// Exps sets y[i] = Exp(x[i] − shift).
func Exps(y, x []float32, shift float32) {
	y = y[:len(x)]
	i := 0
	if haveAsm && len(x) >= 8 {
		i = len(x) &^ 7
		expsAVX2(&y[0], &x[0], i, shift)
	}
	for ; i < len(x); i++ {
		y[i] = Exp(x[i] - shift)
	}
}

// LogSumExp is log Σ e^x of a row, shifted by its max m: m + log Σ
// Exp(x − m), the sum in float64 as Softmax's (eight partial sums, one
// fixed order). x must be non-empty and hold no NaN.
func LogSumExp(x []float32) float64 {
	var m float32
	var sum float64
	if haveAsm {
		m, sum = sumExpAVX2(&x[0], len(x))
	} else {
		m, sum = sumExpGo(x)
	}
	return float64(m) + math.Log(sum)
}

// sumExpGo returns the max m of x and Σ Exp(x − m).
func sumExpGo(x []float32) (m float32, sum float64) {
	m = rowMax(x)
	var sums [8]float64
	for i, v := range x {
		sums[i%8] += float64(Exp(v - m))
	}
	return m, sumLanes(&sums)
}

func rowMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	for _, v := range x {
		m = max(m, v)
	}
	return m
}

// Softmax replaces the scores s by softmax(s·scale), shifted by the row
// max first (scale > 0, so the max of s is the max of s·scale). The sum
// runs in float64 in eight partial sums, element i into sum i%8, added up
// in a fixed order: the bits depend on the row only. s must hold no NaN.
func Softmax(s []float32, scale float32) {
	if len(s) == 0 {
		return
	}
	if haveAsm {
		softmaxAVX2(&s[0], len(s), scale)
		return
	}
	softmaxGo(s, scale)
}

func softmaxGo(s []float32, scale float32) {
	maxv := rowMax(s)
	var sums [8]float64
	for i, v := range s {
		e := Exp((v - maxv) * scale)
		s[i] = e
		sums[i%8] += float64(e)
	}
	inv := float32(1 / sumLanes(&sums))
	for i, v := range s {
		s[i] = v * inv
	}
}

// sumLanes adds eight partial sums in the order of the vector code's
// horizontal sum.
func sumLanes(s *[8]float64) float64 {
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}
