package adamw

// SumSquares is Σ g² in float64, for the global gradient norm that
// gradient clipping needs before every update: a pass over every gradient
// entry, like the update itself. Eight partial sums (entry j into sum
// j%8), added up in one fixed order, so the bits depend only on g; on
// amd64 with AVX2 and on arm64 (NEON) eight entries go at once
// (sumSquares32x8), bit-identical to the loop below
// (TestSumSquaresAssemblyMatchesGo).
func SumSquares(g []float32) float64 {
	var s [8]float64
	i := 0
	if haveAsm && len(g) >= 8 {
		i = len(g) &^ 7
		sumSquares32x8(&g[0], i, &s)
	}
	for ; i < len(g); i++ {
		// float64(…) rounds the square before the sum, as the assembly
		// does: no FMA on either path.
		s[i%8] += float64(float64(g[i]) * float64(g[i]))
	}
	return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]))
}

// Scale sets g[i] = float32(float64(g[i])·c), clipping's second pass (when
// the norm is above the limit), eight entries at a time on amd64 with AVX2
// and on arm64, bit-identical to the loop (one product, rounded once to float32).
func Scale(g []float32, c float64) {
	i := 0
	if haveAsm && len(g) >= 8 {
		i = len(g) &^ 7
		scale32x8(&g[0], i, c)
	}
	for ; i < len(g); i++ {
		g[i] = float32(float64(g[i]) * c)
	}
}
