//go:build !amd64 || purego

package gelu

var haveAsm, have512 = false, false

func forwardAVX2(y, x *float32, n int)              { panic("unreachable") }
func backwardAVX2(dx, x, dy *float32, n int)        { panic("unreachable") }
func exactForwardAVX2(y, x *float32, n int)         { panic("unreachable") }
func exactBackwardAVX2(dx, x, dy *float32, n int)   { panic("unreachable") }
func exactForwardAVX512(y, x *float32, n int)       { panic("unreachable") }
func exactBackwardAVX512(dx, x, dy *float32, n int) { panic("unreachable") }
