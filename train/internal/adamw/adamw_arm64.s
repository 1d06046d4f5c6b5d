//go:build arm64 && !purego

#include "textflag.h"

// The loops of adamw.go and sumsquares.go with NEON: each float32 widened
// to float64 (FCVTL, FCVTL2: exact), one FMUL, FADD, FSUB, FSQRT or FDIV
// per operation of the Go loop, in its order, and the stored values
// rounded back to float32 (FCVTN, FCVTN2). No fused multiply-add: the Go
// loops round every product (their explicit float64 conversions keep the
// compiler from fusing), so both give the same bits (TestAssemblyMatchesGo,
// TestSumSquares, TestScaleAssemblyMatchesGo).
//
// Go's assembler lacks these vector instructions: they are WORDs, each
// with the instruction it encodes beside it, which TestNEONEncodings
// checks against binutils' disassembler.

// func update32x4(w, grad *float32, m, v *float32, n int, c *Coefs)
//
// update of adamw.go, four parameters at a time (two float64 registers
// each): g in V2, V3; m in V4, V5; v in V6, V7; V16–V19 scratch.
// V24 = β1, V25 = 1 − β1, V26 = β2, V27 = 1 − β2, V28 = InvSqrtBias2,
// V29 = Eps, V30 = StepSize, V31 = Decay, each in both lanes.
// R0 = parameters left (n, a multiple of 4, not 0).
TEXT ·update32x4(SB), NOSPLIT, $0-48
	MOVD w+0(FP), R1
	MOVD grad+8(FP), R2
	MOVD m+16(FP), R3
	MOVD v+24(FP), R4
	MOVD n+32(FP), R0
	MOVD c+40(FP), R5

	// Coefs: Beta1 0, Beta2 8, Eps 16, Decay 24, StepSize 32, InvSqrtBias2 40.
	VLD1R.P 8(R5), [V24.D2]
	VLD1R.P 8(R5), [V26.D2]
	VLD1R.P 8(R5), [V29.D2]
	VLD1R.P 8(R5), [V31.D2]
	VLD1R.P 8(R5), [V30.D2]
	VLD1R   (R5), [V28.D2]
	FMOVD   $1.0, F0
	VDUP    V0.D[0], V0.D2
	WORD $0x4ef8d419 // fsub v25.2d, v0.2d, v24.2d  // 1 − β1
	WORD $0x4efad41b // fsub v27.2d, v0.2d, v26.2d  // 1 − β2

loop:
	VLD1.P  16(R2), [V0.S4]
	WORD $0x0e617802 // fcvtl v2.2d, v0.2s
	WORD $0x4e617803 // fcvtl2 v3.2d, v0.4s
	VLD1    (R3), [V1.S4]
	WORD $0x0e617824 // fcvtl v4.2d, v1.2s
	WORD $0x4e617825 // fcvtl2 v5.2d, v1.4s
	WORD $0x6e64df04 // fmul v4.2d, v24.2d, v4.2d  // β1·m
	WORD $0x6e65df05 // fmul v5.2d, v24.2d, v5.2d
	WORD $0x6e62df30 // fmul v16.2d, v25.2d, v2.2d  // (1 − β1)·g
	WORD $0x6e63df31 // fmul v17.2d, v25.2d, v3.2d
	WORD $0x4e70d484 // fadd v4.2d, v4.2d, v16.2d  // m
	WORD $0x4e71d4a5 // fadd v5.2d, v5.2d, v17.2d
	WORD $0x0e616881 // fcvtn v1.2s, v4.2d
	WORD $0x4e6168a1 // fcvtn2 v1.4s, v5.2d
	VST1.P  [V1.S4], 16(R3)
	VLD1    (R4), [V1.S4]
	WORD $0x0e617826 // fcvtl v6.2d, v1.2s
	WORD $0x4e617827 // fcvtl2 v7.2d, v1.4s
	WORD $0x6e66df46 // fmul v6.2d, v26.2d, v6.2d  // β2·v
	WORD $0x6e67df47 // fmul v7.2d, v26.2d, v7.2d
	WORD $0x6e62df70 // fmul v16.2d, v27.2d, v2.2d  // (1 − β2)·g
	WORD $0x6e63df71 // fmul v17.2d, v27.2d, v3.2d
	WORD $0x6e62de10 // fmul v16.2d, v16.2d, v2.2d  // ·g
	WORD $0x6e63de31 // fmul v17.2d, v17.2d, v3.2d
	WORD $0x4e70d4c6 // fadd v6.2d, v6.2d, v16.2d  // v
	WORD $0x4e71d4e7 // fadd v7.2d, v7.2d, v17.2d
	WORD $0x0e6168c1 // fcvtn v1.2s, v6.2d
	WORD $0x4e6168e1 // fcvtn2 v1.4s, v7.2d
	VST1.P  [V1.S4], 16(R4)
	WORD $0x6ee1f8d0 // fsqrt v16.2d, v6.2d  // √v
	WORD $0x6ee1f8f1 // fsqrt v17.2d, v7.2d
	WORD $0x6e7cde10 // fmul v16.2d, v16.2d, v28.2d  // ·InvSqrtBias2
	WORD $0x6e7cde31 // fmul v17.2d, v17.2d, v28.2d
	WORD $0x4e7dd610 // fadd v16.2d, v16.2d, v29.2d  // + Eps
	WORD $0x4e7dd631 // fadd v17.2d, v17.2d, v29.2d
	WORD $0x6e64dfd2 // fmul v18.2d, v30.2d, v4.2d  // StepSize·m
	WORD $0x6e65dfd3 // fmul v19.2d, v30.2d, v5.2d
	WORD $0x6e70fe52 // fdiv v18.2d, v18.2d, v16.2d  // / denominator
	WORD $0x6e71fe73 // fdiv v19.2d, v19.2d, v17.2d
	VLD1    (R1), [V1.S4]
	WORD $0x0e617826 // fcvtl v6.2d, v1.2s
	WORD $0x4e617827 // fcvtl2 v7.2d, v1.4s
	WORD $0x6e7fdcc6 // fmul v6.2d, v6.2d, v31.2d  // p·Decay
	WORD $0x6e7fdce7 // fmul v7.2d, v7.2d, v31.2d
	WORD $0x4ef2d4c6 // fsub v6.2d, v6.2d, v18.2d
	WORD $0x4ef3d4e7 // fsub v7.2d, v7.2d, v19.2d
	WORD $0x0e6168c1 // fcvtn v1.2s, v6.2d
	WORD $0x4e6168e1 // fcvtn2 v1.4s, v7.2d
	VST1.P  [V1.S4], 16(R1)
	SUBS    $4, R0
	BNE     loop
	RET

// func sumSquares32x8(grad *float32, n int, s *[8]float64)
// Entries 0–7 of each group of eight widened to float64 into V2–V5, two
// to a register; their squares added to the partial sums s[0:8] (V16–V19).
// R0 = entries left (n, a multiple of 8, not 0).
TEXT ·sumSquares32x8(SB), NOSPLIT, $0-24
	MOVD grad+0(FP), R1
	MOVD n+8(FP), R0
	MOVD s+16(FP), R3
	VLD1 (R3), [V16.D2, V17.D2, V18.D2, V19.D2]

sqloop:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	WORD $0x0e617802 // fcvtl v2.2d, v0.2s
	WORD $0x4e617803 // fcvtl2 v3.2d, v0.4s
	WORD $0x0e617824 // fcvtl v4.2d, v1.2s
	WORD $0x4e617825 // fcvtl2 v5.2d, v1.4s
	WORD $0x6e62dc42 // fmul v2.2d, v2.2d, v2.2d
	WORD $0x6e63dc63 // fmul v3.2d, v3.2d, v3.2d
	WORD $0x6e64dc84 // fmul v4.2d, v4.2d, v4.2d
	WORD $0x6e65dca5 // fmul v5.2d, v5.2d, v5.2d
	WORD $0x4e62d610 // fadd v16.2d, v16.2d, v2.2d
	WORD $0x4e63d631 // fadd v17.2d, v17.2d, v3.2d
	WORD $0x4e64d652 // fadd v18.2d, v18.2d, v4.2d
	WORD $0x4e65d673 // fadd v19.2d, v19.2d, v5.2d
	SUBS   $8, R0
	BNE    sqloop
	VST1   [V16.D2, V17.D2, V18.D2, V19.D2], (R3)
	RET

// func scale32x8(grad *float32, n int, c float64)
// grad = float32(float64(grad)·c); V24 = c in both lanes.
// R0 = entries left (n, a multiple of 8, not 0).
TEXT ·scale32x8(SB), NOSPLIT, $0-24
	MOVD  grad+0(FP), R1
	MOVD  n+8(FP), R0
	FMOVD c+16(FP), F24
	VDUP  V24.D[0], V24.D2

scloop:
	VLD1   (R1), [V0.S4, V1.S4]
	WORD $0x0e617802 // fcvtl v2.2d, v0.2s
	WORD $0x4e617803 // fcvtl2 v3.2d, v0.4s
	WORD $0x0e617824 // fcvtl v4.2d, v1.2s
	WORD $0x4e617825 // fcvtl2 v5.2d, v1.4s
	WORD $0x6e78dc42 // fmul v2.2d, v2.2d, v24.2d
	WORD $0x6e78dc63 // fmul v3.2d, v3.2d, v24.2d
	WORD $0x6e78dc84 // fmul v4.2d, v4.2d, v24.2d
	WORD $0x6e78dca5 // fmul v5.2d, v5.2d, v24.2d
	WORD $0x0e616840 // fcvtn v0.2s, v2.2d
	WORD $0x4e616860 // fcvtn2 v0.4s, v3.2d
	WORD $0x0e616881 // fcvtn v1.2s, v4.2d
	WORD $0x4e6168a1 // fcvtn2 v1.4s, v5.2d
	VST1.P [V0.S4, V1.S4], 32(R1)
	SUBS   $8, R0
	BNE    scloop
	RET
