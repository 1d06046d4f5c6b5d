//go:build !(amd64 || arm64) || purego

package gelu

var haveAsm, have512 = false, false

const vecLen = 8

func forwardVec(y, x *float32, n int)            { panic("unreachable") }
func backwardVec(dx, x, dy *float32, n int)      { panic("unreachable") }
func exactForwardVec(y, x *float32, n int)       { panic("unreachable") }
func exactBackwardVec(dx, x, dy *float32, n int) { panic("unreachable") }
