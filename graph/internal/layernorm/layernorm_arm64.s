//go:build arm64 && !purego

#include "textflag.h"

// The loops of layernorm.go, eight float32 at a time with NEON, in
// float64: each group of eight is widened into four registers of two
// (FCVTL, FCVTL2), so partial sum j%8 is lane j%2 of register j%8/2, and
// the eight sums are stored in order. Products and sums are rounded apart
// (FMUL, FADD: no FMLA), as in the Go loops, whose explicit conversions
// keep the compiler from fusing them: the two give the same bits
// (TestAsmMatchesGo).
//
// Go's assembler lacks these vector instructions (FADD, FSUB, FMUL and the
// conversions FCVTL/FCVTL2/FCVTN/FCVTN2): they are WORDs, each with the
// instruction it encodes beside it, which TestNEONEncodings checks against
// binutils' disassembler.
//
// Registers: R0 = elements left (n, a multiple of 8, not 0); V0, V1 the
// float32 loaded, V2–V5, V8–V15 widened float64; V16–V23 partial sums;
// V24 = mean, V25 = rstd, V26 = mg, V27 = mgn, each in both lanes; V6, V7
// narrowed float32.

// The loops are written with these steps, each on fixed registers (the
// WORDs encode them).

// WIDEN_V2 and WIDEN_V8 load the eight float32 at p (advancing p) into
// V0, V1 and widen them into V2–V5, or V8–V11.
#define WIDEN_V2(p) \
	VLD1.P  32(p), [V0.S4, V1.S4]; \
	WORD $0x0e617802 /* fcvtl v2.2d, v0.2s */; \
	WORD $0x4e617803 /* fcvtl2 v3.2d, v0.4s */; \
	WORD $0x0e617824 /* fcvtl v4.2d, v1.2s */; \
	WORD $0x4e617825 /* fcvtl2 v5.2d, v1.4s */
#define WIDEN_V8(p) \
	VLD1.P  32(p), [V0.S4, V1.S4]; \
	WORD $0x0e617808 /* fcvtl v8.2d, v0.2s */; \
	WORD $0x4e617809 /* fcvtl2 v9.2d, v0.4s */; \
	WORD $0x0e61782a /* fcvtl v10.2d, v1.2s */; \
	WORD $0x4e61782b /* fcvtl2 v11.2d, v1.4s */

// CENTER_V2 subtracts the mean (V24) from V2–V5.
#define CENTER_V2 \
	WORD $0x4ef8d442 /* fsub v2.2d, v2.2d, v24.2d */; \
	WORD $0x4ef8d463 /* fsub v3.2d, v3.2d, v24.2d */; \
	WORD $0x4ef8d484 /* fsub v4.2d, v4.2d, v24.2d */; \
	WORD $0x4ef8d4a5 /* fsub v5.2d, v5.2d, v24.2d */

// SCALE_V2 and SCALE_V8 multiply V2–V5, or V8–V11, by rstd (V25).
#define SCALE_V2 \
	WORD $0x6e79dc42 /* fmul v2.2d, v2.2d, v25.2d */; \
	WORD $0x6e79dc63 /* fmul v3.2d, v3.2d, v25.2d */; \
	WORD $0x6e79dc84 /* fmul v4.2d, v4.2d, v25.2d */; \
	WORD $0x6e79dca5 /* fmul v5.2d, v5.2d, v25.2d */
#define SCALE_V8 \
	WORD $0x6e79dd08 /* fmul v8.2d, v8.2d, v25.2d */; \
	WORD $0x6e79dd29 /* fmul v9.2d, v9.2d, v25.2d */; \
	WORD $0x6e79dd4a /* fmul v10.2d, v10.2d, v25.2d */; \
	WORD $0x6e79dd6b /* fmul v11.2d, v11.2d, v25.2d */

// MUL_V2_V8 multiplies V2–V5 by V8–V11.
#define MUL_V2_V8 \
	WORD $0x6e68dc42 /* fmul v2.2d, v2.2d, v8.2d */; \
	WORD $0x6e69dc63 /* fmul v3.2d, v3.2d, v9.2d */; \
	WORD $0x6e6adc84 /* fmul v4.2d, v4.2d, v10.2d */; \
	WORD $0x6e6bdca5 /* fmul v5.2d, v5.2d, v11.2d */

// SUM_V16_V2 adds V2–V5 to the partial sums V16–V19.
#define SUM_V16_V2 \
	WORD $0x4e62d610 /* fadd v16.2d, v16.2d, v2.2d */; \
	WORD $0x4e63d631 /* fadd v17.2d, v17.2d, v3.2d */; \
	WORD $0x4e64d652 /* fadd v18.2d, v18.2d, v4.2d */; \
	WORD $0x4e65d673 /* fadd v19.2d, v19.2d, v5.2d */

// NARROW_V2 and NARROW_V8 round V2–V5, or V8–V11, to float32 into V6,
// V7.
#define NARROW_V2 \
	WORD $0x0e616846 /* fcvtn v6.2s, v2.2d */; \
	WORD $0x4e616866 /* fcvtn2 v6.4s, v3.2d */; \
	WORD $0x0e616887 /* fcvtn v7.2s, v4.2d */; \
	WORD $0x4e6168a7 /* fcvtn2 v7.4s, v5.2d */
#define NARROW_V8 \
	WORD $0x0e616906 /* fcvtn v6.2s, v8.2d */; \
	WORD $0x4e616926 /* fcvtn2 v6.4s, v9.2d */; \
	WORD $0x0e616947 /* fcvtn v7.2s, v10.2d */; \
	WORD $0x4e616967 /* fcvtn2 v7.4s, v11.2d */

// func sums8(x *float32, n int, s *[8]float64)
TEXT ·sums8(SB), NOSPLIT, $0-24
	MOVD    x+0(FP), R1
	MOVD    n+8(FP), R0
	MOVD    s+16(FP), R3
	VLD1    (R3), [V16.D2, V17.D2, V18.D2, V19.D2]

sloop:
	WIDEN_V2(R1)
	SUM_V16_V2
	SUBS    $8, R0
	BNE     sloop
	VST1    [V16.D2, V17.D2, V18.D2, V19.D2], (R3)
	RET

// func squaredDeviations8(x *float32, n int, mean float64, s *[8]float64)
TEXT ·squaredDeviations8(SB), NOSPLIT, $0-32
	MOVD    x+0(FP), R1
	MOVD    n+8(FP), R0
	FMOVD   mean+16(FP), F24
	VDUP    V24.D[0], V24.D2
	MOVD    s+24(FP), R3
	VLD1    (R3), [V16.D2, V17.D2, V18.D2, V19.D2]

dloop:
	WIDEN_V2(R1)
	CENTER_V2
	WORD $0x6e62dc42 // fmul v2.2d, v2.2d, v2.2d
	WORD $0x6e63dc63 // fmul v3.2d, v3.2d, v3.2d
	WORD $0x6e64dc84 // fmul v4.2d, v4.2d, v4.2d
	WORD $0x6e65dca5 // fmul v5.2d, v5.2d, v5.2d
	SUM_V16_V2
	SUBS    $8, R0
	BNE     dloop
	VST1    [V16.D2, V17.D2, V18.D2, V19.D2], (R3)
	RET

// func normalize8(y, x, w, b *float32, n int, mean, rstd float64)
// y = (x − mean)·rstd·w (+ b unless b is nil).
TEXT ·normalize8(SB), NOSPLIT, $0-56
	MOVD    y+0(FP), R2
	MOVD    x+8(FP), R1
	MOVD    w+16(FP), R3
	MOVD    b+24(FP), R4
	MOVD    n+32(FP), R0
	FMOVD   mean+40(FP), F24
	VDUP    V24.D[0], V24.D2
	FMOVD   rstd+48(FP), F25
	VDUP    V25.D[0], V25.D2
	CBZ     R4, nobias

bloop:
	WIDEN_V2(R1)
	CENTER_V2
	SCALE_V2
	WIDEN_V8(R3)
	MUL_V2_V8
	WIDEN_V8(R4)
	WORD $0x4e68d442 // fadd v2.2d, v2.2d, v8.2d
	WORD $0x4e69d463 // fadd v3.2d, v3.2d, v9.2d
	WORD $0x4e6ad484 // fadd v4.2d, v4.2d, v10.2d
	WORD $0x4e6bd4a5 // fadd v5.2d, v5.2d, v11.2d
	NARROW_V2
	VST1.P  [V6.S4, V7.S4], 32(R2)
	SUBS    $8, R0
	BNE     bloop
	RET

nobias:
	WIDEN_V2(R1)
	CENTER_V2
	SCALE_V2
	WIDEN_V8(R3)
	MUL_V2_V8
	NARROW_V2
	VST1.P  [V6.S4, V7.S4], 32(R2)
	SUBS    $8, R0
	BNE     nobias
	RET

// func gradSums8(x, w, dy *float32, n int, mean, rstd float64, s *[16]float64)
// s[:8] += g = dy·w, s[8:] += g·(x − mean)·rstd.
TEXT ·gradSums8(SB), NOSPLIT, $0-56
	MOVD    x+0(FP), R1
	MOVD    w+8(FP), R3
	MOVD    dy+16(FP), R4
	MOVD    n+24(FP), R0
	FMOVD   mean+32(FP), F24
	VDUP    V24.D[0], V24.D2
	FMOVD   rstd+40(FP), F25
	VDUP    V25.D[0], V25.D2
	MOVD    s+48(FP), R5
	VLD1    (R5), [V16.D2, V17.D2, V18.D2, V19.D2]
	ADD     $64, R5, R6
	VLD1    (R6), [V20.D2, V21.D2, V22.D2, V23.D2]

gloop:
	WIDEN_V2(R4)
	WIDEN_V8(R3)
	MUL_V2_V8
	SUM_V16_V2
	WIDEN_V8(R1)
	WORD $0x4ef8d508 // fsub v8.2d, v8.2d, v24.2d
	WORD $0x4ef8d529 // fsub v9.2d, v9.2d, v24.2d
	WORD $0x4ef8d54a // fsub v10.2d, v10.2d, v24.2d
	WORD $0x4ef8d56b // fsub v11.2d, v11.2d, v24.2d
	MUL_V2_V8
	SCALE_V2
	WORD $0x4e62d694 // fadd v20.2d, v20.2d, v2.2d
	WORD $0x4e63d6b5 // fadd v21.2d, v21.2d, v3.2d
	WORD $0x4e64d6d6 // fadd v22.2d, v22.2d, v4.2d
	WORD $0x4e65d6f7 // fadd v23.2d, v23.2d, v5.2d
	SUBS    $8, R0
	BNE     gloop
	VST1    [V16.D2, V17.D2, V18.D2, V19.D2], (R5)
	VST1    [V20.D2, V21.D2, V22.D2, V23.D2], (R6)
	RET

// func backwardX8(dx, x, w, dy *float32, n int, mean, rstd, mg, mgn float64)
// dx = (dy·w − mg − (x − mean)·rstd·mgn)·rstd.
TEXT ·backwardX8(SB), NOSPLIT, $0-72
	MOVD    dx+0(FP), R2
	MOVD    x+8(FP), R1
	MOVD    w+16(FP), R3
	MOVD    dy+24(FP), R4
	MOVD    n+32(FP), R0
	FMOVD   mean+40(FP), F24
	VDUP    V24.D[0], V24.D2
	FMOVD   rstd+48(FP), F25
	VDUP    V25.D[0], V25.D2
	FMOVD   mg+56(FP), F26
	VDUP    V26.D[0], V26.D2
	FMOVD   mgn+64(FP), F27
	VDUP    V27.D[0], V27.D2

xloop:
	WIDEN_V2(R1)
	CENTER_V2
	SCALE_V2
	WORD $0x6e7bdc42 // fmul v2.2d, v2.2d, v27.2d
	WORD $0x6e7bdc63 // fmul v3.2d, v3.2d, v27.2d
	WORD $0x6e7bdc84 // fmul v4.2d, v4.2d, v27.2d
	WORD $0x6e7bdca5 // fmul v5.2d, v5.2d, v27.2d
	WIDEN_V8(R4)
	VLD1.P  32(R3), [V0.S4, V1.S4]
	WORD $0x0e61780c // fcvtl v12.2d, v0.2s
	WORD $0x4e61780d // fcvtl2 v13.2d, v0.4s
	WORD $0x0e61782e // fcvtl v14.2d, v1.2s
	WORD $0x4e61782f // fcvtl2 v15.2d, v1.4s
	WORD $0x6e6cdd08 // fmul v8.2d, v8.2d, v12.2d
	WORD $0x6e6ddd29 // fmul v9.2d, v9.2d, v13.2d
	WORD $0x6e6edd4a // fmul v10.2d, v10.2d, v14.2d
	WORD $0x6e6fdd6b // fmul v11.2d, v11.2d, v15.2d
	WORD $0x4efad508 // fsub v8.2d, v8.2d, v26.2d
	WORD $0x4efad529 // fsub v9.2d, v9.2d, v26.2d
	WORD $0x4efad54a // fsub v10.2d, v10.2d, v26.2d
	WORD $0x4efad56b // fsub v11.2d, v11.2d, v26.2d
	WORD $0x4ee2d508 // fsub v8.2d, v8.2d, v2.2d
	WORD $0x4ee3d529 // fsub v9.2d, v9.2d, v3.2d
	WORD $0x4ee4d54a // fsub v10.2d, v10.2d, v4.2d
	WORD $0x4ee5d56b // fsub v11.2d, v11.2d, v5.2d
	SCALE_V8
	NARROW_V8
	VST1.P  [V6.S4, V7.S4], 32(R2)
	SUBS    $8, R0
	BNE     xloop
	RET

// func accumulateW8(dw, x, dy *float32, n int, mean, rstd float64)
// dw += float32(dy·(x − mean)·rstd), the sum in float32.
TEXT ·accumulateW8(SB), NOSPLIT, $0-48
	MOVD    dw+0(FP), R2
	MOVD    x+8(FP), R1
	MOVD    dy+16(FP), R4
	MOVD    n+24(FP), R0
	FMOVD   mean+32(FP), F24
	VDUP    V24.D[0], V24.D2
	FMOVD   rstd+40(FP), F25
	VDUP    V25.D[0], V25.D2

wloop:
	WIDEN_V2(R1)
	CENTER_V2
	WIDEN_V8(R4)
	WORD $0x6e62dd08 // fmul v8.2d, v8.2d, v2.2d
	WORD $0x6e63dd29 // fmul v9.2d, v9.2d, v3.2d
	WORD $0x6e64dd4a // fmul v10.2d, v10.2d, v4.2d
	WORD $0x6e65dd6b // fmul v11.2d, v11.2d, v5.2d
	SCALE_V8
	NARROW_V8
	VLD1    (R2), [V0.S4, V1.S4]
	WORD $0x4e26d406 // fadd v6.4s, v0.4s, v6.4s
	WORD $0x4e27d427 // fadd v7.4s, v1.4s, v7.4s
	VST1.P  [V6.S4, V7.S4], 32(R2)
	SUBS    $8, R0
	BNE     wloop
	RET
