//go:build !amd64 || purego

package gemm

import "unsafe"

// Without assembly (other architectures, or -tags purego) every product
// runs the Go micro-kernel; the functions below are never called.
const bestPath = pathGo

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

func dot4F32(k int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer) { panic("unreachable") }

// caches reports nothing here: the blocks keep kernelTable's sizes.
func caches() cacheSizes { return cacheSizes{} }
