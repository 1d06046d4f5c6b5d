//go:build !amd64 || purego

package adamw

import "math"

var haveAsm, have512 = false, false

func sqrt(x float64) float64 { return math.Sqrt(x) }

func update32AVX2(w, grad *float32, m, v *float32, n int, c *Coefs)   { panic("unreachable") }
func update32AVX512(w, grad *float32, m, v *float32, n int, c *Coefs) { panic("unreachable") }

func sumSquares32AVX2(grad *float32, n int, s *[8]float64) { panic("unreachable") }
func scale32AVX2(grad *float32, n int, c float64)          { panic("unreachable") }
