//go:build !amd64 || purego

package gemm

var haveAsm = false

func kernelF32(k int, a *float32, aRow, aStep int, b *float32, bStep int, c *float32, ldc int, accumulate bool) {
	panic("unreachable")
}

func kernelF64(k int, a *float64, aRow, aStep int, b *float64, bStep int, c *float64, ldc int, accumulate bool) {
	panic("unreachable")
}

func transpose8F32(dst *float32, dstStride int, src *float32, srcStride int) { panic("unreachable") }
