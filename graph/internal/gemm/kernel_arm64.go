//go:build arm64 && !purego

package gemm

import "unsafe"

// bestPath on arm64: every arm64 core has Advanced SIMD (NEON), with
// fused multiply-adds on 128-bit registers.
const bestPath = pathNEON

func init() {
	kernelTable[pathNEON][0].run = neonF32
	kernelTable[pathNEON][1].run = neonF64
}

// The micro-kernels of kernel_arm64.s; each is microKernel for its tile.
//
//go:noescape
func neonF32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)

//go:noescape
func neonF64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)

// dot4F32 sets out[r] = Σ_p x[p]·b[r·ldb + p] for r < 4, p < k, k a
// multiple of 16 (see kernel_arm64.s).
//
//go:noescape
func dot4F32(k int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer)

// caches reports nothing on arm64 (no CPUID; Linux's sysfs and macOS's
// sysctl differ): the blocks keep kernelTable's sizes.
func caches() cacheSizes { return cacheSizes{} }
