//go:build arm64 && !purego

#include "textflag.h"

// The loops of exact.go, four float32 at a time with NEON. As in
// gelu_arm64.s, they do the Go loops' arithmetic operation for operation,
// fusing a multiply-add (FMLA) exactly where the Go compiler fuses one on
// arm64 — erf's Horner steps, ½ + ½·erf and the last + of gelu′ — and
// rounding apart where it does not, so that they give the Go loops' bits
// there (TestExactAsmMatchesGo). e^(−x²/2) is a copy of expf.Exp
// (graph/internal/expf/expf.go, the one definition) as the compiler
// compiles it for arm64: every operation rounded, x·log2e + ½ in float32,
// then floor in float64 (FCVTL, FRINTM, FCVTN), 2ⁿ as two factors built in
// the exponent bits; for arguments ≤ 0 only (−x²/2), so without expf.Exp's
// overflow case, and 0 below expLo as there. A NaN comes out a NaN
// (perhaps another one).
//
// Go's assembler lacks the vector FADD, FSUB, FMUL, FDIV, FMIN, FMAX,
// FCMGE, FCMGT, FRINTM, FCVTZS and the float conversions: those are WORDs,
// each with the instruction it encodes beside it, which TestNEONEncodings
// checks against binutils' disassembler.
//
// Registers: V16–V29 hold constants for the whole loop, each broadcast to
// four lanes (exactConsts: V16 = invSqrt2, V17 = half, V18 = one, V19 = -1, V20 = erfSat, V21 = -erfSat, V22 = ea9, V23 = eb12, V24 = -0.5, V25 = invSqrt2Pi, V26 = log2e, V27 = ln2Hi, V28 = ln2Lo, V29 = expLo), V30 = 127 in each int32 lane, V31 = 0;
// V0 = x; R5 walks erfPoly and R6 expPoly, the coefficients of the Horner
// steps.

DATA exactConsts<>+0(SB)/4, $0x3f3504f3 // invSqrt2
DATA exactConsts<>+4(SB)/4, $0x3f000000 // half
DATA exactConsts<>+8(SB)/4, $0x3f800000 // one
DATA exactConsts<>+12(SB)/4, $0xbf800000 // -1
DATA exactConsts<>+16(SB)/4, $0x407547cb // erfSat
DATA exactConsts<>+20(SB)/4, $0xc07547cb // -erfSat
DATA exactConsts<>+24(SB)/4, $0x39702d51 // ea9
DATA exactConsts<>+28(SB)/4, $0xb3fd3906 // eb12
DATA exactConsts<>+32(SB)/4, $0xbf000000 // -0.5
DATA exactConsts<>+36(SB)/4, $0x3ecc422a // invSqrt2Pi
DATA exactConsts<>+40(SB)/4, $0x3fb8aa3b // log2e
DATA exactConsts<>+44(SB)/4, $0x3f318000 // ln2Hi
DATA exactConsts<>+48(SB)/4, $0xb95e8083 // ln2Lo
DATA exactConsts<>+52(SB)/4, $0xc2aeac50 // expLo
GLOBL exactConsts<>(SB), RODATA|NOPTR, $56

DATA erfPoly<>+0(SB)/4, $0x3b5f5da2 // ea7
DATA erfPoly<>+4(SB)/4, $0x3d50b6eb // ea5
DATA erfPoly<>+8(SB)/4, $0x3e3da740 // ea3
DATA erfPoly<>+12(SB)/4, $0x3f906eba // ea1
DATA erfPoly<>+16(SB)/4, $0x37c588df // eb10
DATA erfPoly<>+20(SB)/4, $0x3a856d28 // eb8
DATA erfPoly<>+24(SB)/4, $0x3c6687d4 // eb6
DATA erfPoly<>+28(SB)/4, $0x3de34c21 // eb4
DATA erfPoly<>+32(SB)/4, $0x3efeb44a // eb2
DATA erfPoly<>+36(SB)/4, $0x3f800000 // eb0
GLOBL erfPoly<>(SB), RODATA|NOPTR, $40

DATA expPoly<>+0(SB)/4, $0x39506967 // ep0
DATA expPoly<>+4(SB)/4, $0x3ab743ce // ep1
DATA expPoly<>+8(SB)/4, $0x3c088908 // ep2
DATA expPoly<>+12(SB)/4, $0x3d2aa9c1 // ep3
DATA expPoly<>+16(SB)/4, $0x3e2aaaaa // ep4
GLOBL expPoly<>(SB), RODATA|NOPTR, $20

DATA exactInt127<>+0(SB)/4, $127
GLOBL exactInt127<>(SB), RODATA|NOPTR, $4

// LOADCONSTS loads exactConsts into V16–V29, 127 into V30's lanes and
// zeroes V31.
#define LOADCONSTS \
	MOVD    $exactConsts<>(SB), R5; \
	VLD1R.P 4(R5), [V16.S4]; \
	VLD1R.P 4(R5), [V17.S4]; \
	VLD1R.P 4(R5), [V18.S4]; \
	VLD1R.P 4(R5), [V19.S4]; \
	VLD1R.P 4(R5), [V20.S4]; \
	VLD1R.P 4(R5), [V21.S4]; \
	VLD1R.P 4(R5), [V22.S4]; \
	VLD1R.P 4(R5), [V23.S4]; \
	VLD1R.P 4(R5), [V24.S4]; \
	VLD1R.P 4(R5), [V25.S4]; \
	VLD1R.P 4(R5), [V26.S4]; \
	VLD1R.P 4(R5), [V27.S4]; \
	VLD1R.P 4(R5), [V28.S4]; \
	VLD1R.P 4(R5), [V29.S4]; \
	MOVD    $exactInt127<>(SB), R5; \
	VLD1R   (R5), [V30.S4]; \
	VEOR    V31.B16, V31.B16, V31.B16

// ERF sets V7 = erf(V1) as exact.go's erf does: V2 = (z ≥ erfSat), V3 =
// (z ≤ −erfSat), V5 = z², p (V7) and q (V8) by Horner, z·p/q clamped to
// [−1, 1], then ±1 where z is saturated. V6 is scratch.
#define ERF \
	MOVD    $erfPoly<>(SB), R5; \
	WORD $0x6e34e422 /* fcmge v2.4s, v1.4s, v20.4s */; \
	WORD $0x6e21e6a3 /* fcmge v3.4s, v21.4s, v1.4s */; \
	WORD $0x6e21dc25 /* fmul v5.4s, v1.4s, v1.4s */; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V22.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V7.S4]; \
	VFMLA   V6.S4, V5.S4, V7.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V7.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V7.S4]; \
	VFMLA   V6.S4, V5.S4, V7.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V23.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V8.S4]; \
	VFMLA   V6.S4, V5.S4, V8.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V8.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V8.S4]; \
	VFMLA   V6.S4, V5.S4, V8.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V8.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V8.S4]; \
	VFMLA   V6.S4, V5.S4, V8.S4; \
	WORD $0x6e27dc27 /* fmul v7.4s, v1.4s, v7.4s */; \
	WORD $0x6e28fce7 /* fdiv v7.4s, v7.4s, v8.4s */; \
	WORD $0x4ea7f647 /* fmin v7.4s, v18.4s, v7.4s */; \
	WORD $0x4e27f667 /* fmax v7.4s, v19.4s, v7.4s */; \
	VBIT    V2.B16, V18.B16, V7.B16; \
	VBIT    V3.B16, V19.B16, V7.B16

// EXP sets V1 = e^V1 for V1 ≤ 0 as expf.Exp does: n = floor(x·log2e + ½)
// (V4; V2, V3 its float64 halves), r = x − n·ln2Hi − n·ln2Lo (V5), p by
// Horner (V7), y = p·r·r + r + 1, times 2^k·2^(n−k), k = n>>1 (V13, V14
// the int32 exponents, V15 = x < expLo, then 0 there). V6, V8 scratch.
#define EXP \
	MOVD    $expPoly<>(SB), R6; \
	WORD $0x6ea1e7af /* fcmgt v15.4s, v29.4s, v1.4s */; \
	WORD $0x6e21df44 /* fmul v4.4s, v26.4s, v1.4s */; \
	WORD $0x4e31d484 /* fadd v4.4s, v4.4s, v17.4s */; \
	WORD $0x0e617882 /* fcvtl v2.2d, v4.2s */; \
	WORD $0x4e617883 /* fcvtl2 v3.2d, v4.4s */; \
	WORD $0x4e619842 /* frintm v2.2d, v2.2d */; \
	WORD $0x4e619863 /* frintm v3.2d, v3.2d */; \
	WORD $0x0e616844 /* fcvtn v4.2s, v2.2d */; \
	WORD $0x4e616864 /* fcvtn2 v4.4s, v3.2d */; \
	WORD $0x6e3bdc86 /* fmul v6.4s, v4.4s, v27.4s */; \
	WORD $0x4ea6d425 /* fsub v5.4s, v1.4s, v6.4s */; \
	WORD $0x6e3cdc86 /* fmul v6.4s, v4.4s, v28.4s */; \
	WORD $0x4ea6d4a5 /* fsub v5.4s, v5.4s, v6.4s */; \
	VLD1R.P 4(R6), [V8.S4]; \
	WORD $0x6e25dd07 /* fmul v7.4s, v8.4s, v5.4s */; \
	VLD1R.P 4(R6), [V8.S4]; \
	WORD $0x4e28d4e7 /* fadd v7.4s, v7.4s, v8.4s */; \
	WORD $0x6e25dce7 /* fmul v7.4s, v7.4s, v5.4s */; \
	VLD1R.P 4(R6), [V8.S4]; \
	WORD $0x4e28d4e7 /* fadd v7.4s, v7.4s, v8.4s */; \
	WORD $0x6e25dce7 /* fmul v7.4s, v7.4s, v5.4s */; \
	VLD1R.P 4(R6), [V8.S4]; \
	WORD $0x4e28d4e7 /* fadd v7.4s, v7.4s, v8.4s */; \
	WORD $0x6e25dce7 /* fmul v7.4s, v7.4s, v5.4s */; \
	VLD1R.P 4(R6), [V8.S4]; \
	WORD $0x4e28d4e7 /* fadd v7.4s, v7.4s, v8.4s */; \
	WORD $0x6e25dce7 /* fmul v7.4s, v7.4s, v5.4s */; \
	WORD $0x4e31d4e7 /* fadd v7.4s, v7.4s, v17.4s */; \
	WORD $0x6e25dce7 /* fmul v7.4s, v7.4s, v5.4s */; \
	WORD $0x6e25dce7 /* fmul v7.4s, v7.4s, v5.4s */; \
	WORD $0x4e25d4e7 /* fadd v7.4s, v7.4s, v5.4s */; \
	WORD $0x4e32d4e7 /* fadd v7.4s, v7.4s, v18.4s */; \
	WORD $0x4ea1b88d /* fcvtzs v13.4s, v4.4s */; \
	WORD $0x4f3f05ae /* sshr v14.4s, v13.4s, #1 */; \
	WORD $0x6eae85ad /* sub v13.4s, v13.4s, v14.4s */; \
	WORD $0x4ebe85ce /* add v14.4s, v14.4s, v30.4s */; \
	WORD $0x4f3755ce /* shl v14.4s, v14.4s, #23 */; \
	WORD $0x4ebe85ad /* add v13.4s, v13.4s, v30.4s */; \
	WORD $0x4f3755ad /* shl v13.4s, v13.4s, #23 */; \
	WORD $0x6e2edce1 /* fmul v1.4s, v7.4s, v14.4s */; \
	WORD $0x6e2ddc21 /* fmul v1.4s, v1.4s, v13.4s */; \
	VBIT    V15.B16, V31.B16, V1.B16

// func exactForwardVec(y, x *float32, n int)
// y = h·erf(x/√2) + h, h = ½x: the product rounded, then x·½ + it fused,
// as the compiler has it. R1 = &x[i], R2 = &y[i], R3 = elements left (n, a
// multiple of 4, not 0).
TEXT ·exactForwardVec(SB), NOSPLIT, $0-24
	MOVD y+0(FP), R2
	MOVD x+8(FP), R1
	MOVD n+16(FP), R3
	LOADCONSTS

efloop:
	VLD1.P 16(R1), [V0.S4]
	WORD $0x6e20de29 // fmul v9.4s, v17.4s, v0.4s
	WORD $0x6e20de01 // fmul v1.4s, v16.4s, v0.4s
	ERF
	WORD $0x6e27dd2a // fmul v10.4s, v9.4s, v7.4s
	VFMLA  V17.S4, V0.S4, V10.S4 // h·e + x·½, fused
	VST1.P [V10.S4], 16(R2)
	SUBS   $4, R3
	BNE    efloop
	RET

// func exactBackwardVec(dx, x, dy *float32, n int)
// dx = dy·(Φ + x·e^(−x²/2)·(1/√(2π))), Φ = ½·erf(x/√2) + ½ fused, and the
// last + fused. R1 = &x[i], R4 = &dy[i], R2 = &dx[i], R3 = elements left
// (n, a multiple of 4, not 0); V9 = Φ, V12 = dy.
TEXT ·exactBackwardVec(SB), NOSPLIT, $0-32
	MOVD dx+0(FP), R2
	MOVD x+8(FP), R1
	MOVD dy+16(FP), R4
	MOVD n+24(FP), R3
	LOADCONSTS

ebloop:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R4), [V12.S4]
	WORD $0x6e20de01 // fmul v1.4s, v16.4s, v0.4s
	ERF
	VMOV   V17.B16, V9.B16
	VFMLA  V7.S4, V17.S4, V9.S4 // ½ + e·½, fused
	WORD $0x6e20df01 // fmul v1.4s, v24.4s, v0.4s
	WORD $0x6e20dc21 // fmul v1.4s, v1.4s, v0.4s
	EXP
	WORD $0x6e21dc0a // fmul v10.4s, v0.4s, v1.4s
	VFMLA  V10.S4, V25.S4, V9.S4 // Φ + x·e·(1/√(2π)), fused
	WORD $0x6e29dd89 // fmul v9.4s, v12.4s, v9.4s
	VST1.P [V9.S4], 16(R2)
	SUBS   $4, R3
	BNE    ebloop
	RET
