package graph

import "math"

// exp32 is e^x in float32 arithmetic, Cephes' expf: x = n·ln2 + r with
// |r| ≤ ln2/2, e^r by a degree-6 polynomial, 2^n put into the exponent
// bits. Within 2 float32 ulps of math.Exp (TestExp32), and four times
// cheaper than math.Exp in float64 — which the attention softmax of a
// float32 graph calls for every unmasked score, and which there was the
// largest cost after the matrix products. Below −87.3 the result would be
// subnormal: 0 is returned instead (a softmax term under 1e-38).
func exp32(x float32) float32 {
	const (
		log2e = 1.44269504088896341
		c1    = 0.693359375
		c2    = -2.12194440e-4
	)
	switch {
	case x > 88.72283905206835:
		return float32(math.Inf(1))
	case x < -87.33654475:
		return 0
	case x != x:
		return x
	}
	n := float32(math.Floor(float64(x*log2e + 0.5)))
	r := x - n*c1 - n*c2
	p := float32(1.9875691500e-4)
	p = p*r + 1.3981999507e-3
	p = p*r + 8.3334519073e-3
	p = p*r + 4.1665795894e-2
	p = p*r + 1.6666665459e-1
	p = p*r + 5.0000001201e-1
	y := p*r*r + r + 1
	if n > 127 { // 2^128 is not a float32; e^x still is, up to 88.72
		return 2 * y * math.Float32frombits(uint32(int32(n)+126)<<23)
	}
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}
