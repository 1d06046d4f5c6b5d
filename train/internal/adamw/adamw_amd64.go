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

// update32AVX2 is update for float32 parameters, n a multiple of 4.
//
//go:noescape
func update32AVX2(w, grad *float32, m, v *float32, n int, c *Coefs)

// update32AVX512 is update for float32 parameters, n a multiple of 8.
//
//go:noescape
func update32AVX512(w, grad *float32, m, v *float32, n int, c *Coefs)

// sumSquares32AVX2 adds grad[j]² to s[j%8] in float64, n a multiple of 8.
//
//go:noescape
func sumSquares32AVX2(grad *float32, n int, s *[8]float64)

// scale32AVX2 is Scale for n entries, n a multiple of 8.
//
//go:noescape
func scale32AVX2(grad *float32, n int, c float64)
