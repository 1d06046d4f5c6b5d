//go:build arm64 && !purego

package layernorm

// Every arm64 core has NEON.
var haveAsm = true

// The loops of layernorm.go for n elements, n a multiple of 8, n > 0
// (layernorm_arm64.s).

//go:noescape
func sums8(x *float32, n int, s *[8]float64)

//go:noescape
func squaredDeviations8(x *float32, n int, mean float64, s *[8]float64)

// normalize8: b may be nil.
//
//go:noescape
func normalize8(y, x, w, b *float32, n int, mean, rstd float64)

//go:noescape
func gradSums8(x, w, dy *float32, n int, mean, rstd float64, s *[16]float64)

//go:noescape
func backwardX8(dx, x, w, dy *float32, n int, mean, rstd, mg, mgn float64)

//go:noescape
func accumulateW8(dw, x, dy *float32, n int, mean, rstd float64)
