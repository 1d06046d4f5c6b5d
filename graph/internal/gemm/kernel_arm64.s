//go:build arm64 && !purego

#include "textflag.h"
#include "neon.h"

// The NEON micro-kernels of kernel.go (microKernel) for arm64: one mr×nr
// tile of C from a strip of A (entry (r, p) at a[r·aRow + p·aStep]: packed,
// or in place) and a panel of B (row p at b[p·bStep], nr numbers), the tile
// held in registers for the whole loop over p.
//
// float32 (8 rows × 12 columns): each row of the tile is three 128-bit
// registers, V0–V23 (row r in V3r–V3r+2). Each step loads B's row into
// V24–V26 (one LD1 of three registers), broadcasts A's eight entries in
// turn into V27–V31 (LD1R, A's rows being any stride apart, as the AVX
// kernels broadcast) and does three FMLAs per row: 9 loads, 24 FMLAs (192
// flops). float64 (8 rows × 6 columns) is the same with two numbers to a
// register.
//
// Each FMLA rounds once, as the Go twin's multiply-adds do on arm64 (the
// compiler fuses x*y + s there): the sums start from zero and take p in
// order, the sum then added to add, so the twin gives these bits
// (TestTwinBits).
//
// The sum starts from zero; at the end, when accumulate is set, the rows
// at add (one every ldAdd elements) are added to it: C's old value (add =
// c, ldAdd = ldc), or a bias row added to every row (ldAdd = 0). Then the
// tile is stored, one row every ldc elements. One call computes strips
// tiles, one below the other: after each tile the kernel moves a by aNext
// elements and c and add by mr rows (the arguments in the frame are
// updated in place) and starts again from the top with the same panel of B.
//
// Go's assembler has the vector FMLA (VFMLA) but not the vector FADD or
// FADDP: those are WORDs, each with the instruction it encodes beside it,
// which TestNEONEncodings checks against binutils' disassembler.
//
// Registers: R0 = steps left; R1–R8 = &a[r·aRow + p·aStep] of rows 0–7,
// R9 = aStep; R10 = &b[p·bStep], R11 = bStep; R12 = &c's current row, R13
// = ldc; R15 = the current row at add, R16 = ldAdd (all strides in bytes).

// The two kernels are one text with two element sizes: SHIFT = log₂ of
// the element's bytes, ARR = the arrangement of a register (S4: four
// float32, D2: two float64). Only the accumulate path's FADDs differ
// beyond that, being WORDs (and so written out in each kernel).

// STRIP loads the arguments for one strip: R0 = k, R1–R8 = the rows of A
// (aRow apart), R9 = aStep, R10 = b, R11 = bStep, the strides in bytes.
#define STRIP(SHIFT) \
	MOVD k+0(FP), R0; \
	MOVD a+8(FP), R1; \
	MOVD aRow+16(FP), R14; \
	LSL  $SHIFT, R14; \
	ADD  R14, R1, R2; \
	ADD  R14, R2, R3; \
	ADD  R14, R3, R4; \
	ADD  R14, R4, R5; \
	ADD  R14, R5, R6; \
	ADD  R14, R6, R7; \
	ADD  R14, R7, R8; \
	MOVD aStep+24(FP), R9; \
	LSL  $SHIFT, R9; \
	MOVD b+32(FP), R10; \
	MOVD bStep+40(FP), R11; \
	LSL  $SHIFT, R11

// STEP does one step of p: B's row into V24–V26, A's eight entries
// broadcast into V27–V31 in turn, 24 FMLAs into the tile.
#define STEP(ARR) \
	VLD1.P  (R10)(R11), [V24.ARR, V25.ARR, V26.ARR]; \
	VLD1R.P (R1)(R9), [V27.ARR]; \
	VLD1R.P (R2)(R9), [V28.ARR]; \
	VLD1R.P (R3)(R9), [V29.ARR]; \
	VFMLA   V24.ARR, V27.ARR, V0.ARR; \
	VFMLA   V25.ARR, V27.ARR, V1.ARR; \
	VFMLA   V26.ARR, V27.ARR, V2.ARR; \
	VLD1R.P (R4)(R9), [V30.ARR]; \
	VFMLA   V24.ARR, V28.ARR, V3.ARR; \
	VFMLA   V25.ARR, V28.ARR, V4.ARR; \
	VFMLA   V26.ARR, V28.ARR, V5.ARR; \
	VLD1R.P (R5)(R9), [V31.ARR]; \
	VFMLA   V24.ARR, V29.ARR, V6.ARR; \
	VFMLA   V25.ARR, V29.ARR, V7.ARR; \
	VFMLA   V26.ARR, V29.ARR, V8.ARR; \
	VLD1R.P (R6)(R9), [V27.ARR]; \
	VFMLA   V24.ARR, V30.ARR, V9.ARR; \
	VFMLA   V25.ARR, V30.ARR, V10.ARR; \
	VFMLA   V26.ARR, V30.ARR, V11.ARR; \
	VLD1R.P (R7)(R9), [V28.ARR]; \
	VFMLA   V24.ARR, V31.ARR, V12.ARR; \
	VFMLA   V25.ARR, V31.ARR, V13.ARR; \
	VFMLA   V26.ARR, V31.ARR, V14.ARR; \
	VLD1R.P (R8)(R9), [V29.ARR]; \
	VFMLA   V24.ARR, V27.ARR, V15.ARR; \
	VFMLA   V25.ARR, V27.ARR, V16.ARR; \
	VFMLA   V26.ARR, V27.ARR, V17.ARR; \
	VFMLA   V24.ARR, V28.ARR, V18.ARR; \
	VFMLA   V25.ARR, V28.ARR, V19.ARR; \
	VFMLA   V26.ARR, V28.ARR, V20.ARR; \
	VFMLA   V24.ARR, V29.ARR, V21.ARR; \
	VFMLA   V25.ARR, V29.ARR, V22.ARR; \
	VFMLA   V26.ARR, V29.ARR, V23.ARR

// OUTPUT loads c and ldc (R12, R13) and goes to write when accumulate is
// not set; else it loads add and ldAdd (R15, R16) and falls through.
#define OUTPUT(SHIFT, write) \
	MOVD    c+48(FP), R12; \
	MOVD    ldc+56(FP), R13; \
	LSL     $SHIFT, R13; \
	MOVBU   accumulate+80(FP), R14; \
	CBZ     R14, write; \
	MOVD    add+64(FP), R15; \
	MOVD    ldAdd+72(FP), R16; \
	LSL     $SHIFT, R16

// STORE stores the tile's eight rows, one every ldc elements.
#define STORE(ARR) \
	VST1.P  [V0.ARR, V1.ARR, V2.ARR], (R12)(R13); \
	VST1.P  [V3.ARR, V4.ARR, V5.ARR], (R12)(R13); \
	VST1.P  [V6.ARR, V7.ARR, V8.ARR], (R12)(R13); \
	VST1.P  [V9.ARR, V10.ARR, V11.ARR], (R12)(R13); \
	VST1.P  [V12.ARR, V13.ARR, V14.ARR], (R12)(R13); \
	VST1.P  [V15.ARR, V16.ARR, V17.ARR], (R12)(R13); \
	VST1.P  [V18.ARR, V19.ARR, V20.ARR], (R12)(R13); \
	VST1.P  [V21.ARR, V22.ARR, V23.ARR], (R12)(R13)

// NEXT saves c for the next tile, and goes to done after the last strip;
// else it moves a by aNext elements and goes to strip again.
#define NEXT(SHIFT, strip, done) \
	MOVD    R12, c+48(FP); \
	MOVD    strips+96(FP), R14; \
	SUBS    $1, R14; \
	BEQ     done; \
	MOVD    R14, strips+96(FP); \
	MOVD    aNext+88(FP), R14; \
	MOVD    a+8(FP), R1; \
	ADD     R14<<SHIFT, R1, R1; \
	MOVD    R1, a+8(FP); \
	B       strip

// func neonF32(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·neonF32(SB), NOSPLIT, $0-104
neonF32strip:
	STRIP(2)
	VZERO24

neonF32loop:
	STEP(S4)
	SUBS    $1, R0
	BNE     neonF32loop

	OUTPUT(2, neonF32write)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e20d700 // fadd v0.4s, v24.4s, v0.4s
	WORD $0x4e21d721 // fadd v1.4s, v25.4s, v1.4s
	WORD $0x4e22d742 // fadd v2.4s, v26.4s, v2.4s
	VST1.P  [V0.S4, V1.S4, V2.S4], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e23d703 // fadd v3.4s, v24.4s, v3.4s
	WORD $0x4e24d724 // fadd v4.4s, v25.4s, v4.4s
	WORD $0x4e25d745 // fadd v5.4s, v26.4s, v5.4s
	VST1.P  [V3.S4, V4.S4, V5.S4], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e26d706 // fadd v6.4s, v24.4s, v6.4s
	WORD $0x4e27d727 // fadd v7.4s, v25.4s, v7.4s
	WORD $0x4e28d748 // fadd v8.4s, v26.4s, v8.4s
	VST1.P  [V6.S4, V7.S4, V8.S4], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e29d709 // fadd v9.4s, v24.4s, v9.4s
	WORD $0x4e2ad72a // fadd v10.4s, v25.4s, v10.4s
	WORD $0x4e2bd74b // fadd v11.4s, v26.4s, v11.4s
	VST1.P  [V9.S4, V10.S4, V11.S4], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e2cd70c // fadd v12.4s, v24.4s, v12.4s
	WORD $0x4e2dd72d // fadd v13.4s, v25.4s, v13.4s
	WORD $0x4e2ed74e // fadd v14.4s, v26.4s, v14.4s
	VST1.P  [V12.S4, V13.S4, V14.S4], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e2fd70f // fadd v15.4s, v24.4s, v15.4s
	WORD $0x4e30d730 // fadd v16.4s, v25.4s, v16.4s
	WORD $0x4e31d751 // fadd v17.4s, v26.4s, v17.4s
	VST1.P  [V15.S4, V16.S4, V17.S4], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e32d712 // fadd v18.4s, v24.4s, v18.4s
	WORD $0x4e33d733 // fadd v19.4s, v25.4s, v19.4s
	WORD $0x4e34d754 // fadd v20.4s, v26.4s, v20.4s
	VST1.P  [V18.S4, V19.S4, V20.S4], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.S4, V25.S4, V26.S4]
	WORD $0x4e35d715 // fadd v21.4s, v24.4s, v21.4s
	WORD $0x4e36d736 // fadd v22.4s, v25.4s, v22.4s
	WORD $0x4e37d757 // fadd v23.4s, v26.4s, v23.4s
	VST1.P  [V21.S4, V22.S4, V23.S4], (R12)(R13)
	MOVD    R15, add+64(FP)
	B       neonF32next

neonF32write:
	STORE(S4)

neonF32next:
	NEXT(2, neonF32strip, neonF32done)

neonF32done:
	RET

// func neonF64(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·neonF64(SB), NOSPLIT, $0-104
neonF64strip:
	STRIP(3)
	VZERO24

neonF64loop:
	STEP(D2)
	SUBS    $1, R0
	BNE     neonF64loop

	OUTPUT(3, neonF64write)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e60d700 // fadd v0.2d, v24.2d, v0.2d
	WORD $0x4e61d721 // fadd v1.2d, v25.2d, v1.2d
	WORD $0x4e62d742 // fadd v2.2d, v26.2d, v2.2d
	VST1.P  [V0.D2, V1.D2, V2.D2], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e63d703 // fadd v3.2d, v24.2d, v3.2d
	WORD $0x4e64d724 // fadd v4.2d, v25.2d, v4.2d
	WORD $0x4e65d745 // fadd v5.2d, v26.2d, v5.2d
	VST1.P  [V3.D2, V4.D2, V5.D2], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e66d706 // fadd v6.2d, v24.2d, v6.2d
	WORD $0x4e67d727 // fadd v7.2d, v25.2d, v7.2d
	WORD $0x4e68d748 // fadd v8.2d, v26.2d, v8.2d
	VST1.P  [V6.D2, V7.D2, V8.D2], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e69d709 // fadd v9.2d, v24.2d, v9.2d
	WORD $0x4e6ad72a // fadd v10.2d, v25.2d, v10.2d
	WORD $0x4e6bd74b // fadd v11.2d, v26.2d, v11.2d
	VST1.P  [V9.D2, V10.D2, V11.D2], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e6cd70c // fadd v12.2d, v24.2d, v12.2d
	WORD $0x4e6dd72d // fadd v13.2d, v25.2d, v13.2d
	WORD $0x4e6ed74e // fadd v14.2d, v26.2d, v14.2d
	VST1.P  [V12.D2, V13.D2, V14.D2], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e6fd70f // fadd v15.2d, v24.2d, v15.2d
	WORD $0x4e70d730 // fadd v16.2d, v25.2d, v16.2d
	WORD $0x4e71d751 // fadd v17.2d, v26.2d, v17.2d
	VST1.P  [V15.D2, V16.D2, V17.D2], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e72d712 // fadd v18.2d, v24.2d, v18.2d
	WORD $0x4e73d733 // fadd v19.2d, v25.2d, v19.2d
	WORD $0x4e74d754 // fadd v20.2d, v26.2d, v20.2d
	VST1.P  [V18.D2, V19.D2, V20.D2], (R12)(R13)
	VLD1.P  (R15)(R16), [V24.D2, V25.D2, V26.D2]
	WORD $0x4e75d715 // fadd v21.2d, v24.2d, v21.2d
	WORD $0x4e76d736 // fadd v22.2d, v25.2d, v22.2d
	WORD $0x4e77d757 // fadd v23.2d, v26.2d, v23.2d
	VST1.P  [V21.D2, V22.D2, V23.D2], (R12)(R13)
	MOVD    R15, add+64(FP)
	B       neonF64next

neonF64write:
	STORE(D2)

neonF64next:
	NEXT(3, neonF64strip, neonF64done)

neonF64done:
	RET

// func dot4F32(k int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer)
//
// out[r] = Σ_p x[p]·b[r·ldb + p] for r < 4 and p < k, k a multiple of 16:
// four dot products at once for gemvT (one row of A times Bᵀ), the rows
// of B read where they lie. Each step loads 16 entries of x (V16–V19) and
// 16 of each row (V20–V23 or V24–V27 in turn, one LD1 of four registers,
// so that a row's load need not wait for the last row's FMLAs) and multiplies them
// into four accumulators per row (V0–V15: sixteen independent FMLA
// chains, enough to cover the FMLA latency at four a cycle); the end adds
// each row's four accumulators, then pairs of lanes (FADDP) into one
// register holding the four sums.
//
// Registers: R0 = steps left, R1 = &x[p], R2–R5 = &b[r·ldb + p], R6 = out.
TEXT ·dot4F32(SB), NOSPLIT, $0-40
	MOVD k+0(FP), R0
	MOVD x+8(FP), R1
	MOVD b+16(FP), R2
	MOVD ldb+24(FP), R7
	LSL  $2, R7
	ADD  R7, R2, R3
	ADD  R7, R3, R4
	ADD  R7, R4, R5
	MOVD out+32(FP), R6
	VZERO16
	LSR  $4, R0
	CBZ  R0, dot4reduce

dot4loop:
	VLD1.P 64(R1), [V16.S4, V17.S4, V18.S4, V19.S4]
	VLD1.P 64(R2), [V20.S4, V21.S4, V22.S4, V23.S4]
	VFMLA  V16.S4, V20.S4, V0.S4
	VFMLA  V17.S4, V21.S4, V1.S4
	VFMLA  V18.S4, V22.S4, V2.S4
	VFMLA  V19.S4, V23.S4, V3.S4
	VLD1.P 64(R3), [V24.S4, V25.S4, V26.S4, V27.S4]
	VFMLA  V16.S4, V24.S4, V4.S4
	VFMLA  V17.S4, V25.S4, V5.S4
	VFMLA  V18.S4, V26.S4, V6.S4
	VFMLA  V19.S4, V27.S4, V7.S4
	VLD1.P 64(R4), [V20.S4, V21.S4, V22.S4, V23.S4]
	VFMLA  V16.S4, V20.S4, V8.S4
	VFMLA  V17.S4, V21.S4, V9.S4
	VFMLA  V18.S4, V22.S4, V10.S4
	VFMLA  V19.S4, V23.S4, V11.S4
	VLD1.P 64(R5), [V24.S4, V25.S4, V26.S4, V27.S4]
	VFMLA  V16.S4, V24.S4, V12.S4
	VFMLA  V17.S4, V25.S4, V13.S4
	VFMLA  V18.S4, V26.S4, V14.S4
	VFMLA  V19.S4, V27.S4, V15.S4
	SUBS   $1, R0
	BNE    dot4loop

dot4reduce:
	WORD $0x4e21d400 // fadd v0.4s, v0.4s, v1.4s
	WORD $0x4e23d442 // fadd v2.4s, v2.4s, v3.4s
	WORD $0x4e22d400 // fadd v0.4s, v0.4s, v2.4s
	WORD $0x4e25d484 // fadd v4.4s, v4.4s, v5.4s
	WORD $0x4e27d4c6 // fadd v6.4s, v6.4s, v7.4s
	WORD $0x4e26d484 // fadd v4.4s, v4.4s, v6.4s
	WORD $0x4e29d508 // fadd v8.4s, v8.4s, v9.4s
	WORD $0x4e2bd54a // fadd v10.4s, v10.4s, v11.4s
	WORD $0x4e2ad508 // fadd v8.4s, v8.4s, v10.4s
	WORD $0x4e2dd58c // fadd v12.4s, v12.4s, v13.4s
	WORD $0x4e2fd5ce // fadd v14.4s, v14.4s, v15.4s
	WORD $0x4e2ed58c // fadd v12.4s, v12.4s, v14.4s
	WORD $0x6e24d400 // faddp v0.4s, v0.4s, v4.4s
	WORD $0x6e2cd508 // faddp v8.4s, v8.4s, v12.4s
	WORD $0x6e28d400 // faddp v0.4s, v0.4s, v8.4s
	VST1   [V0.S4], (R6)
	RET
