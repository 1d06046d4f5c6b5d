//go:build amd64 && !purego

#include "textflag.h"

// func update32AVX2(w, grad *float32, m, v *float64, n int, c *Coefs)
//
// update of adamw.go, four parameters at a time: each float32 is widened to
// float64 (exact), updated with one multiply, add, square root or divide
// per operation of the Go loop, in its order, and rounded back to float32.
// No FMA: the Go loop rounds every product.
//
// Y8 = β1, Y9 = 1 − β1, Y10 = β2, Y11 = 1 − β2, Y12 = InvSqrtBias2,
// Y13 = Eps, Y14 = StepSize, Y15 = Decay.
TEXT ·update32AVX2(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX

	// Coefs: Beta1 0, Beta2 8, Eps 16, Decay 24, StepSize 32, InvSqrtBias2 40.
	VBROADCASTSD 0(AX), Y8
	VBROADCASTSD 8(AX), Y10
	VBROADCASTSD 16(AX), Y13
	VBROADCASTSD 24(AX), Y15
	VBROADCASTSD 32(AX), Y14
	VBROADCASTSD 40(AX), Y12
	MOVQ         $0x3ff0000000000000, DX // 1.0
	MOVQ         DX, X0
	VBROADCASTSD X0, Y0
	VSUBPD       Y8, Y0, Y9              // 1 − β1
	VSUBPD       Y10, Y0, Y11            // 1 − β2

loop:
	VCVTPS2PD (SI), Y0       // g
	VMULPD    (R8), Y8, Y1   // β1·m
	VMULPD    Y0, Y9, Y2     // (1 − β1)·g
	VADDPD    Y2, Y1, Y1     // m
	VMOVUPD   Y1, (R8)
	VMULPD    (R9), Y10, Y3  // β2·v
	VMULPD    Y0, Y11, Y4    // (1 − β2)·g
	VMULPD    Y0, Y4, Y4     // ·g
	VADDPD    Y4, Y3, Y3     // v
	VMOVUPD   Y3, (R9)
	VSQRTPD   Y3, Y5
	VMULPD    Y12, Y5, Y5    // √v·InvSqrtBias2
	VADDPD    Y13, Y5, Y5    // + Eps
	VMULPD    Y1, Y14, Y6    // StepSize·m
	VDIVPD    Y5, Y6, Y6     // / denominator
	VCVTPS2PD (DI), Y7       // p
	VMULPD    Y15, Y7, Y7    // p·Decay
	VSUBPD    Y6, Y7, Y7
	VCVTPD2PSY Y7, X7
	VMOVUPS   X7, (DI)
	ADDQ      $16, SI
	ADDQ      $16, DI
	ADDQ      $32, R8
	ADDQ      $32, R9
	SUBQ      $4, CX
	JNZ       loop
	VZEROUPPER
	RET
