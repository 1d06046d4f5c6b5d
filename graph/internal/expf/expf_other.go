//go:build !amd64 || purego

package expf

var haveAsm = false

func expsAVX2(y, x *float32, n int, shift float32)    { panic("unreachable") }
func sumExpAVX2(x *float32, n int) (float32, float64) { panic("unreachable") }
func softmaxAVX2(s *float32, n int, scale float32)    { panic("unreachable") }
