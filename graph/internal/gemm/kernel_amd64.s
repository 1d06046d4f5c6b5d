//go:build amd64 && !purego

#include "textflag.h"

// The micro-kernels of kernel.go (microKernel): one mr×nr tile of C from a
// strip of A (entry (r, p) at a[r·aRow + p·aStep]: packed, or in place) and
// a panel of B (row p at b[p·bStep], nr numbers), the tile held in
// registers for the whole loop over p.
//
// AVX-512 float32 (12 rows × 32 columns): each row of the tile is two zmm
// registers, Z0–Z23. Each step loads B's row into Z24/Z25, broadcasts A's
// twelve entries in turn into Z26–Z29 and does two FMAs per row (2 + 12
// loads, 24 FMAs). The 16×16 tile it replaces did one broadcast load per
// FMA (1 + 16 loads, 16 FMAs): on a core with two full-width FMA pipes
// and two 512-bit loads a cycle (Zen 5) the loads, not the FMAs, set its
// pace — 73–80 % of peak on the model's products, 79–91 % with this tile
// (bench/NOTES.md K1). A core that splits a 512-bit FMA in two (Zen 4) is
// bound by its FMAs either way.
//
// AVX-512 float64 (16 rows): each row of the tile is one zmm register (8
// float64), Z0–Z15. Each step loads B's row into Z16 and does one FMA per
// row with A's entry broadcast from memory (the .BCST form): 1 vector
// load, 16 broadcast loads and 16 FMAs.
//
// AVX2 (6 rows): each row is two ymm registers, Y0–Y11; each step loads
// B's row into Y12/Y13, broadcasts A's six entries in turn into Y14/Y15
// and does two FMAs per row (2 + 6 loads, 12 FMAs).
//
// The sum starts from zero; at the end, when accumulate is set, the
// rows at add (one every ldAdd elements) are added to it: C's old value
// (add = c, ldAdd = ldc), or a bias row added to every row (ldAdd = 0).
// Then the tile is stored, one row every ldc elements.
//
// One call computes strips tiles, one below the other: after each tile
// the kernel moves a by aNext elements and c and add by mr rows (the
// arguments in the frame are updated in place) and starts again from the
// top with the same panel of B.
//
// The AVX-512 float32 kernel (the one large products run) first prefetches
// the 12 rows of its C tile: a tile of a product with thousands of rows
// comes from L3 or memory, and by the end of the loop it is in L1 (4096-row
// products 92–95 → 100–104 GFLOP/s; bench/NOTES.md G8).
//
// Registers: CX = steps left; SI, R11, R12, R13 = &a[p·aStep] of rows 0,
// 4, 8, 12 (the float32 kernel: rows 0, 4, 8 in SI, R11, R12), R9 = aRow, R10 = 3·aRow, R14 = aStep; DI = &b[p·bStep], BX =
// bStep; DX = &c's current row, R8 = ldc (all strides in bytes); in the
// epilogue SI = the current row at add, R9 = ldAdd.

// func avx512F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·avx512F64(SB), NOSPLIT, $0-104
avx512F64strip:
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R9
	SHLQ $3, R9
	LEAQ (R9)(R9*2), R10
	MOVQ aStep+24(FP), R14
	SHLQ $3, R14
	MOVQ b+32(FP), DI
	MOVQ bStep+40(FP), BX
	SHLQ $3, BX
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $3, R8
	LEAQ (SI)(R9*4), R11
	LEAQ (R11)(R9*4), R12
	LEAQ (R12)(R9*4), R13
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

avx512F64loop:
	VMOVUPD (DI), Z16
	VFMADD231PD.BCST (SI), Z16, Z0
	VFMADD231PD.BCST (SI)(R9*1), Z16, Z1
	VFMADD231PD.BCST (SI)(R9*2), Z16, Z2
	VFMADD231PD.BCST (SI)(R10*1), Z16, Z3
	VFMADD231PD.BCST (R11), Z16, Z4
	VFMADD231PD.BCST (R11)(R9*1), Z16, Z5
	VFMADD231PD.BCST (R11)(R9*2), Z16, Z6
	VFMADD231PD.BCST (R11)(R10*1), Z16, Z7
	VFMADD231PD.BCST (R12), Z16, Z8
	VFMADD231PD.BCST (R12)(R9*1), Z16, Z9
	VFMADD231PD.BCST (R12)(R9*2), Z16, Z10
	VFMADD231PD.BCST (R12)(R10*1), Z16, Z11
	VFMADD231PD.BCST (R13), Z16, Z12
	VFMADD231PD.BCST (R13)(R9*1), Z16, Z13
	VFMADD231PD.BCST (R13)(R9*2), Z16, Z14
	VFMADD231PD.BCST (R13)(R10*1), Z16, Z15
	ADDQ R14, SI
	ADDQ R14, R11
	ADDQ R14, R12
	ADDQ R14, R13
	ADDQ BX, DI
	DECQ CX
	JNZ  avx512F64loop
	MOVBLZX accumulate+80(FP), AX
	TESTL   AX, AX
	JZ      avx512F64write
	MOVQ add+64(FP), SI
	MOVQ ldAdd+72(FP), R9
	SHLQ $3, R9
	VADDPD (SI), Z0, Z0
	VMOVUPD Z0, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z1, Z1
	VMOVUPD Z1, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z2, Z2
	VMOVUPD Z2, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z3, Z3
	VMOVUPD Z3, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z4, Z4
	VMOVUPD Z4, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z5, Z5
	VMOVUPD Z5, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z6, Z6
	VMOVUPD Z6, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z7, Z7
	VMOVUPD Z7, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z8, Z8
	VMOVUPD Z8, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z9, Z9
	VMOVUPD Z9, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z10, Z10
	VMOVUPD Z10, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z11, Z11
	VMOVUPD Z11, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z12, Z12
	VMOVUPD Z12, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z13, Z13
	VMOVUPD Z13, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z14, Z14
	VMOVUPD Z14, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Z15, Z15
	VMOVUPD Z15, (DX)
	ADDQ R8, DX
	ADDQ R9, SI
	JMP  avx512F64next

avx512F64write:
	VMOVUPD Z0, (DX)
	ADDQ R8, DX
	VMOVUPD Z1, (DX)
	ADDQ R8, DX
	VMOVUPD Z2, (DX)
	ADDQ R8, DX
	VMOVUPD Z3, (DX)
	ADDQ R8, DX
	VMOVUPD Z4, (DX)
	ADDQ R8, DX
	VMOVUPD Z5, (DX)
	ADDQ R8, DX
	VMOVUPD Z6, (DX)
	ADDQ R8, DX
	VMOVUPD Z7, (DX)
	ADDQ R8, DX
	VMOVUPD Z8, (DX)
	ADDQ R8, DX
	VMOVUPD Z9, (DX)
	ADDQ R8, DX
	VMOVUPD Z10, (DX)
	ADDQ R8, DX
	VMOVUPD Z11, (DX)
	ADDQ R8, DX
	VMOVUPD Z12, (DX)
	ADDQ R8, DX
	VMOVUPD Z13, (DX)
	ADDQ R8, DX
	VMOVUPD Z14, (DX)
	ADDQ R8, DX
	VMOVUPD Z15, (DX)
	ADDQ R8, DX

avx512F64next:
	DECQ strips+96(FP)
	JZ   avx512F64done
	MOVQ aNext+88(FP), AX
	SHLQ $3, AX
	ADDQ AX, a+8(FP)
	MOVQ ldc+56(FP), AX
	IMUL3Q $128, AX, AX
	ADDQ AX, c+48(FP)
	MOVQ ldAdd+72(FP), AX
	IMUL3Q $128, AX, AX
	ADDQ AX, add+64(FP)
	JMP  avx512F64strip

avx512F64done:
	VZEROUPPER
	RET

// func avx2F32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·avx2F32(SB), NOSPLIT, $0-104
avx2F32strip:
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	MOVQ aStep+24(FP), R14
	SHLQ $2, R14
	MOVQ b+32(FP), DI
	MOVQ bStep+40(FP), BX
	SHLQ $2, BX
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	LEAQ (SI)(R9*4), R11
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11

avx2F32loop:
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS (SI)(R9*1), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS (SI)(R9*2), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS (SI)(R10*1), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS (R11), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS (R11)(R9*1), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ R14, SI
	ADDQ R14, R11
	ADDQ BX, DI
	DECQ CX
	JNZ  avx2F32loop
	MOVBLZX accumulate+80(FP), AX
	TESTL   AX, AX
	JZ      avx2F32write
	MOVQ add+64(FP), SI
	MOVQ ldAdd+72(FP), R9
	SHLQ $2, R9
	VADDPS (SI), Y0, Y0
	VADDPS 32(SI), Y1, Y1
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Y2, Y2
	VADDPS 32(SI), Y3, Y3
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Y4, Y4
	VADDPS 32(SI), Y5, Y5
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Y6, Y6
	VADDPS 32(SI), Y7, Y7
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Y8, Y8
	VADDPS 32(SI), Y9, Y9
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Y10, Y10
	VADDPS 32(SI), Y11, Y11
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	JMP  avx2F32next

avx2F32write:
	VMOVUPS Y0, (DX)
	VMOVUPS Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y2, (DX)
	VMOVUPS Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y4, (DX)
	VMOVUPS Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y6, (DX)
	VMOVUPS Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y8, (DX)
	VMOVUPS Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPS Y10, (DX)
	VMOVUPS Y11, 32(DX)
	ADDQ R8, DX

avx2F32next:
	DECQ strips+96(FP)
	JZ   avx2F32done
	MOVQ aNext+88(FP), AX
	SHLQ $2, AX
	ADDQ AX, a+8(FP)
	MOVQ ldc+56(FP), AX
	IMUL3Q $24, AX, AX
	ADDQ AX, c+48(FP)
	MOVQ ldAdd+72(FP), AX
	IMUL3Q $24, AX, AX
	ADDQ AX, add+64(FP)
	JMP  avx2F32strip

avx2F32done:
	VZEROUPPER
	RET

// func avx2F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·avx2F64(SB), NOSPLIT, $0-104
avx2F64strip:
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R9
	SHLQ $3, R9
	LEAQ (R9)(R9*2), R10
	MOVQ aStep+24(FP), R14
	SHLQ $3, R14
	MOVQ b+32(FP), DI
	MOVQ bStep+40(FP), BX
	SHLQ $3, BX
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $3, R8
	LEAQ (SI)(R9*4), R11
	VXORPD Y0, Y0, Y0
	VXORPD Y1, Y1, Y1
	VXORPD Y2, Y2, Y2
	VXORPD Y3, Y3, Y3
	VXORPD Y4, Y4, Y4
	VXORPD Y5, Y5, Y5
	VXORPD Y6, Y6, Y6
	VXORPD Y7, Y7, Y7
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11

avx2F64loop:
	VMOVUPD (DI), Y12
	VMOVUPD 32(DI), Y13
	VBROADCASTSD (SI), Y14
	VFMADD231PD Y12, Y14, Y0
	VFMADD231PD Y13, Y14, Y1
	VBROADCASTSD (SI)(R9*1), Y15
	VFMADD231PD Y12, Y15, Y2
	VFMADD231PD Y13, Y15, Y3
	VBROADCASTSD (SI)(R9*2), Y14
	VFMADD231PD Y12, Y14, Y4
	VFMADD231PD Y13, Y14, Y5
	VBROADCASTSD (SI)(R10*1), Y15
	VFMADD231PD Y12, Y15, Y6
	VFMADD231PD Y13, Y15, Y7
	VBROADCASTSD (R11), Y14
	VFMADD231PD Y12, Y14, Y8
	VFMADD231PD Y13, Y14, Y9
	VBROADCASTSD (R11)(R9*1), Y15
	VFMADD231PD Y12, Y15, Y10
	VFMADD231PD Y13, Y15, Y11
	ADDQ R14, SI
	ADDQ R14, R11
	ADDQ BX, DI
	DECQ CX
	JNZ  avx2F64loop
	MOVBLZX accumulate+80(FP), AX
	TESTL   AX, AX
	JZ      avx2F64write
	MOVQ add+64(FP), SI
	MOVQ ldAdd+72(FP), R9
	SHLQ $3, R9
	VADDPD (SI), Y0, Y0
	VADDPD 32(SI), Y1, Y1
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Y2, Y2
	VADDPD 32(SI), Y3, Y3
	VMOVUPD Y2, (DX)
	VMOVUPD Y3, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Y4, Y4
	VADDPD 32(SI), Y5, Y5
	VMOVUPD Y4, (DX)
	VMOVUPD Y5, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Y6, Y6
	VADDPD 32(SI), Y7, Y7
	VMOVUPD Y6, (DX)
	VMOVUPD Y7, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Y8, Y8
	VADDPD 32(SI), Y9, Y9
	VMOVUPD Y8, (DX)
	VMOVUPD Y9, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPD (SI), Y10, Y10
	VADDPD 32(SI), Y11, Y11
	VMOVUPD Y10, (DX)
	VMOVUPD Y11, 32(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	JMP  avx2F64next

avx2F64write:
	VMOVUPD Y0, (DX)
	VMOVUPD Y1, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y2, (DX)
	VMOVUPD Y3, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y4, (DX)
	VMOVUPD Y5, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y6, (DX)
	VMOVUPD Y7, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y8, (DX)
	VMOVUPD Y9, 32(DX)
	ADDQ R8, DX
	VMOVUPD Y10, (DX)
	VMOVUPD Y11, 32(DX)
	ADDQ R8, DX

avx2F64next:
	DECQ strips+96(FP)
	JZ   avx2F64done
	MOVQ aNext+88(FP), AX
	SHLQ $3, AX
	ADDQ AX, a+8(FP)
	MOVQ ldc+56(FP), AX
	IMUL3Q $48, AX, AX
	ADDQ AX, c+48(FP)
	MOVQ ldAdd+72(FP), AX
	IMUL3Q $48, AX, AX
	ADDQ AX, add+64(FP)
	JMP  avx2F64strip

avx2F64done:
	VZEROUPPER
	RET

// func transposeF32(dst *float32, dstStride int, src *float32, srcStride int, blocks int)
//
// Transposes blocks successive 8×8 blocks along a strip of 8 rows:
// dst[i*dstStride + j] = src[j*srcStride + i] for j < 8, i < 8·blocks, with
// the textbook AVX sequence per block: unpack pairs of rows, shuffle
// quarters, swap 128-bit halves (24 shuffles for 64 floats instead of 64
// scalar moves). packTrans's 8-row groups; one call per group, not per
// block.
TEXT ·transposeF32(SB), NOSPLIT, $0-40
	MOVQ dst+0(FP), DI
	MOVQ dstStride+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ srcStride+24(FP), R9
	SHLQ $2, R9
	MOVQ blocks+32(FP), CX
	LEAQ (R9)(R9*2), R10       // 3 source rows
	LEAQ (R8)(R8*2), R12       // 3 destination rows
	TESTQ CX, CX
	JZ    transposedone

transposeloop:
	LEAQ    (SI)(R9*4), R11    // source row 4
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

	LEAQ    (DI)(R8*4), R13    // destination row 4
	VMOVUPS Y8, (DI)
	VMOVUPS Y9, (DI)(R8*1)
	VMOVUPS Y10, (DI)(R8*2)
	VMOVUPS Y11, (DI)(R12*1)
	VMOVUPS Y12, (R13)
	VMOVUPS Y13, (R13)(R8*1)
	VMOVUPS Y14, (R13)(R8*2)
	VMOVUPS Y15, (R13)(R12*1)
	ADDQ    $32, SI
	LEAQ    (DI)(R8*8), DI
	DECQ    CX
	JNZ     transposeloop

transposedone:
	VZEROUPPER
	RET

// func copyRows64B(dst, src unsafe.Pointer, ld, n int)
//
// Copies n rows of 64 bytes, ld bytes apart in src, contiguous in dst:
// packCopy's rows of 16 float32 or 8 float64, two loads and two stores a
// row (runtime.memmove costs a call and a size dispatch per row).
TEXT ·copyRows64B(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JZ    copy64done

copy64loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	ADDQ    R8, SI
	ADDQ    $64, DI
	DECQ    CX
	JNZ     copy64loop

copy64done:
	VZEROUPPER
	RET

// func copyRows128B(dst, src unsafe.Pointer, ld, n int)
//
// copyRows64B for rows of 128 bytes (16 float64).
TEXT ·copyRows128B(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ ld+16(FP), R8
	MOVQ n+24(FP), CX
	TESTQ CX, CX
	JZ    copy128done

copy128loop:
	VMOVUPS (SI), Y0
	VMOVUPS 32(SI), Y1
	VMOVUPS 64(SI), Y2
	VMOVUPS 96(SI), Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    R8, SI
	SUBQ    $-128, DI
	DECQ    CX
	JNZ     copy128loop

copy128done:
	VZEROUPPER
	RET

// func dot4F32(k int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer)
//
// out[r] = Σ_p x[p]·b[r·ldb + p] for r < 4 and p < k, k a multiple of 16:
// four dot products at once for gemvT (one row of A times Bᵀ), the rows
// of B read where they lie. Each step loads 16 entries of x (Y8, Y9) and
// multiplies them into two accumulators per row (Y0–Y7: eight
// independent FMA chains, enough to cover the FMA latency); the end adds
// each row's 16 lanes (pairs, then VHADDPS twice, then the two halves).
TEXT ·dot4F32(SB), NOSPLIT, $0-40
	MOVQ k+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ out+32(FP), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	SHRQ   $4, CX
	JZ     dot4reduce

dot4loop:
	VMOVUPS     (SI), Y8
	VMOVUPS     32(SI), Y9
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 32(DI), Y9, Y1
	VFMADD231PS (DI)(R8*1), Y8, Y2
	VFMADD231PS 32(DI)(R8*1), Y9, Y3
	VFMADD231PS (DI)(R8*2), Y8, Y4
	VFMADD231PS 32(DI)(R8*2), Y9, Y5
	VFMADD231PS (DI)(R9*1), Y8, Y6
	VFMADD231PS 32(DI)(R9*1), Y9, Y7
	ADDQ        $64, SI
	ADDQ        $64, DI
	DECQ        CX
	JNZ         dot4loop

dot4reduce:
	VADDPS       Y1, Y0, Y0
	VADDPS       Y3, Y2, Y2
	VADDPS       Y5, Y4, Y4
	VADDPS       Y7, Y6, Y6
	VHADDPS      Y2, Y0, Y0
	VHADDPS      Y6, Y4, Y4
	VHADDPS      Y4, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS       X1, X0, X0
	VMOVUPS      X0, (DX)
	VZEROUPPER
	RET

// func addF32(dst, src unsafe.Pointer, n int)
//
// dst[i] += src[i] for i < n, n a multiple of 8: SumRows's pass over one
// row, 32 numbers (four ymm) a step while it can, then 8 at a time.
TEXT ·addF32(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n+16(FP), CX
	CMPQ CX, $32
	JLT  add8

add32loop:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  (SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	SUBQ    $-128, SI
	SUBQ    $-128, DI
	SUBQ    $32, CX
	CMPQ    CX, $32
	JGE     add32loop

add8:
	TESTQ CX, CX
	JZ    adddone

add8loop:
	VMOVUPS (DI), Y0
	VADDPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     add8loop

adddone:
	VZEROUPPER
	RET

// func avx512F32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·avx512F32(SB), NOSPLIT, $0-104
avx512F32strip:
	MOVQ k+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	MOVQ aStep+24(FP), R14
	SHLQ $2, R14
	MOVQ b+32(FP), DI
	MOVQ bStep+40(FP), BX
	SHLQ $2, BX
	MOVQ c+48(FP), DX
	MOVQ ldc+56(FP), R8
	SHLQ $2, R8
	LEAQ (SI)(R9*4), R11
	LEAQ (R11)(R9*4), R12
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ DX, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	ADDQ R8, AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)

avx512F32loop:
	VMOVUPS (DI), Z24
	VMOVUPS 64(DI), Z25
	VBROADCASTSS (SI), Z26
	VFMADD231PS Z24, Z26, Z0
	VFMADD231PS Z25, Z26, Z1
	VBROADCASTSS (SI)(R9*1), Z27
	VFMADD231PS Z24, Z27, Z2
	VFMADD231PS Z25, Z27, Z3
	VBROADCASTSS (SI)(R9*2), Z28
	VFMADD231PS Z24, Z28, Z4
	VFMADD231PS Z25, Z28, Z5
	VBROADCASTSS (SI)(R10*1), Z29
	VFMADD231PS Z24, Z29, Z6
	VFMADD231PS Z25, Z29, Z7
	VBROADCASTSS (R11), Z26
	VFMADD231PS Z24, Z26, Z8
	VFMADD231PS Z25, Z26, Z9
	VBROADCASTSS (R11)(R9*1), Z27
	VFMADD231PS Z24, Z27, Z10
	VFMADD231PS Z25, Z27, Z11
	VBROADCASTSS (R11)(R9*2), Z28
	VFMADD231PS Z24, Z28, Z12
	VFMADD231PS Z25, Z28, Z13
	VBROADCASTSS (R11)(R10*1), Z29
	VFMADD231PS Z24, Z29, Z14
	VFMADD231PS Z25, Z29, Z15
	VBROADCASTSS (R12), Z26
	VFMADD231PS Z24, Z26, Z16
	VFMADD231PS Z25, Z26, Z17
	VBROADCASTSS (R12)(R9*1), Z27
	VFMADD231PS Z24, Z27, Z18
	VFMADD231PS Z25, Z27, Z19
	VBROADCASTSS (R12)(R9*2), Z28
	VFMADD231PS Z24, Z28, Z20
	VFMADD231PS Z25, Z28, Z21
	VBROADCASTSS (R12)(R10*1), Z29
	VFMADD231PS Z24, Z29, Z22
	VFMADD231PS Z25, Z29, Z23
	ADDQ R14, SI
	ADDQ R14, R11
	ADDQ R14, R12
	ADDQ BX, DI
	DECQ CX
	JNZ  avx512F32loop
	MOVBLZX accumulate+80(FP), AX
	TESTL   AX, AX
	JZ      avx512F32write
	MOVQ add+64(FP), SI
	MOVQ ldAdd+72(FP), R9
	SHLQ $2, R9
	VADDPS (SI), Z0, Z0
	VADDPS 64(SI), Z1, Z1
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z2, Z2
	VADDPS 64(SI), Z3, Z3
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z4, Z4
	VADDPS 64(SI), Z5, Z5
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z6, Z6
	VADDPS 64(SI), Z7, Z7
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z8, Z8
	VADDPS 64(SI), Z9, Z9
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z10, Z10
	VADDPS 64(SI), Z11, Z11
	VMOVUPS Z10, (DX)
	VMOVUPS Z11, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z12, Z12
	VADDPS 64(SI), Z13, Z13
	VMOVUPS Z12, (DX)
	VMOVUPS Z13, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z14, Z14
	VADDPS 64(SI), Z15, Z15
	VMOVUPS Z14, (DX)
	VMOVUPS Z15, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z16, Z16
	VADDPS 64(SI), Z17, Z17
	VMOVUPS Z16, (DX)
	VMOVUPS Z17, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z18, Z18
	VADDPS 64(SI), Z19, Z19
	VMOVUPS Z18, (DX)
	VMOVUPS Z19, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z20, Z20
	VADDPS 64(SI), Z21, Z21
	VMOVUPS Z20, (DX)
	VMOVUPS Z21, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z22, Z22
	VADDPS 64(SI), Z23, Z23
	VMOVUPS Z22, (DX)
	VMOVUPS Z23, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	JMP  avx512F32next

avx512F32write:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z2, (DX)
	VMOVUPS Z3, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z4, (DX)
	VMOVUPS Z5, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z6, (DX)
	VMOVUPS Z7, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z8, (DX)
	VMOVUPS Z9, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z10, (DX)
	VMOVUPS Z11, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z12, (DX)
	VMOVUPS Z13, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z14, (DX)
	VMOVUPS Z15, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z16, (DX)
	VMOVUPS Z17, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z18, (DX)
	VMOVUPS Z19, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z20, (DX)
	VMOVUPS Z21, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z22, (DX)
	VMOVUPS Z23, 64(DX)
	ADDQ R8, DX

avx512F32next:
	DECQ strips+96(FP)
	JZ   avx512F32done
	MOVQ aNext+88(FP), AX
	SHLQ $2, AX
	ADDQ AX, a+8(FP)
	MOVQ ldc+56(FP), AX
	IMUL3Q $48, AX, AX
	ADDQ AX, c+48(FP)
	MOVQ ldAdd+72(FP), AX
	IMUL3Q $48, AX, AX
	ADDQ AX, add+64(FP)
	JMP  avx512F32strip

avx512F32done:
	VZEROUPPER
	RET
