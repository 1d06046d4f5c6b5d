//go:build !amd64 || purego

package gemm

import "unsafe"

// Without assembly every bfloat16 product runs the Go twin; the functions
// below are never called.
const haveBF16 = false

func bf16Avx512(kp int, a unsafe.Pointer, aRow, aStep int, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int) {
	panic("unreachable")
}

func bf16Pack(dst unsafe.Pointer, w int, row0, row1 unsafe.Pointer, step, n, pairs int) {
	panic("unreachable")
}

func bf16Rows(dst unsafe.Pointer, ldDst int, src unsafe.Pointer, ldSrc, n, rows int, chains bool) {
	panic("unreachable")
}

func dot4BF16(chunks int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer) { panic("unreachable") }

func peakBF16(n int) { panic("unreachable") }
