//go:build amd64 && !purego

#include "textflag.h"
#include "avx.h"

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

// The four kernels share their frame (the same arguments) and so the
// text that reads and updates it: SHIFT = log₂ of the element's bytes,
// MRBYTES = the tile's rows times the element's bytes.

// STRIP loads the arguments for one strip into the registers above (rows
// 0 and 4 of A in SI and R11).
#define STRIP(SHIFT) \
	MOVQ k+0(FP), CX; \
	MOVQ a+8(FP), SI; \
	MOVQ aRow+16(FP), R9; \
	SHLQ $SHIFT, R9; \
	LEAQ (R9)(R9*2), R10; \
	MOVQ aStep+24(FP), R14; \
	SHLQ $SHIFT, R14; \
	MOVQ b+32(FP), DI; \
	MOVQ bStep+40(FP), BX; \
	SHLQ $SHIFT, BX; \
	MOVQ c+48(FP), DX; \
	MOVQ ldc+56(FP), R8; \
	SHLQ $SHIFT, R8; \
	LEAQ (SI)(R9*4), R11

// OUTPUT goes to write when accumulate is not set; else it loads add and
// ldAdd (SI, R9) and falls through.
#define OUTPUT(SHIFT, write) \
	MOVBLZX accumulate+80(FP), AX; \
	TESTL   AX, AX; \
	JZ      write; \
	MOVQ add+64(FP), SI; \
	MOVQ ldAdd+72(FP), R9; \
	SHLQ $SHIFT, R9

// NEXT goes to done after the last strip; else it moves a by aNext
// elements and c and add by the tile's rows, and goes to strip again.
#define NEXT(SHIFT, MRBYTES, strip, done) \
	DECQ strips+96(FP); \
	JZ   done; \
	MOVQ aNext+88(FP), AX; \
	SHLQ $SHIFT, AX; \
	ADDQ AX, a+8(FP); \
	MOVQ ldc+56(FP), AX; \
	IMUL3Q $MRBYTES, AX, AX; \
	ADDQ AX, c+48(FP); \
	MOVQ ldAdd+72(FP), AX; \
	IMUL3Q $MRBYTES, AX, AX; \
	ADDQ AX, add+64(FP); \
	JMP  strip

// The AVX2 kernels are one text in their instructions' float32 (PS, SS)
// or float64 (PD, SD) forms.

// AVX2_STEP does one step of p: B's row into Y12/Y13, A's six entries
// broadcast into Y14/Y15 in turn, 12 FMAs into the tile.
#define AVX2_STEP(MOVU, BCAST, FMA) \
	MOVU (DI), Y12; \
	MOVU 32(DI), Y13; \
	BCAST (SI), Y14; \
	FMA Y12, Y14, Y0; \
	FMA Y13, Y14, Y1; \
	BCAST (SI)(R9*1), Y15; \
	FMA Y12, Y15, Y2; \
	FMA Y13, Y15, Y3; \
	BCAST (SI)(R9*2), Y14; \
	FMA Y12, Y14, Y4; \
	FMA Y13, Y14, Y5; \
	BCAST (SI)(R10*1), Y15; \
	FMA Y12, Y15, Y6; \
	FMA Y13, Y15, Y7; \
	BCAST (R11), Y14; \
	FMA Y12, Y14, Y8; \
	FMA Y13, Y14, Y9; \
	BCAST (R11)(R9*1), Y15; \
	FMA Y12, Y15, Y10; \
	FMA Y13, Y15, Y11

// AVX2_ADD_STORE adds the rows at add to the tile and stores it in C.
#define AVX2_ADD_STORE(ADD, MOVU) \
	ADD (SI), Y0, Y0; \
	ADD 32(SI), Y1, Y1; \
	MOVU Y0, (DX); \
	MOVU Y1, 32(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	ADD (SI), Y2, Y2; \
	ADD 32(SI), Y3, Y3; \
	MOVU Y2, (DX); \
	MOVU Y3, 32(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	ADD (SI), Y4, Y4; \
	ADD 32(SI), Y5, Y5; \
	MOVU Y4, (DX); \
	MOVU Y5, 32(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	ADD (SI), Y6, Y6; \
	ADD 32(SI), Y7, Y7; \
	MOVU Y6, (DX); \
	MOVU Y7, 32(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	ADD (SI), Y8, Y8; \
	ADD 32(SI), Y9, Y9; \
	MOVU Y8, (DX); \
	MOVU Y9, 32(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI; \
	ADD (SI), Y10, Y10; \
	ADD 32(SI), Y11, Y11; \
	MOVU Y10, (DX); \
	MOVU Y11, 32(DX); \
	ADDQ R8, DX; \
	ADDQ R9, SI

// AVX2_STORE stores the tile in C.
#define AVX2_STORE(MOVU) \
	MOVU Y0, (DX); \
	MOVU Y1, 32(DX); \
	ADDQ R8, DX; \
	MOVU Y2, (DX); \
	MOVU Y3, 32(DX); \
	ADDQ R8, DX; \
	MOVU Y4, (DX); \
	MOVU Y5, 32(DX); \
	ADDQ R8, DX; \
	MOVU Y6, (DX); \
	MOVU Y7, 32(DX); \
	ADDQ R8, DX; \
	MOVU Y8, (DX); \
	MOVU Y9, 32(DX); \
	ADDQ R8, DX; \
	MOVU Y10, (DX); \
	MOVU Y11, 32(DX); \
	ADDQ R8, DX

// func avx512F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·avx512F64(SB), NOSPLIT, $0-104
avx512F64strip:
	STRIP(3)
	LEAQ (R11)(R9*4), R12
	LEAQ (R12)(R9*4), R13
	ZERO_Z16

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
	OUTPUT(3, avx512F64write)
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
	NEXT(3, 128, avx512F64strip, avx512F64done)

avx512F64done:
	VZEROUPPER
	RET

// func avx2F32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·avx2F32(SB), NOSPLIT, $0-104
avx2F32strip:
	STRIP(2)
	ZERO_Y12(VXORPS)

avx2F32loop:
	AVX2_STEP(VMOVUPS, VBROADCASTSS, VFMADD231PS)
	ADDQ R14, SI
	ADDQ R14, R11
	ADDQ BX, DI
	DECQ CX
	JNZ  avx2F32loop
	OUTPUT(2, avx2F32write)
	AVX2_ADD_STORE(VADDPS, VMOVUPS)
	JMP  avx2F32next

avx2F32write:
	AVX2_STORE(VMOVUPS)

avx2F32next:
	NEXT(2, 24, avx2F32strip, avx2F32done)

avx2F32done:
	VZEROUPPER
	RET

// func avx2F64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·avx2F64(SB), NOSPLIT, $0-104
avx2F64strip:
	STRIP(3)
	ZERO_Y12(VXORPD)

avx2F64loop:
	AVX2_STEP(VMOVUPD, VBROADCASTSD, VFMADD231PD)
	ADDQ R14, SI
	ADDQ R14, R11
	ADDQ BX, DI
	DECQ CX
	JNZ  avx2F64loop
	OUTPUT(3, avx2F64write)
	AVX2_ADD_STORE(VADDPD, VMOVUPD)
	JMP  avx2F64next

avx2F64write:
	AVX2_STORE(VMOVUPD)

avx2F64next:
	NEXT(3, 48, avx2F64strip, avx2F64done)

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
	STRIP(2)
	LEAQ (R11)(R9*4), R12
	ZERO_Z24
	PREFETCH_C12

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
	OUTPUT(2, avx512F32write)
	ADD_STORE_C12
	JMP  avx512F32next

avx512F32write:
	STORE_C12

avx512F32next:
	NEXT(2, 48, avx512F32strip, avx512F32done)

avx512F32done:
	VZEROUPPER
	RET
