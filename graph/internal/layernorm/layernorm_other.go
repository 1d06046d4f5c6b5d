//go:build !(amd64 || arm64) || purego

package layernorm

var haveAsm = false

func sums8(x *float32, n int, s *[8]float64)                            { panic("unreachable") }
func squaredDeviations8(x *float32, n int, mean float64, s *[8]float64) { panic("unreachable") }
func normalize8(y, x, w, b *float32, n int, mean, rstd float64)         { panic("unreachable") }
func gradSums8(x, w, dy *float32, n int, mean, rstd float64, s *[16]float64) {
	panic("unreachable")
}
func backwardX8(dx, x, w, dy *float32, n int, mean, rstd, mg, mgn float64) { panic("unreachable") }
func accumulateW8(dw, x, dy *float32, n int, mean, rstd float64)           { panic("unreachable") }
