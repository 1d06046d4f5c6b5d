//go:build !amd64 || purego

package gelu

// The AVX-512 loops are amd64's: elsewhere (have512 false) these are never
// called.
func exactForwardAVX512(y, x *float32, n int)       { panic("unreachable") }
func exactBackwardAVX512(dx, x, dy *float32, n int) { panic("unreachable") }
