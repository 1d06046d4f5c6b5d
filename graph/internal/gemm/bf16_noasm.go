package gemm

import "unsafe"

// haveBF16 reports whether the CPU runs the AVX512_BF16 kernel.
var haveBF16 = false

func bf16Avx512(kp int, a, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool) {
	panic("unreachable")
}
