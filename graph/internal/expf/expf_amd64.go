//go:build amd64 && !purego

package expf

import "golang.org/x/sys/cpu"

var haveAsm = cpu.X86.HasAVX2

// expsAVX2 is Exps for n elements, n a multiple of 8.
//
//go:noescape
func expsAVX2(y, x *float32, n int, shift float32)

// sumExpAVX2 is sumExpGo for a row of n ≥ 1 elements.
//
//go:noescape
func sumExpAVX2(x *float32, n int) (m float32, sum float64)

// softmaxAVX2 is Softmax for a row of n ≥ 1 elements.
//
//go:noescape
func softmaxAVX2(s *float32, n int, scale float32)
