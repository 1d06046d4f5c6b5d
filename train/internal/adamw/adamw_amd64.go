//go:build amd64 && !purego

package adamw

import (
	"math"

	"golang.org/x/sys/cpu"
)

var (
	haveAsm = cpu.X86.HasAVX2
	have512 = haveAsm && cpu.X86.HasAVX512F // update32AVX512
)

func sqrt(x float64) float64 { return math.Sqrt(x) }

// update32x4 is update for float32 parameters, n a multiple of 4.
//
//go:noescape
func update32x4(w, grad *float32, m, v *float32, n int, c *Coefs)

// update32AVX512 is update for float32 parameters, n a multiple of 8.
//
//go:noescape
func update32AVX512(w, grad *float32, m, v *float32, n int, c *Coefs)

// sumSquares32x8 adds grad[j]² to s[j%8] in float64, n a multiple of 8.
//
//go:noescape
func sumSquares32x8(grad *float32, n int, s *[8]float64)

// scale32x8 is Scale for n entries, n a multiple of 8.
//
//go:noescape
func scale32x8(grad *float32, n int, c float64)
