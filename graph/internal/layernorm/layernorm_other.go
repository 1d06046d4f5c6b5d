//go:build !amd64 || purego

package layernorm

var haveAsm = false

func sumsAVX2(x *float32, n int, s *[8]float64)                            { panic("unreachable") }
func squaredDeviationsAVX2(x *float32, n int, mean float64, s *[8]float64) { panic("unreachable") }
func normalizeAVX2(y, x, w, b *float32, n int, mean, rstd float64)         { panic("unreachable") }
func gradSumsAVX2(x, w, dy *float32, n int, mean, rstd float64, s *[16]float64) {
	panic("unreachable")
}
func backwardXAVX2(dx, x, w, dy *float32, n int, mean, rstd, mg, mgn float64) { panic("unreachable") }
func accumulateWAVX2(dw, x, dy *float32, n int, mean, rstd float64)           { panic("unreachable") }
