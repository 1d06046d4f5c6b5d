//go:build amd64 && !purego

#include "textflag.h"

// func update32AVX2(w, grad *float32, m, v *float32, n int, c *Coefs)
//
// update of adamw.go, four parameters at a time: each float32 (gradient,
// moments, weight) is widened to float64 (exact), updated with one
// multiply, add, square root or divide per operation of the Go loop, in its
// order, and the moments and weight rounded back to float32 when stored;
// the weight's update uses the unrounded moments, as the loop does.
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
	VCVTPS2PD (R8), Y1       // m
	VMULPD    Y1, Y8, Y1     // β1·m
	VMULPD    Y0, Y9, Y2     // (1 − β1)·g
	VADDPD    Y2, Y1, Y1     // m
	VCVTPD2PSY Y1, X2
	VMOVUPS   X2, (R8)
	VCVTPS2PD (R9), Y3       // v
	VMULPD    Y3, Y10, Y3    // β2·v
	VMULPD    Y0, Y11, Y4    // (1 − β2)·g
	VMULPD    Y0, Y4, Y4     // ·g
	VADDPD    Y4, Y3, Y3     // v
	VCVTPD2PSY Y3, X4
	VMOVUPS   X4, (R9)
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
	ADDQ      $16, R8
	ADDQ      $16, R9
	SUBQ      $4, CX
	JNZ       loop
	VZEROUPPER
	RET

// func update32AVX512(w, grad *float32, m, v *float32, n int, c *Coefs)
//
// update32AVX2 eight parameters at a time with AVX-512F: the same
// operations on each lane in the same order, so the same bits.
//
// Z8 = β1, Z9 = 1 − β1, Z10 = β2, Z11 = 1 − β2, Z12 = InvSqrtBias2,
// Z13 = Eps, Z14 = StepSize, Z15 = Decay.
TEXT ·update32AVX512(SB), NOSPLIT, $0-48
	MOVQ w+0(FP), DI
	MOVQ grad+8(FP), SI
	MOVQ m+16(FP), R8
	MOVQ v+24(FP), R9
	MOVQ n+32(FP), CX
	MOVQ c+40(FP), AX

	// Coefs: Beta1 0, Beta2 8, Eps 16, Decay 24, StepSize 32, InvSqrtBias2 40.
	VBROADCASTSD 0(AX), Z8
	VBROADCASTSD 8(AX), Z10
	VBROADCASTSD 16(AX), Z13
	VBROADCASTSD 24(AX), Z15
	VBROADCASTSD 32(AX), Z14
	VBROADCASTSD 40(AX), Z12
	MOVQ         $0x3ff0000000000000, DX // 1.0
	MOVQ         DX, X0
	VBROADCASTSD X0, Z0
	VSUBPD       Z8, Z0, Z9              // 1 − β1
	VSUBPD       Z10, Z0, Z11            // 1 − β2

loop512:
	VCVTPS2PD (SI), Z0       // g
	VCVTPS2PD (R8), Z1       // m
	VMULPD    Z1, Z8, Z1     // β1·m
	VMULPD    Z0, Z9, Z2     // (1 − β1)·g
	VADDPD    Z2, Z1, Z1     // m
	VCVTPD2PS Z1, Y2
	VMOVUPS   Y2, (R8)
	VCVTPS2PD (R9), Z3       // v
	VMULPD    Z3, Z10, Z3    // β2·v
	VMULPD    Z0, Z11, Z4    // (1 − β2)·g
	VMULPD    Z0, Z4, Z4     // ·g
	VADDPD    Z4, Z3, Z3     // v
	VCVTPD2PS Z3, Y4
	VMOVUPS   Y4, (R9)
	VSQRTPD   Z3, Z5
	VMULPD    Z12, Z5, Z5    // √v·InvSqrtBias2
	VADDPD    Z13, Z5, Z5    // + Eps
	VMULPD    Z1, Z14, Z6    // StepSize·m
	VDIVPD    Z5, Z6, Z6     // / denominator
	VCVTPS2PD (DI), Z7       // p
	VMULPD    Z15, Z7, Z7    // p·Decay
	VSUBPD    Z6, Z7, Z7
	VCVTPD2PS Z7, Y7
	VMOVUPS   Y7, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	ADDQ      $32, R8
	ADDQ      $32, R9
	SUBQ      $8, CX
	JNZ       loop512
	VZEROUPPER
	RET
