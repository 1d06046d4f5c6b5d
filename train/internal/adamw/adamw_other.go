//go:build !amd64 || purego

package adamw

import "math"

var haveAsm = false

func sqrt(x float64) float64 { return math.Sqrt(x) }

func update32AVX2(w, grad *float32, m, v *float64, n int, c *Coefs) { panic("unreachable") }
