//go:build arm64 && !purego

package gelu

// Every arm64 core has NEON; the exact GELU has no assembly here.
var haveAsm, have512 = true, false

const (
	exactAsm = false
	vecLen   = 4
)

// forwardVec is Forward for n elements, n a multiple of 4 (NEON).
//
//go:noescape
func forwardVec(y, x *float32, n int)

// backwardVec is Backward for n elements, n a multiple of 4 (NEON).
//
//go:noescape
func backwardVec(dx, x, dy *float32, n int)
