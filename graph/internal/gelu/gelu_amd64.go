//go:build amd64 && !purego

package gelu

import "golang.org/x/sys/cpu"

var haveAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// have512: the exact GELU's loops also run sixteen at a time (AVX-512F).
var have512 = haveAsm && cpu.X86.HasAVX512F

// forwardAVX2 is Forward for n elements, n a multiple of 8.
//
//go:noescape
func forwardAVX2(y, x *float32, n int)

// backwardAVX2 is Backward for n elements, n a multiple of 8.
//
//go:noescape
func backwardAVX2(dx, x, dy *float32, n int)

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
