// Package layernorm holds the float32 row kernels of layer normalisation,
// eight elements at a time with AVX2 (layernorm_amd64.s) or NEON
// (layernorm_arm64.s) and a Go twin (other architectures, the build tag
// purego, and the last len%8 elements of a row). Statistics, sums and the per-element arithmetic run in
// float64, as package graph's float64 path does; only inputs and outputs
// are float32.
//
// Every sum runs in eight partial sums, element j into sum j%8, added up in
// one fixed order (sumLanes): the bits depend on the row only, never on how
// rows or columns are split over threads, and the assembly and the Go twin
// agree bit for bit (no FMA on either side: the Go twin rounds each product
// with an explicit conversion, so that the compiler cannot fuse it).
package layernorm

import "math"

// RowStats returns a row's mean and 1/√(var + eps), the variance biased as
// nn.LayerNorm's.
func RowStats(x []float32, eps float64) (mean, rstd float64) {
	var s [8]float64
	n, i := len(x), 0
	if haveAsm && n >= 8 {
		i = n &^ 7
		sums8(&x[0], i, &s)
	}
	for ; i < n; i++ {
		s[i%8] += float64(x[i])
	}
	mean = sumLanes(&s) / float64(n)
	s, i = [8]float64{}, 0
	if haveAsm && n >= 8 {
		i = n &^ 7
		squaredDeviations8(&x[0], i, mean, &s)
	}
	for ; i < n; i++ {
		d := float64(x[i]) - mean
		s[i%8] += float64(d * d)
	}
	return mean, 1 / math.Sqrt(sumLanes(&s)/float64(n)+eps)
}

// Normalize sets y = (x − mean)·rstd·w + b; without a bias (b nil) it
// stops at ·w.
func Normalize(y, x, w, b []float32, mean, rstd float64) {
	n, i := len(x), 0
	y, w = y[:n], w[:n]
	var bp *float32
	if b != nil {
		b = b[:n]
		if n > 0 {
			bp = &b[0]
		}
	}
	if haveAsm && n >= 8 {
		i = n &^ 7
		normalize8(&y[0], &x[0], &w[0], bp, i, mean, rstd)
	}
	for ; i < n; i++ {
		v := float64(float64(float64(float64(x[i])-mean)*rstd) * float64(w[i]))
		if b != nil {
			v += float64(b[i])
		}
		y[i] = float32(v)
	}
}

// BackwardX sets dx, the gradient of a row's input: with n = (x − mean)·rstd
// and g = dy⊙w, dx = (g − mean(g) − n·mean(g⊙n))·rstd.
func BackwardX(dx, x, w, dy []float32, mean, rstd float64) {
	n, i := len(x), 0
	dx, w, dy = dx[:n], w[:n], dy[:n]
	var s [16]float64 // Σg in s[:8], Σg⊙n in s[8:]
	if haveAsm && n >= 8 {
		i = n &^ 7
		gradSums8(&x[0], &w[0], &dy[0], i, mean, rstd, &s)
	}
	for ; i < n; i++ {
		g := float64(float64(dy[i]) * float64(w[i]))
		s[i%8] += g
		s[8+i%8] += float64(float64(g*(float64(x[i])-mean)) * rstd)
	}
	mg := sumLanes((*[8]float64)(s[:8])) / float64(n)
	mgn := sumLanes((*[8]float64)(s[8:])) / float64(n)
	i = 0
	if haveAsm && n >= 8 {
		i = n &^ 7
		backwardX8(&dx[0], &x[0], &w[0], &dy[0], i, mean, rstd, mg, mgn)
	}
	for ; i < n; i++ {
		norm := float64(float64(x[i])-mean) * rstd
		g := float64(float64(dy[i]) * float64(w[i]))
		dx[i] = float32(float64(g-mg-float64(norm*mgn)) * rstd)
	}
}

// AccumulateW adds one row's share of the weight gradient,
// dw += dy⊙(x − mean)·rstd, each term rounded to float32 and added in
// float32.
func AccumulateW(dw, x, dy []float32, mean, rstd float64) {
	n, i := len(x), 0
	dw, dy = dw[:n], dy[:n]
	if haveAsm && n >= 8 {
		i = n &^ 7
		accumulateW8(&dw[0], &x[0], &dy[0], i, mean, rstd)
	}
	for ; i < n; i++ {
		dw[i] += float32(float64(float64(dy[i])*(float64(x[i])-mean)) * rstd)
	}
}

// sumLanes adds eight partial sums in the order of the assembly's
// horizontal sums.
func sumLanes(s *[8]float64) float64 {
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}
