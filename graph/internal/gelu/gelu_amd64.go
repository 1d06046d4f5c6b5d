//go:build amd64 && !purego

package gelu

import "golang.org/x/sys/cpu"

var haveAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// have512: the exact GELU's loops also run sixteen at a time (AVX-512F).
var have512 = haveAsm && cpu.X86.HasAVX512F

// exactAsm: the exact GELU has assembly here (AVX2, AVX-512F) when
// haveAsm (and have512) say the CPU runs it.
const exactAsm = true

// vecLen is the number of elements forwardVec and backwardVec take at once.
const vecLen = 8

// forwardVec is Forward for n elements, n a multiple of 8 (AVX2, FMA).
//
//go:noescape
func forwardVec(y, x *float32, n int)

// backwardVec is Backward for n elements, n a multiple of 8 (AVX2, FMA).
//
//go:noescape
func backwardVec(dx, x, dy *float32, n int)

// exactForwardAVX2 is ExactForward for n elements, n a multiple of 8.
//
//go:noescape
func exactForwardAVX2(y, x *float32, n int)

// exactBackwardAVX2 is ExactBackward for n elements, n a multiple of 8.
//
//go:noescape
func exactBackwardAVX2(dx, x, dy *float32, n int)

// exactForwardAVX512 is ExactForward for n elements, n a multiple of 16.
//
//go:noescape
func exactForwardAVX512(y, x *float32, n int)

// exactBackwardAVX512 is ExactBackward for n elements, n a multiple of 16.
//
//go:noescape
func exactBackwardAVX512(dx, x, dy *float32, n int)
