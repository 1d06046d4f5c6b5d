//go:build arm64 && !purego

package adamw

import "math"

// Every arm64 core has NEON; AVX-512 is amd64's.
var haveAsm, have512 = true, false

func sqrt(x float64) float64 { return math.Sqrt(x) }

// update32x4 is update for float32 parameters, n a multiple of 4.
//
//go:noescape
func update32x4(w, grad *float32, m, v *float32, n int, c *Coefs)

// update32AVX512 is never called here (have512 is false).
func update32AVX512(w, grad *float32, m, v *float32, n int, c *Coefs) { panic("unreachable") }

// sumSquares32x8 adds grad[j]² to s[j%8] in float64, n a multiple of 8.
//
//go:noescape
func sumSquares32x8(grad *float32, n int, s *[8]float64)

// scale32x8 is Scale for n entries, n a multiple of 8.
//
//go:noescape
func scale32x8(grad *float32, n int, c float64)
