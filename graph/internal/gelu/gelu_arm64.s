//go:build arm64 && !purego

#include "textflag.h"

// The loops of gelu.go, four float32 at a time with NEON. They do the Go
// loops' arithmetic operation for operation, fusing a multiply-add exactly
// where the Go compiler fuses one on arm64 (x*y + z, and z − x*y), so that
// they give the Go loops' bits there (TestAsmMatchesGo); FMLA/FMLS are the
// fused forms, FMUL and FADD round each product and sum.
//
// Go's assembler lacks the vector FADD, FMUL, FDIV, FMIN, FMAX and FCMGE:
// those are WORDs, each with the instruction it encodes beside it, which
// TestNEONEncodings checks against binutils' disassembler.
//
// Registers (both loops): V16–V27 hold constants for the whole loop
// (geluConsts: V16 = a, V17 = c, V18 = half, V19 = one, V20 = sat, V21 = -sat, V22 = clamp, V23 = -clamp, V24 = a13, V25 = -1, V26 = 3a, V27 = b6),
// V0 = x; R5 walks geluPoly, the coefficients that
// start each Horner step (loaded into the step's accumulator, which FMLA
// then adds the product to).

DATA geluConsts<>+0(SB)/4, $0x3d372713 // a
DATA geluConsts<>+4(SB)/4, $0x3f4c422a // c
DATA geluConsts<>+8(SB)/4, $0x3f000000 // half
DATA geluConsts<>+12(SB)/4, $0x3f800000 // one
DATA geluConsts<>+16(SB)/4, $0x411051ec // sat
DATA geluConsts<>+20(SB)/4, $0xc11051ec // -sat
DATA geluConsts<>+24(SB)/4, $0x40fff644 // clamp
DATA geluConsts<>+28(SB)/4, $0xc0fff644 // -clamp
DATA geluConsts<>+32(SB)/4, $0xa59f25c0 // a13
DATA geluConsts<>+36(SB)/4, $0xbf800000 // -1
DATA geluConsts<>+40(SB)/4, $0x3e095d4f // 3a
DATA geluConsts<>+44(SB)/4, $0x35a0d3d8 // b6
GLOBL geluConsts<>(SB), RODATA|NOPTR, $48

DATA geluPoly<>+0(SB)/4, $0x2a61337e // a11
DATA geluPoly<>+4(SB)/4, $0xaebd37ff // a9
DATA geluPoly<>+8(SB)/4, $0x335c0041 // a7
DATA geluPoly<>+12(SB)/4, $0x3779434a // a5
DATA geluPoly<>+16(SB)/4, $0x3a270ded // a3
DATA geluPoly<>+20(SB)/4, $0x3ba059dc // a1
DATA geluPoly<>+24(SB)/4, $0x38f895d6 // b4
DATA geluPoly<>+28(SB)/4, $0x3b14aa05 // b2
DATA geluPoly<>+32(SB)/4, $0x3ba059dd // b0
GLOBL geluPoly<>(SB), RODATA|NOPTR, $36

// TANH sets V1 = tanh(V1) as gelu.go's tanh does: V2 = (u ≥ sat), V3 =
// (u ≤ −sat), V4 = u clamped to ±clamp, V5 = its square, p (V7) and q
// (V6) by Horner, t = V4·p/q, then ±1 where u is saturated. V8 is scratch.
#define TANH \
	MOVD    $geluPoly<>(SB), R5; \
	WORD $0x6e34e422 /* fcmge v2.4s, v1.4s, v20.4s */; \
	WORD $0x6e21e6a3 /* fcmge v3.4s, v21.4s, v1.4s */; \
	WORD $0x4ea1f6c4 /* fmin v4.4s, v22.4s, v1.4s */; \
	WORD $0x4e24f6e4 /* fmax v4.4s, v23.4s, v4.4s */; \
	WORD $0x6e24dc85 /* fmul v5.4s, v4.4s, v4.4s */; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V24.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V7.S4]; \
	VFMLA   V6.S4, V5.S4, V7.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V7.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V7.S4]; \
	VFMLA   V6.S4, V5.S4, V7.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V7.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V7.S4]; \
	VFMLA   V6.S4, V5.S4, V7.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V27.S4, V5.S4, V6.S4; \
	VLD1R.P 4(R5), [V8.S4]; \
	VFMLA   V6.S4, V5.S4, V8.S4; \
	VLD1R.P 4(R5), [V6.S4]; \
	VFMLA   V8.S4, V5.S4, V6.S4; \
	WORD $0x6e27dc87 /* fmul v7.4s, v4.4s, v7.4s */; \
	WORD $0x6e26fce1 /* fdiv v1.4s, v7.4s, v6.4s */; \
	VBIT    V2.B16, V19.B16, V1.B16; \
	VBIT    V3.B16, V25.B16, V1.B16

// LOADCONSTS loads geluConsts into V16–V27, each broadcast to 4 lanes.
#define LOADCONSTS \
	MOVD    $geluConsts<>(SB), R5; \
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
	VLD1R.P 4(R5), [V27.S4]

// U sets V1 = u = c·(x + a·x·x·x) from V0 = x, as gelu.go: ((a·x)·x) then
// fused with the last ·x and the + x. V10 and V11 are scratch.
#define U \
	WORD $0x6e20de0a /* fmul v10.4s, v16.4s, v0.4s */; \
	WORD $0x6e20dd4a /* fmul v10.4s, v10.4s, v0.4s */; \
	VMOV    V0.B16, V11.B16; \
	VFMLA   V10.S4, V0.S4, V11.S4; \
	WORD $0x6e2bde21 /* fmul v1.4s, v17.4s, v11.4s */; \
	TANH

// func forwardVec(y, x *float32, n int)
// y = ½x·(1 + t). R1 = &x[i], R2 = &y[i], R3 = elements left (n, a
// multiple of 4, not 0).
TEXT ·forwardVec(SB), NOSPLIT, $0-24
	MOVD y+0(FP), R2
	MOVD x+8(FP), R1
	MOVD n+16(FP), R3
	LOADCONSTS

floop:
	VLD1.P 16(R1), [V0.S4]
	WORD $0x6e20de49 // fmul v9.4s, v18.4s, v0.4s
	U
	WORD $0x4e21d661 // fadd v1.4s, v19.4s, v1.4s
	WORD $0x6e21dd21 // fmul v1.4s, v9.4s, v1.4s
	VST1.P [V1.S4], 16(R2)
	SUBS   $4, R3
	BNE    floop
	RET

// func backwardVec(dx, x, dy *float32, n int)
// dx = dy·½(1 + t + x(1 − t²)·c·(1 + 3a·x²)), the last + fused as in Go.
// R1 = &x[i], R4 = &dy[i], R2 = &dx[i], R3 = elements left (n, a multiple
// of 4, not 0).
TEXT ·backwardVec(SB), NOSPLIT, $0-32
	MOVD dx+0(FP), R2
	MOVD x+8(FP), R1
	MOVD dy+16(FP), R4
	MOVD n+24(FP), R3
	LOADCONSTS

bloop:
	VLD1.P 16(R1), [V0.S4]
	VLD1.P 16(R4), [V12.S4]
	U
	WORD $0x4e21d669 // fadd v9.4s, v19.4s, v1.4s
	VMOV   V19.B16, V10.B16
	VFMLS  V1.S4, V1.S4, V10.S4 // 1 − t·t, fused
	WORD $0x6e20dd4a // fmul v10.4s, v10.4s, v0.4s
	WORD $0x6e31dd4a // fmul v10.4s, v10.4s, v17.4s
	WORD $0x6e20df4b // fmul v11.4s, v26.4s, v0.4s
	VMOV   V19.B16, V13.B16
	VFMLA  V11.S4, V0.S4, V13.S4 // 1 + (3a·x)·x, fused
	VFMLA  V10.S4, V13.S4, V9.S4 // (1 + t) + …, fused
	WORD $0x6e29de49 // fmul v9.4s, v18.4s, v9.4s
	WORD $0x6e29dd89 // fmul v9.4s, v12.4s, v9.4s
	VST1.P [V9.S4], 16(R2)
	SUBS   $4, R3
	BNE    bloop
	RET
