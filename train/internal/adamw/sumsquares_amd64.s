//go:build amd64 && !purego

#include "textflag.h"

// func sumSquares32x8(grad *float32, n int, s *[8]float64)
// Entries 0–3 of each group of eight widened to float64 into Y0, 4–7 into
// Y1; their squares added to the partial sums s[0:4] (Y10) and s[4:8] (Y11).
TEXT ·sumSquares32x8(SB), NOSPLIT, $0-24
	MOVQ    grad+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    s+16(FP), DI
	VMOVUPD (DI), Y10
	VMOVUPD 32(DI), Y11

loop:
	VCVTPS2PD (SI), Y0
	VCVTPS2PD 16(SI), Y1
	VMULPD    Y0, Y0, Y0
	VMULPD    Y1, Y1, Y1
	VADDPD    Y0, Y10, Y10
	VADDPD    Y1, Y11, Y11
	ADDQ      $32, SI
	SUBQ      $8, CX
	JNZ       loop
	VMOVUPD   Y10, (DI)
	VMOVUPD   Y11, 32(DI)
	VZEROUPPER
	RET

// func scale32x8(grad *float32, n int, c float64)
TEXT ·scale32x8(SB), NOSPLIT, $0-24
	MOVQ         grad+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD c+16(FP), Y13

sloop:
	VCVTPS2PD   (SI), Y0
	VCVTPS2PD   16(SI), Y1
	VMULPD      Y13, Y0, Y0
	VMULPD      Y13, Y1, Y1
	VCVTPD2PSY  Y0, X0
	VCVTPD2PSY  Y1, X1
	VINSERTF128 $1, X1, Y0, Y0
	VMOVUPS     Y0, (SI)
	ADDQ        $32, SI
	SUBQ        $8, CX
	JNZ         sloop
	VZEROUPPER
	RET
