//go:build !amd64 || purego

package gemm

import "unsafe"

// Without the amd64 assembly (other architectures, or -tags purego) the
// functions below are never called; kernel_noasm.go and kernel_arm64.go
// say which kernels run instead.
var haveAVX = false

func avx512F32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int) {
	panic("unreachable")
}
func avx512F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int) {
	panic("unreachable")
}
func avx2F32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int) {
	panic("unreachable")
}
func avx2F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int) {
	panic("unreachable")
}

func transposeF32(dst *float32, dstStride int, src *float32, srcStride int, blocks int) {
	panic("unreachable")
}

func copyRows64B(dst, src unsafe.Pointer, ld, n int)  { panic("unreachable") }
func copyRows128B(dst, src unsafe.Pointer, ld, n int) { panic("unreachable") }

func addF32(dst, src unsafe.Pointer, n int) { panic("unreachable") }
