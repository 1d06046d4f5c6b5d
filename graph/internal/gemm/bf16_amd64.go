//go:build amd64 && !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// haveBF16 reports whether the CPU runs the bfloat16 kernels of
// bf16_amd64.s: AVX512_BF16 (VDPBF16PS, VCVTNE2PS2BF16) and AVX512BW
// (VPERMW, word masks), as AMD Zen 4 and later and Intel Cooper Lake and
// Sapphire Rapids and later have. (AMX, which Sapphire Rapids has, is not
// used.)
var haveBF16 = cpu.X86.HasAVX512BF16 && cpu.X86.HasAVX512F && cpu.X86.HasAVX512BW

// bf16Avx512 is microKernelBF16's kernel: strips 4×32 tiles, see
// bf16_amd64.s.
//
//go:noescape
func bf16Avx512(kp int, a unsafe.Pointer, aRow, aStep int, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)

// bf16Pack packs two steps' rows of float32 into words of two bfloat16
// (see packBF16 and bf16_amd64.s).
//
//go:noescape
func bf16Pack(dst unsafe.Pointer, w int, row0, row1 unsafe.Pointer, step, n, pairs int)

// bf16Rows rounds rows of float32 to bfloat16, two to a word, in pairs
// or chains order (see packBF16Rows and bf16_amd64.s).
//
//go:noescape
func bf16Rows(dst unsafe.Pointer, ldDst int, src unsafe.Pointer, ldSrc, n, rows int, chains bool)

// dot4BF16 is gemvBF16's assembly: four rows' lane sums (see
// bf16_amd64.s).
//
//go:noescape
func dot4BF16(chunks int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer)

// peakBF16 runs n iterations of 16 independent register-only VDPBF16PS.
//
//go:noescape
func peakBF16(n int)
