//go:build !amd64 || purego

package gemm

import "unsafe"

// Without assembly every bfloat16 product runs the Go twin; the functions
// below are never called.
const haveBF16 = false

func bf16Avx512(kp int, a, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, strips int) {
	panic("unreachable")
}

func bf16Pack(dst unsafe.Pointer, w int, row0, row1 unsafe.Pointer, ld, n, pairs int) {
	panic("unreachable")
}

func peakBF16(n int) { panic("unreachable") }
