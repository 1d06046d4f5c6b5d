//go:build amd64 && !purego

package gemm

import "golang.org/x/sys/cpu"

// haveAsm: the assembly micro-kernels need AVX2 and FMA (Intel Haswell,
// AMD Zen and later); other CPUs run kernelGo.
var haveAsm = cpu.X86.HasAVX2 && cpu.X86.HasFMA

// kernelF32 is kernel for float32 tiles of 4×16; see kernel_amd64.s.
//
//go:noescape
func kernelF32(k int, a *float32, aRow, aStep int, b *float32, bStep int, c *float32, ldc int, accumulate bool)

// kernelF64 is kernel for float64 tiles of 4×8; see kernel_amd64.s.
//
//go:noescape
func kernelF64(k int, a *float64, aRow, aStep int, b *float64, bStep int, c *float64, ldc int, accumulate bool)

// transpose8F32 transposes one 8×8 block: dst[i*dstStride+j] = src[j*srcStride+i].
//
//go:noescape
func transpose8F32(dst *float32, dstStride int, src *float32, srcStride int)
