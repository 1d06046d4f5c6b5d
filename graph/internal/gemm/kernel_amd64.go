//go:build amd64 && !purego

package gemm

import (
	"unsafe"

	"golang.org/x/sys/cpu"
)

// bestPath is the fastest kernel family this CPU runs: AVX-512F (Intel
// Skylake-SP, AMD Zen 4 and later), else AVX2 with FMA (Intel Haswell, AMD
// Zen), else plain Go.
var bestPath = func() kernelPath {
	switch {
	case cpu.X86.HasAVX512F && cpu.X86.HasAVX2 && cpu.X86.HasFMA: // small products use the AVX2 kernels
		return pathAVX512
	case cpu.X86.HasAVX2 && cpu.X86.HasFMA:
		return pathAVX2
	}
	return pathGo
}()

// haveAVX: transposeF32, copyRows64B/128B and addF32 need AVX.
var haveAVX = cpu.X86.HasAVX

// The micro-kernels of kernel_amd64.s; each is microKernel for its tile.
//
//go:noescape
func avx512F32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)

//go:noescape
func avx512F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)

//go:noescape
func avx2F32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)

//go:noescape
func avx2F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)

// transposeF32 transposes blocks 8×8 blocks along a strip of 8 rows:
// dst[i*dstStride+j] = src[j*srcStride+i] for j < 8, i < 8·blocks.
//
//go:noescape
func transposeF32(dst *float32, dstStride int, src *float32, srcStride int, blocks int)

// copyRows64B copies n rows of 64 bytes, ld bytes apart in src, to
// contiguous rows at dst; copyRows128B rows of 128 bytes. They need AVX
// (haveAVX).
//
//go:noescape
func copyRows64B(dst, src unsafe.Pointer, ld, n int)

//go:noescape
func copyRows128B(dst, src unsafe.Pointer, ld, n int)

// addF32 sets dst[i] += src[i] for i < n, n a multiple of 8; it needs
// AVX (haveAVX).
//
//go:noescape
func addF32(dst, src unsafe.Pointer, n int)

// dot4F32 sets out[r] = Σ_p x[p]·b[r·ldb + p] for r < 4, p < k, k a
// multiple of 16; it needs AVX2 and FMA (see kernel_amd64.s).
//
//go:noescape
func dot4F32(k int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer)
