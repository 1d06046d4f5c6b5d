//go:build amd64 && !purego

#include "textflag.h"

// Exp of expf.go eight at a time with AVX2: the same float32 operations in
// the same order (a multiplication and an addition, never one FMA), so the
// same bits. Each constant is stored eight times (one 256-bit vector), so
// that it can be an operand of a vector instruction straight from memory.

#define VEC8(name, bits) \
	DATA name<>+0(SB)/4, $bits; \
	DATA name<>+4(SB)/4, $bits; \
	DATA name<>+8(SB)/4, $bits; \
	DATA name<>+12(SB)/4, $bits; \
	DATA name<>+16(SB)/4, $bits; \
	DATA name<>+20(SB)/4, $bits; \
	DATA name<>+24(SB)/4, $bits; \
	DATA name<>+28(SB)/4, $bits; \
	GLOBL name<>(SB), RODATA|NOPTR, $32

VEC8(expLo, 0xc2aeac50)  // -87.33655
VEC8(expHi, 0x42b17218)  // 88.72284
VEC8(log2e, 0x3fb8aa3b)  // 1.442695
VEC8(half, 0x3f000000)   // 0.5
VEC8(ln2Hi, 0x3f318000)  // 0.6933594
VEC8(ln2Lo, 0xb95e8083)  // -0.00021219444
VEC8(ep0, 0x39506967)    // 0.00019875691
VEC8(ep1, 0x3ab743ce)    // 0.0013981999
VEC8(ep2, 0x3c088908)    // 0.008333452
VEC8(ep3, 0x3d2aa9c1)    // 0.041665796
VEC8(ep4, 0x3e2aaaaa)    // 0.16666666
VEC8(ep5, 0x3f000000)    // 0.5
VEC8(one, 0x3f800000)    // 1
VEC8(posInf, 0x7f800000) // +Inf
VEC8(negInf, 0xff800000) // -Inf
VEC8(bias127, 0x0000007f) // the float32 exponent bias, as an int32

// one64 = 1.0 (float64)
DATA one64<>+0(SB)/8, $0x3ff0000000000000
GLOBL one64<>(SB), RODATA|NOPTR, $8

// tailMask: loaded from byte 4·(8 − k) on, the first k lanes all ones and
// the others zero, the mask of the last k = n%8 elements of a row.
DATA tailMask<>+0(SB)/8, $0xffffffffffffffff
DATA tailMask<>+8(SB)/8, $0xffffffffffffffff
DATA tailMask<>+16(SB)/8, $0xffffffffffffffff
DATA tailMask<>+24(SB)/8, $0xffffffffffffffff
DATA tailMask<>+32(SB)/8, $0
DATA tailMask<>+40(SB)/8, $0
DATA tailMask<>+48(SB)/8, $0
DATA tailMask<>+56(SB)/8, $0
GLOBL tailMask<>(SB), RODATA|NOPTR, $64

// EXP8 sets y = Exp(x), eight lanes; t and n are scratch, x is kept.
// Needs Y15 = expLo and Y14 = expHi (registers, so that a NaN in x, the
// second source of VMAXPS/VMINPS, is what comes out of the clamp).
#define EXP8(x, y, t, n) \
	VMAXPS     x, Y15, t; \ // t = x clamped to [expLo, expHi]: n stays in [−126, 128]
	VMINPS     t, Y14, t; \
	VMULPS     log2e<>(SB), t, n; \ // n = floor(x·log2e + ½)
	VADDPS     half<>(SB), n, n; \
	VROUNDPS   $1, n, n; \
	VMULPS     ln2Hi<>(SB), n, y; \ // t = r = x − n·ln2Hi − n·ln2Lo
	VSUBPS     y, t, t; \
	VMULPS     ln2Lo<>(SB), n, y; \
	VSUBPS     y, t, t; \
	VMULPS     ep0<>(SB), t, y; \ // y = p(r), Horner: p ← p·r + c
	VADDPS     ep1<>(SB), y, y; \
	VMULPS     t, y, y; \
	VADDPS     ep2<>(SB), y, y; \
	VMULPS     t, y, y; \
	VADDPS     ep3<>(SB), y, y; \
	VMULPS     t, y, y; \
	VADDPS     ep4<>(SB), y, y; \
	VMULPS     t, y, y; \
	VADDPS     ep5<>(SB), y, y; \
	VMULPS     t, y, y; \ // y = e^r = p·r·r + r + 1
	VMULPS     t, y, y; \
	VADDPS     t, y, y; \
	VADDPS     one<>(SB), y, y; \
	VCVTTPS2DQ n, n; \ // y = y·2^k·2^(n−k), k = n>>1
	VPSRAD     $1, n, t; \
	VPSUBD     t, n, n; \
	VPADDD     bias127<>(SB), t, t; \
	VPSLLD     $23, t, t; \
	VMULPS     t, y, y; \
	VPADDD     bias127<>(SB), n, n; \
	VPSLLD     $23, n, n; \
	VMULPS     n, y, y; \
	VCMPPS     $0x01, Y15, x, t; \ // 0 where x < expLo
	VANDNPS    y, t, y; \
	VCMPPS     $0x1e, Y14, x, t; \ // +Inf where x > expHi
	VBLENDVPS  t, posInf<>(SB), y, y

// TAIL splits the row length in BX: DX = 4·(n%8), the bytes of the tail
// (0: none), BX = n − n%8, and Y9 = the tail's mask. Uses AX.
#define TAIL \
	MOVQ    BX, DX; \
	ANDQ    $7, DX; \
	SUBQ    DX, BX; \
	SHLQ    $2, DX; \
	LEAQ    tailMask<>+32(SB), AX; \
	SUBQ    DX, AX; \
	VMOVDQU (AX), Y9

// ROWMAX sets every lane of Y13 to the max of the row at DI, after TAIL;
// the tail's masked-off lanes count as −Inf. Uses SI, CX, Y0, Y8; its
// arguments are the names of its labels, unique per use.
#define ROWMAX(loop, tail, done) \
	VMOVUPS      negInf<>(SB), Y8; \
	VMOVUPS      Y8, Y13; \
	MOVQ         DI, SI; \
	MOVQ         BX, CX; \
	TESTQ        CX, CX; \
	JZ           tail; \
loop: \
	VMAXPS       (SI), Y13, Y13; \
	ADDQ         $32, SI; \
	SUBQ         $8, CX; \
	JNZ          loop; \
tail: \
	TESTQ        DX, DX; \
	JZ           done; \
	VMASKMOVPS   (SI), Y9, Y0; \
	VBLENDVPS    Y9, Y0, Y8, Y0; \
	VMAXPS       Y0, Y13, Y13; \
done: \
	VEXTRACTF128 $1, Y13, X0; \
	VMAXPS       X0, X13, X13; \
	VPERMILPS    $0x4e, X13, X0; \
	VMAXPS       X0, X13, X13; \
	VPERMILPS    $0xb1, X13, X0; \
	VMAXPS       X0, X13, X13; \
	VBROADCASTSS X13, Y13

// ADDLANES adds the eight float32 of Y1, widened to float64, to the
// partial sums: lanes 0–3 to Y10, 4–7 to Y11. Uses Y2.
#define ADDLANES \
	VCVTPS2PD    X1, Y2; \
	VADDPD       Y2, Y10, Y10; \
	VEXTRACTF128 $1, Y1, X2; \
	VCVTPS2PD    X2, Y2; \
	VADDPD       Y2, Y11, Y11

// HSUM sets X10 to ((s0 + s4) + (s2 + s6)) + ((s1 + s5) + (s3 + s7)), the
// order of sumLanes, s0…s3 the lanes of Y10 and s4…s7 of Y11. Uses X1.
#define HSUM \
	VADDPD       Y11, Y10, Y10; \
	VEXTRACTF128 $1, Y10, X1; \
	VADDPD       X1, X10, X10; \
	VPERMILPD    $1, X10, X1; \
	VADDSD       X1, X10, X10

// func expsAVX2(y, x *float32, n int, shift float32)
TEXT ·expsAVX2(SB), NOSPLIT, $0-28
	MOVQ         y+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	VBROADCASTSS shift+24(FP), Y12
	VMOVUPS      expLo<>(SB), Y15
	VMOVUPS      expHi<>(SB), Y14

eloop:
	VMOVUPS (SI), Y0
	VSUBPS  Y12, Y0, Y0
	EXP8(Y0, Y1, Y2, Y3)
	VMOVUPS Y1, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	SUBQ    $8, CX
	JNZ     eloop
	VZEROUPPER
	RET

// func sumExpAVX2(x *float32, n int) (m float32, sum float64)
// m = the max, sum = Σ Exp(x − m) in float64, lanes 0–3 in Y10 and 4–7 in
// Y11; the tail under the mask, its masked-off lanes adding 0.
TEXT ·sumExpAVX2(SB), NOSPLIT, $0-32
	MOVQ    x+0(FP), DI
	MOVQ    n+8(FP), BX
	VMOVUPS expLo<>(SB), Y15
	VMOVUPS expHi<>(SB), Y14
	TAIL
	ROWMAX(lsemaxloop, lsemaxtail, lsemaxdone)
	VMOVSS  X13, m+16(FP)
	VXORPD  Y10, Y10, Y10
	VXORPD  Y11, Y11, Y11
	MOVQ    DI, SI
	MOVQ    BX, CX
	TESTQ   CX, CX
	JZ      lsetail2

lseloop2:
	VMOVUPS (SI), Y0
	VSUBPS  Y13, Y0, Y0
	EXP8(Y0, Y1, Y2, Y3)
	ADDLANES
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     lseloop2

lsetail2:
	TESTQ      DX, DX
	JZ         lsesum
	VMASKMOVPS (SI), Y9, Y0
	VSUBPS     Y13, Y0, Y0
	EXP8(Y0, Y1, Y2, Y3)
	VANDPS     Y9, Y1, Y1
	ADDLANES

lsesum:
	HSUM
	VMOVSD X10, sum+24(FP)
	VZEROUPPER
	RET

// func softmaxAVX2(s *float32, n int, scale float32)
// Three passes over the row, as softmaxGo: the max; e = Exp((s − max)·scale)
// stored and summed in float64, lanes 0–3 in Y10 and 4–7 in Y11; s·(1/sum).
// The last n%8 elements go through the same code under a mask (Y9): loaded
// as 0 and stored nowhere outside it, counting −Inf for the max and 0 for
// the sum, so element i always lands in lane i%8.
TEXT ·softmaxAVX2(SB), NOSPLIT, $0-20
	MOVQ         s+0(FP), DI
	MOVQ         n+8(FP), BX
	VBROADCASTSS scale+16(FP), Y12
	VMOVUPS      expLo<>(SB), Y15
	VMOVUPS      expHi<>(SB), Y14
	TAIL
	ROWMAX(smmaxloop, smmaxtail, smmaxdone)

	// e = Exp((s − max)·scale), Y10/Y11 = partial sums.
	VXORPD Y10, Y10, Y10
	VXORPD Y11, Y11, Y11
	MOVQ   DI, SI
	MOVQ   BX, CX
	TESTQ  CX, CX
	JZ     exptail

exploop:
	VMOVUPS (SI), Y0
	VSUBPS  Y13, Y0, Y0
	VMULPS  Y12, Y0, Y0
	EXP8(Y0, Y1, Y2, Y3)
	VMOVUPS Y1, (SI)
	ADDLANES
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     exploop

exptail:
	TESTQ      DX, DX
	JZ         sum
	VMASKMOVPS (SI), Y9, Y0
	VSUBPS     Y13, Y0, Y0
	VMULPS     Y12, Y0, Y0
	EXP8(Y0, Y1, Y2, Y3)
	VANDPS     Y9, Y1, Y1
	VMASKMOVPS Y1, Y9, (SI)
	ADDLANES

sum:
	HSUM
	// Y1 = float32(1/sum) in every lane.
	VMOVSD       one64<>(SB), X1
	VDIVSD       X10, X1, X1
	VCVTSD2SS    X1, X1, X1
	VBROADCASTSS X1, Y1

	MOVQ  DI, SI
	MOVQ  BX, CX
	TESTQ CX, CX
	JZ    scaletail

scaleloop:
	VMULPS  (SI), Y1, Y0
	VMOVUPS Y0, (SI)
	ADDQ    $32, SI
	SUBQ    $8, CX
	JNZ     scaleloop

scaletail:
	TESTQ      DX, DX
	JZ         done
	VMASKMOVPS (SI), Y9, Y0
	VMULPS     Y1, Y0, Y0
	VMASKMOVPS Y0, Y9, (SI)

done:
	VZEROUPPER
	RET
