//go:build amd64 && !purego

#include "textflag.h"

// The loops of layernorm.go, eight float32 at a time with AVX2, in float64:
// elements 0–3 of each group of eight widened into one register, 4–7 into
// another, so partial sum j%8 is lane j%4 of the first or second. Products
// and sums are rounded apart (no FMA), as in the Go loops.

// LOAD8(p, lo, hi) widens the eight float32 at p into float64 lo and hi.
#define LOAD8(p, lo, hi) \
	VCVTPS2PD (p), lo; \
	VCVTPS2PD 16(p), hi

// STORE8(lo, hi, p) narrows float64 lo and hi to eight float32 at p.
#define STORE8(lo, hi, p) \
	VCVTPD2PSY lo, X6; \
	VCVTPD2PSY hi, X7; \
	VINSERTF128 $1, X7, Y6, Y6; \
	VMOVUPS Y6, (p)

// func sums8(x *float32, n int, s *[8]float64)
TEXT ·sums8(SB), NOSPLIT, $0-24
	MOVQ    x+0(FP), SI
	MOVQ    n+8(FP), CX
	MOVQ    s+16(FP), DI
	VMOVUPD (DI), Y10
	VMOVUPD 32(DI), Y11

sloop:
	LOAD8(SI, Y0, Y1)
	VADDPD Y0, Y10, Y10
	VADDPD Y1, Y11, Y11
	ADDQ   $32, SI
	SUBQ   $8, CX
	JNZ    sloop
	VMOVUPD Y10, (DI)
	VMOVUPD Y11, 32(DI)
	VZEROUPPER
	RET

// func squaredDeviations8(x *float32, n int, mean float64, s *[8]float64)
TEXT ·squaredDeviations8(SB), NOSPLIT, $0-32
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	VBROADCASTSD mean+16(FP), Y14
	MOVQ         s+24(FP), DI
	VMOVUPD      (DI), Y10
	VMOVUPD      32(DI), Y11

dloop:
	LOAD8(SI, Y0, Y1)
	VSUBPD Y14, Y0, Y0
	VSUBPD Y14, Y1, Y1
	VMULPD Y0, Y0, Y0
	VMULPD Y1, Y1, Y1
	VADDPD Y0, Y10, Y10
	VADDPD Y1, Y11, Y11
	ADDQ   $32, SI
	SUBQ   $8, CX
	JNZ    dloop
	VMOVUPD Y10, (DI)
	VMOVUPD Y11, 32(DI)
	VZEROUPPER
	RET

// func normalize8(y, x, w, b *float32, n int, mean, rstd float64)
// y = (x − mean)·rstd·w (+ b unless b is nil).
TEXT ·normalize8(SB), NOSPLIT, $0-56
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         b+24(FP), R8
	MOVQ         n+32(FP), CX
	VBROADCASTSD mean+40(FP), Y14
	VBROADCASTSD rstd+48(FP), Y13
	TESTQ        R8, R8
	JZ           nobias

bloop:
	LOAD8(SI, Y0, Y1)
	VSUBPD Y14, Y0, Y0
	VSUBPD Y14, Y1, Y1
	VMULPD Y13, Y0, Y0
	VMULPD Y13, Y1, Y1
	LOAD8(DX, Y2, Y3)
	VMULPD Y2, Y0, Y0
	VMULPD Y3, Y1, Y1
	LOAD8(R8, Y2, Y3)
	VADDPD Y2, Y0, Y0
	VADDPD Y3, Y1, Y1
	STORE8(Y0, Y1, DI)
	ADDQ   $32, SI
	ADDQ   $32, DX
	ADDQ   $32, R8
	ADDQ   $32, DI
	SUBQ   $8, CX
	JNZ    bloop
	VZEROUPPER
	RET

nobias:
	LOAD8(SI, Y0, Y1)
	VSUBPD Y14, Y0, Y0
	VSUBPD Y14, Y1, Y1
	VMULPD Y13, Y0, Y0
	VMULPD Y13, Y1, Y1
	LOAD8(DX, Y2, Y3)
	VMULPD Y2, Y0, Y0
	VMULPD Y3, Y1, Y1
	STORE8(Y0, Y1, DI)
	ADDQ   $32, SI
	ADDQ   $32, DX
	ADDQ   $32, DI
	SUBQ   $8, CX
	JNZ    nobias
	VZEROUPPER
	RET

// func gradSums8(x, w, dy *float32, n int, mean, rstd float64, s *[16]float64)
// s[:8] += g = dy·w, s[8:] += g·(x − mean)·rstd.
TEXT ·gradSums8(SB), NOSPLIT, $0-56
	MOVQ         x+0(FP), SI
	MOVQ         w+8(FP), DX
	MOVQ         dy+16(FP), BX
	MOVQ         n+24(FP), CX
	VBROADCASTSD mean+32(FP), Y14
	VBROADCASTSD rstd+40(FP), Y13
	MOVQ         s+48(FP), DI
	VMOVUPD      (DI), Y8
	VMOVUPD      32(DI), Y9
	VMOVUPD      64(DI), Y10
	VMOVUPD      96(DI), Y11

gloop:
	LOAD8(BX, Y0, Y1)
	LOAD8(DX, Y2, Y3)
	VMULPD Y2, Y0, Y0 // g
	VMULPD Y3, Y1, Y1
	VADDPD Y0, Y8, Y8
	VADDPD Y1, Y9, Y9
	LOAD8(SI, Y2, Y3)
	VSUBPD Y14, Y2, Y2
	VSUBPD Y14, Y3, Y3
	VMULPD Y2, Y0, Y0
	VMULPD Y3, Y1, Y1
	VMULPD Y13, Y0, Y0
	VMULPD Y13, Y1, Y1
	VADDPD Y0, Y10, Y10
	VADDPD Y1, Y11, Y11
	ADDQ   $32, SI
	ADDQ   $32, DX
	ADDQ   $32, BX
	SUBQ   $8, CX
	JNZ    gloop
	VMOVUPD Y8, (DI)
	VMOVUPD Y9, 32(DI)
	VMOVUPD Y10, 64(DI)
	VMOVUPD Y11, 96(DI)
	VZEROUPPER
	RET

// func backwardX8(dx, x, w, dy *float32, n int, mean, rstd, mg, mgn float64)
// dx = (dy·w − mg − (x − mean)·rstd·mgn)·rstd.
TEXT ·backwardX8(SB), NOSPLIT, $0-72
	MOVQ         dx+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         w+16(FP), DX
	MOVQ         dy+24(FP), BX
	MOVQ         n+32(FP), CX
	VBROADCASTSD mean+40(FP), Y14
	VBROADCASTSD rstd+48(FP), Y13
	VBROADCASTSD mg+56(FP), Y12
	VBROADCASTSD mgn+64(FP), Y11

xloop:
	LOAD8(SI, Y0, Y1)
	VSUBPD Y14, Y0, Y0
	VSUBPD Y14, Y1, Y1
	VMULPD Y13, Y0, Y0 // norm
	VMULPD Y13, Y1, Y1
	VMULPD Y11, Y0, Y0 // norm·mgn
	VMULPD Y11, Y1, Y1
	LOAD8(BX, Y2, Y3)
	LOAD8(DX, Y4, Y5)
	VMULPD Y4, Y2, Y2 // g
	VMULPD Y5, Y3, Y3
	VSUBPD Y12, Y2, Y2
	VSUBPD Y12, Y3, Y3
	VSUBPD Y0, Y2, Y2
	VSUBPD Y1, Y3, Y3
	VMULPD Y13, Y2, Y2
	VMULPD Y13, Y3, Y3
	STORE8(Y2, Y3, DI)
	ADDQ   $32, SI
	ADDQ   $32, DX
	ADDQ   $32, BX
	ADDQ   $32, DI
	SUBQ   $8, CX
	JNZ    xloop
	VZEROUPPER
	RET

// func accumulateW8(dw, x, dy *float32, n int, mean, rstd float64)
// dw += float32(dy·(x − mean)·rstd), the sum in float32.
TEXT ·accumulateW8(SB), NOSPLIT, $0-48
	MOVQ         dw+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         dy+16(FP), BX
	MOVQ         n+24(FP), CX
	VBROADCASTSD mean+32(FP), Y14
	VBROADCASTSD rstd+40(FP), Y13

wloop:
	LOAD8(SI, Y0, Y1)
	VSUBPD      Y14, Y0, Y0
	VSUBPD      Y14, Y1, Y1
	LOAD8(BX, Y2, Y3)
	VMULPD      Y0, Y2, Y2
	VMULPD      Y1, Y3, Y3
	VMULPD      Y13, Y2, Y2
	VMULPD      Y13, Y3, Y3
	VCVTPD2PSY  Y2, X2
	VCVTPD2PSY  Y3, X3
	VINSERTF128 $1, X3, Y2, Y2
	VADDPS      (DI), Y2, Y2
	VMOVUPS     Y2, (DI)
	ADDQ        $32, SI
	ADDQ        $32, BX
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         wloop
	VZEROUPPER
	RET
