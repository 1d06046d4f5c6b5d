//go:build !amd64 || purego

package gelu

var haveAsm = false

func forwardAVX2(y, x *float32, n int)            { panic("unreachable") }
func backwardAVX2(dx, x, dy *float32, n int)      { panic("unreachable") }
func exactForwardAVX2(y, x *float32, n int)       { panic("unreachable") }
func exactBackwardAVX2(dx, x, dy *float32, n int) { panic("unreachable") }
