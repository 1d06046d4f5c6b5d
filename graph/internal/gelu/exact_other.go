//go:build !amd64 || purego

package gelu

// The exact GELU's assembly is amd64's: elsewhere (exactAsm false) these
// are never called.
func exactForwardAVX2(y, x *float32, n int)         { panic("unreachable") }
func exactBackwardAVX2(dx, x, dy *float32, n int)   { panic("unreachable") }
func exactForwardAVX512(y, x *float32, n int)       { panic("unreachable") }
func exactBackwardAVX512(dx, x, dy *float32, n int) { panic("unreachable") }
