//go:build amd64 && !purego

#include "textflag.h"

// The micro-kernels of kernel.go for AVX2 + FMA. A tile of C (4 rows of two
// 256-bit registers) lives in Y0–Y7 for the whole loop over p; each step
// loads one row of B (Y8, Y9), broadcasts the 4 entries of column p of the
// A strip in turn and adds their products with fused multiply-adds. At the
// end the tile is stored to C, after adding C's old value when accumulate
// is set.
//
// Registers: CX = steps left, SI = &a[p*aStep], R12 = aRow, R13 = 3·aRow,
// R14 = aStep, DI = &b[p*bStep], R11 = bStep (all in bytes), DX = &c,
// R8 = ldc in bytes.

// func kernelF32(k int, a *float32, aRow, aStep int, b *float32, bStep int, c *float32, ldc int, accumulate bool)
TEXT ·kernelF32(SB), NOSPLIT, $0-65
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R12
	SHLQ $2, R12
	LEAQ (R12)(R12*2), R13
	MOVQ aStep+24(FP), R14
	SHLQ $2, R14
	MOVQ b+32(FP), DI
	MOVQ bStep+40(FP), R11
	SHLQ $2, R11
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JZ    f32store

f32loop:
	VMOVUPS (DI), Y8
	VMOVUPS 32(DI), Y9
	VBROADCASTSS (SI), Y10
	VFMADD231PS Y8, Y10, Y0
	VFMADD231PS Y9, Y10, Y1
	VBROADCASTSS (SI)(R12*1), Y11
	VFMADD231PS Y8, Y11, Y2
	VFMADD231PS Y9, Y11, Y3
	VBROADCASTSS (SI)(R12*2), Y12
	VFMADD231PS Y8, Y12, Y4
	VFMADD231PS Y9, Y12, Y5
	VBROADCASTSS (SI)(R13*1), Y13
	VFMADD231PS Y8, Y13, Y6
	VFMADD231PS Y9, Y13, Y7
	ADDQ R14, SI
	ADDQ R11, DI
	DECQ CX
	JNZ  f32loop

f32store:
	LEAQ    (DX)(R8*1), R9
	LEAQ    (R9)(R8*1), R10
	LEAQ    (R10)(R8*1), BX
	MOVBLZX accumulate+64(FP), AX
	TESTL   AX, AX
	JZ      f32write
	VADDPS (DX), Y0, Y0
	VADDPS 32(DX), Y1, Y1
	VADDPS (R9), Y2, Y2
	VADDPS 32(R9), Y3, Y3
	VADDPS (R10), Y4, Y4
	VADDPS 32(R10), Y5, Y5
	VADDPS (BX), Y6, Y6
	VADDPS 32(BX), Y7, Y7

f32write:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	VMOVUPS Y2, (R9)
	VMOVUPS Y3, 32(R9)
	VMOVUPS Y4, (R10)
	VMOVUPS Y5, 32(R10)
	VMOVUPS Y6, (BX)
	VMOVUPS Y7, 32(BX)
	VZEROUPPER
	RET

// func kernelF64(k int, a *float64, aRow, aStep int, b *float64, bStep int, c *float64, ldc int, accumulate bool)
TEXT ·kernelF64(SB), NOSPLIT, $0-65
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R12
	SHLQ $3, R12
	LEAQ (R12)(R12*2), R13
	MOVQ aStep+24(FP), R14
	SHLQ $3, R14
	MOVQ b+32(FP), DI
	MOVQ bStep+40(FP), R11
	SHLQ $3, R11
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $3, R8
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	TESTQ CX, CX
	JZ    f64store

f64loop:
	VMOVUPD (DI), Y8
	VMOVUPD 32(DI), Y9
	VBROADCASTSD (SI), Y10
	VFMADD231PD Y8, Y10, Y0
	VFMADD231PD Y9, Y10, Y1
	VBROADCASTSD (SI)(R12*1), Y11
	VFMADD231PD Y8, Y11, Y2
	VFMADD231PD Y9, Y11, Y3
	VBROADCASTSD (SI)(R12*2), Y12
	VFMADD231PD Y8, Y12, Y4
	VFMADD231PD Y9, Y12, Y5
	VBROADCASTSD (SI)(R13*1), Y13
	VFMADD231PD Y8, Y13, Y6
	VFMADD231PD Y9, Y13, Y7
	ADDQ R14, SI
	ADDQ R11, DI
	DECQ CX
	JNZ  f64loop

f64store:
	LEAQ    (DX)(R8*1), R9
	LEAQ    (R9)(R8*1), R10
	LEAQ    (R10)(R8*1), BX
	MOVBLZX accumulate+64(FP), AX
	TESTL   AX, AX
	JZ      f64write
	VADDPD (DX), Y0, Y0
	VADDPD 32(DX), Y1, Y1
	VADDPD (R9), Y2, Y2
	VADDPD 32(R9), Y3, Y3
	VADDPD (R10), Y4, Y4
	VADDPD 32(R10), Y5, Y5
	VADDPD (BX), Y6, Y6
	VADDPD 32(BX), Y7, Y7

f64write:
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	VMOVUPD Y2, (R9)
	VMOVUPD Y3, 32(R9)
	VMOVUPD Y4, (R10)
	VMOVUPD Y5, 32(R10)
	VMOVUPD Y6, (BX)
	VMOVUPD Y7, 32(BX)
	VZEROUPPER
	RET

// func transpose8F32(dst *float32, dstStride int, src *float32, srcStride int)
//
// dst[i*dstStride + j] = src[j*srcStride + i] for i, j < 8: one 8×8 block of
// packB's transposition, with the textbook AVX sequence: unpack pairs of
// rows, shuffle quarters, swap 128-bit halves (24 shuffles for 64 floats
// instead of 64 scalar moves).
TEXT ·transpose8F32(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ srcStride+24(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10       // 3 rows
	LEAQ (SI)(R9*4), R11       // row 4

	VMOVUPS (SI), Y0
	VMOVUPS (SI)(R9*1), Y1
	VMOVUPS (SI)(R9*2), Y2
	VMOVUPS (SI)(R10*1), Y3
	VMOVUPS (R11), Y4
	VMOVUPS (R11)(R9*1), Y5
	VMOVUPS (R11)(R9*2), Y6
	VMOVUPS (R11)(R10*1), Y7

	VUNPCKLPS Y1, Y0, Y8
	VUNPCKHPS Y1, Y0, Y9
	VUNPCKLPS Y3, Y2, Y10
	VUNPCKHPS Y3, Y2, Y11
	VUNPCKLPS Y5, Y4, Y12
	VUNPCKHPS Y5, Y4, Y13
	VUNPCKLPS Y7, Y6, Y14
	VUNPCKHPS Y7, Y6, Y15

	VSHUFPS $0x44, Y10, Y8, Y0
	VSHUFPS $0xee, Y10, Y8, Y1
	VSHUFPS $0x44, Y11, Y9, Y2
	VSHUFPS $0xee, Y11, Y9, Y3
	VSHUFPS $0x44, Y14, Y12, Y4
	VSHUFPS $0xee, Y14, Y12, Y5
	VSHUFPS $0x44, Y15, Y13, Y6
	VSHUFPS $0xee, Y15, Y13, Y7

	VPERM2F128 $0x20, Y4, Y0, Y8
	VPERM2F128 $0x20, Y5, Y1, Y9
	VPERM2F128 $0x20, Y6, Y2, Y10
	VPERM2F128 $0x20, Y7, Y3, Y11
	VPERM2F128 $0x31, Y4, Y0, Y12
	VPERM2F128 $0x31, Y5, Y1, Y13
	VPERM2F128 $0x31, Y6, Y2, Y14
	VPERM2F128 $0x31, Y7, Y3, Y15

	LEAQ    (R8)(R8*2), R10
	LEAQ    (DI)(R8*4), R11
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(R8*1)
	VMOVUPS Y10, (DI)(R8*2)
	VMOVUPS Y11, (DI)(R10*1)
	VMOVUPS Y12, (R11)
	VMOVUPS Y13, (R11)(R8*1)
	VMOVUPS Y14, (R11)(R8*2)
	VMOVUPS Y15, (R11)(R10*1)
	VZEROUPPER
	RET
