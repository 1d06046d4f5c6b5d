//go:build arm64 && !purego

package gelu

// Every arm64 core has NEON; AVX-512 is amd64's.
var haveAsm, have512 = true, false

// vecLen is the number of elements the loops below take at once.
const vecLen = 4

// forwardVec is Forward for n elements, n a multiple of 4 (NEON).
//
//go:noescape
func forwardVec(y, x *float32, n int)

// backwardVec is Backward for n elements, n a multiple of 4 (NEON).
//
//go:noescape
func backwardVec(dx, x, dy *float32, n int)

// exactForwardVec is ExactForward for n elements, n a multiple of 4 (NEON).
//
//go:noescape
func exactForwardVec(y, x *float32, n int)

// exactBackwardVec is ExactBackward for n elements, n a multiple of 4
// (NEON).
//
//go:noescape
func exactBackwardVec(dx, x, dy *float32, n int)
