//go:build amd64 && !purego

package gelu

import "golang.org/x/sys/cpu"

var haveAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// have512: the exact GELU's loops also run sixteen at a time (AVX-512F).
var have512 = haveAsm && cpu.X86.HasAVX512F

// vecLen is the number of elements the …Vec loops take at once.
const vecLen = 8

// forwardVec is Forward for n elements, n a multiple of 8 (AVX2, FMA).
//
//go:noescape
func forwardVec(y, x *float32, n int)

// backwardVec is Backward for n elements, n a multiple of 8 (AVX2, FMA).
//
//go:noescape
func backwardVec(dx, x, dy *float32, n int)

// exactForwardVec is ExactForward for n elements, n a multiple of 8 (AVX2,
// FMA).
//
//go:noescape
func exactForwardVec(y, x *float32, n int)

// exactBackwardVec is ExactBackward for n elements, n a multiple of 8
// (AVX2, FMA).
//
//go:noescape
func exactBackwardVec(dx, x, dy *float32, n int)

// exactForwardAVX512 is ExactForward for n elements, n a multiple of 16.
//
//go:noescape
func exactForwardAVX512(y, x *float32, n int)

// exactBackwardAVX512 is ExactBackward for n elements, n a multiple of 16.
//
//go:noescape
func exactBackwardAVX512(dx, x, dy *float32, n int)
