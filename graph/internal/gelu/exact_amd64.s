//go:build amd64 && !purego

#include "textflag.h"
#include "vec8.h"

// The loops of exact.go, eight float32 at a time with AVX2 and FMA; the
// constants are 256-bit vectors (VEC8, vec8.h).
//
// e^(−x²/2) in exactBackwardVec is a copy of expf.Exp
// (graph/internal/expf/expf.go, the one definition; assembly cannot call
// into another package's assembly without a call per vector), for
// arguments ≤ 0 only, and with FMA where expf.Exp rounds the product and
// the sum apart: it may differ from expf.Exp by an ulp or two.
// TestExactAsmMatchesGo bounds the difference with the Go loop.


// invSqrt2 = 0.70710677
VEC8(invSqrt2, $0x3f3504f3)

// invSqrt2Pi = 0.3989423
VEC8(invSqrt2Pi, $0x3ecc422a)

// erfSat = 3.832507
VEC8(erfSat, $0x407547cb)

// ea1 = 1.1283791
VEC8(ea1, $0x3f906eba)

// ea3 = 0.18520832
VEC8(ea3, $0x3e3da740)

// ea5 = 0.050955694
VEC8(ea5, $0x3d50b6eb)

// ea7 = 0.003408291
VEC8(ea7, $0x3b5f5da2)

// ea9 = 0.00022905065
VEC8(ea9, $0x39702d51)

// eb2 = 0.49746925
VEC8(eb2, $0x3efeb44a)

// eb4 = 0.11098505
VEC8(eb4, $0x3de34c21)

// eb6 = 0.01407047
VEC8(eb6, $0x3c6687d4)

// eb8 = 0.0010179626
VEC8(eb8, $0x3a856d28)

// eb10 = 2.3547966e-05
VEC8(eb10, $0x37c588df)

// eb12 = -1.1791603e-07
VEC8(eb12, $0xb3fd3906)

// negHalf = -0.5
VEC8(negHalf, $0xbf000000)

// log2e = 1.442695
VEC8(log2e, $0x3fb8aa3b)

// ln2Hi = 0.6933594
VEC8(ln2Hi, $0x3f318000)

// ln2Lo = -0.00021219444
VEC8(ln2Lo, $0xb95e8083)

// expLo = -87.33655, below which expf.Exp is 0
VEC8(expLo, $0xc2aeac50)

// ep0 = 0.00019875691
VEC8(ep0, $0x39506967)

// ep1 = 0.0013981999
VEC8(ep1, $0x3ab743ce)

// ep2 = 0.008333452
VEC8(ep2, $0x3c088908)

// ep3 = 0.041665796
VEC8(ep3, $0x3d2aa9c1)

// ep4 = 0.16666666
VEC8(ep4, $0x3e2aaaaa)

// ep5 = 0.5
VEC8(ep5, $0x3f000000)

// half = 0.5
VEC8(half, $0x3f000000)

// one = 1
VEC8(one, $0x3f800000)

// negOne = -1
VEC8(negOne, $0xbf800000)

// absMask clears the sign bit
VEC8(absMask, $0x7fffffff)

// signMask keeps only the sign bit
VEC8(signMask, $0x80000000)

// bias127 the float32 exponent bias, as an int32
VEC8(bias127, $0x0000007f)

// ERF_AVX2(ONE) sets Y4 = erf(z) for z = x/√2, Y0 = x, with ONE holding 1
// (Y15, or one<>(SB) straight from memory): Y1 = z, Y3 = z², Y6 = |z| ≥
// erfSat (all ones or zero), Y8 = ±1 with the sign of z, Y4 = z·p(z²)/q(z²)
// by Horner (p ← z²·p + a, Y5 = q), clamped to ±1 (near erfSat the
// quotient overshoots) and ±1 where |z| ≥ erfSat.
#define ERF_AVX2(ONE) \
	VMULPS      invSqrt2<>(SB), Y0, Y1; \
	VMULPS      Y1, Y1, Y3; \
	VANDPS      absMask<>(SB), Y1, Y6; \
	VCMPPS      $0x1d, erfSat<>(SB), Y6, Y6; \
	VANDPS      signMask<>(SB), Y1, Y8; \
	VORPS       ONE, Y8, Y8; \
	VMOVUPS     ea9<>(SB), Y4; \
	VFMADD213PS ea7<>(SB), Y3, Y4; \
	VFMADD213PS ea5<>(SB), Y3, Y4; \
	VFMADD213PS ea3<>(SB), Y3, Y4; \
	VFMADD213PS ea1<>(SB), Y3, Y4; \
	VMULPS      Y1, Y4, Y4; \
	VMOVUPS     eb12<>(SB), Y5; \
	VFMADD213PS eb10<>(SB), Y3, Y5; \
	VFMADD213PS eb8<>(SB), Y3, Y5; \
	VFMADD213PS eb6<>(SB), Y3, Y5; \
	VFMADD213PS eb4<>(SB), Y3, Y5; \
	VFMADD213PS eb2<>(SB), Y3, Y5; \
	VFMADD213PS ONE, Y3, Y5; \
	VDIVPS      Y5, Y4, Y4; \
	VMINPS      one<>(SB), Y4, Y4; \
	VMAXPS      negOne<>(SB), Y4, Y4; \
	VBLENDVPS   Y6, Y8, Y4, Y4

// func exactForwardVec(y, x *float32, n int)
// SI = &x[i], DI = &y[i], CX = elements left. Y0 = x.
TEXT ·exactForwardVec(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

floop:
	VMOVUPS (SI), Y0
	// Y4 = erf(x/√2).
	ERF_AVX2(one<>(SB))
	// y = h·erf + h, h = ½x.
	VMULPS      half<>(SB), Y0, Y1
	VFMADD213PS Y1, Y1, Y4
	VMOVUPS     Y4, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         floop
	VZEROUPPER
	RET

// func exactBackwardVec(dx, x, dy *float32, n int)
// SI = &x[i], DX = &dy[i], DI = &dx[i], CX = elements left. Y0 = x.
TEXT ·exactBackwardVec(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVUPS one<>(SB), Y15

bloop:
	VMOVUPS (SI), Y0
	// Y4 = erf(x/√2).
	ERF_AVX2(Y15)
	// Y4 = Φ(x) = ½erf + ½.
	VMOVUPS     half<>(SB), Y9
	VFMADD213PS Y9, Y9, Y4
	// Y9 = w = max(−½x², expLo), Y12 = −½x² < expLo, where e^w is 0.
	VMULPS      Y0, Y0, Y9
	VMULPS      negHalf<>(SB), Y9, Y9
	VCMPPS      $0x01, expLo<>(SB), Y9, Y12
	VMAXPS      expLo<>(SB), Y9, Y9
	// Y10 = n = floor(w·log2e + ½).
	VMOVUPS     log2e<>(SB), Y10
	VFMADD213PS half<>(SB), Y9, Y10
	VROUNDPS    $1, Y10, Y10
	// Y9 = r = w − n·ln2Hi − n·ln2Lo.
	VFNMADD231PS ln2Hi<>(SB), Y10, Y9
	VFNMADD231PS ln2Lo<>(SB), Y10, Y9
	// Y11 = e^r = p(r)·r² + r + 1.
	VMOVUPS     ep0<>(SB), Y11
	VFMADD213PS ep1<>(SB), Y9, Y11
	VFMADD213PS ep2<>(SB), Y9, Y11
	VFMADD213PS ep3<>(SB), Y9, Y11
	VFMADD213PS ep4<>(SB), Y9, Y11
	VFMADD213PS ep5<>(SB), Y9, Y11
	VMULPS      Y9, Y11, Y11
	VFMADD213PS Y9, Y9, Y11
	VADDPS      Y15, Y11, Y11
	// Y11 = e^w = e^r·2ⁿ, 2ⁿ built in the exponent bits (n ≥ −126), and 0
	// where −½x² < expLo.
	VCVTTPS2DQ  Y10, Y10
	VPADDD      bias127<>(SB), Y10, Y10
	VPSLLD      $23, Y10, Y10
	VMULPS      Y10, Y11, Y11
	VANDNPS     Y11, Y12, Y11
	// dx = dy·(Φ + x·e^w/√(2π)).
	VMULPS      Y0, Y11, Y11
	VFMADD231PS invSqrt2Pi<>(SB), Y11, Y4
	VMULPS      (DX), Y4, Y4
	VMOVUPS     Y4, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DX
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         bloop
	VZEROUPPER
	RET

// The same two loops sixteen at a time with AVX-512F: every lane does the
// AVX2 loop's operations in the same order (constants broadcast from the
// vectors above, masks in K registers instead of all-ones lanes, VRNDSCALEPS
// $1 for VROUNDPS $1), so the results are the AVX2 loop's to the bit
// (TestExactAVX512MatchesAVX2).

// ERF_AVX512 is ERF_AVX2 sixteen lanes at a time: Z4 = erf(z) for z =
// x/√2, Z0 = x, Z15 = 1; Z1 = z, Z3 = z², K1 = |z| ≥ erfSat, Z8 = ±1 with
// the sign of z, Z5 = q(z²).
#define ERF_AVX512 \
	VMULPS.BCST invSqrt2<>(SB), Z0, Z1; \
	VMULPS      Z1, Z1, Z3; \
	VPANDD.BCST absMask<>(SB), Z1, Z6; \
	VCMPPS.BCST $0x1d, erfSat<>(SB), Z6, K1; \
	VPANDD.BCST signMask<>(SB), Z1, Z8; \
	VPORD       Z15, Z8, Z8; \
	VBROADCASTSS     ea9<>(SB), Z4; \
	VFMADD213PS.BCST ea7<>(SB), Z3, Z4; \
	VFMADD213PS.BCST ea5<>(SB), Z3, Z4; \
	VFMADD213PS.BCST ea3<>(SB), Z3, Z4; \
	VFMADD213PS.BCST ea1<>(SB), Z3, Z4; \
	VMULPS           Z1, Z4, Z4; \
	VBROADCASTSS     eb12<>(SB), Z5; \
	VFMADD213PS.BCST eb10<>(SB), Z3, Z5; \
	VFMADD213PS.BCST eb8<>(SB), Z3, Z5; \
	VFMADD213PS.BCST eb6<>(SB), Z3, Z5; \
	VFMADD213PS.BCST eb4<>(SB), Z3, Z5; \
	VFMADD213PS.BCST eb2<>(SB), Z3, Z5; \
	VFMADD213PS      Z15, Z3, Z5; \
	VDIVPS           Z5, Z4, Z4; \
	VMINPS           Z15, Z4, Z4; \
	VMAXPS.BCST      negOne<>(SB), Z4, Z4; \
	VBLENDMPS        Z8, Z4, K1, Z4

// func exactForwardAVX512(y, x *float32, n int)
// SI = &x[i], DI = &y[i], CX = elements left (a multiple of 16). Z0 = x.
TEXT ·exactForwardAVX512(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS one<>(SB), Z15

f16loop:
	VMOVUPS (SI), Z0
	// Z4 = erf(x/√2).
	ERF_AVX512
	// y = h·erf + h, h = ½x.
	VMULPS.BCST half<>(SB), Z0, Z1
	VFMADD213PS Z1, Z1, Z4
	VMOVUPS     Z4, (DI)
	ADDQ        $64, SI
	ADDQ        $64, DI
	SUBQ        $16, CX
	JNZ         f16loop
	VZEROUPPER
	RET

// func exactBackwardAVX512(dx, x, dy *float32, n int)
// SI = &x[i], DX = &dy[i], DI = &dx[i], CX = elements left (a multiple of
// 16). Z0 = x.
TEXT ·exactBackwardAVX512(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	VBROADCASTSS one<>(SB), Z15
	VBROADCASTSS half<>(SB), Z14
	VBROADCASTSS expLo<>(SB), Z13

b16loop:
	VMOVUPS (SI), Z0
	// Z4 = erf(x/√2).
	ERF_AVX512
	// Z4 = Φ(x) = ½erf + ½.
	VFMADD213PS Z14, Z14, Z4
	// Z9 = w = max(−½x², expLo), K2 = not −½x² < expLo (e^w is 0 outside K2).
	VMULPS      Z0, Z0, Z9
	VMULPS.BCST negHalf<>(SB), Z9, Z9
	VCMPPS      $0x05, Z13, Z9, K2
	VMAXPS      Z13, Z9, Z9
	// Z10 = n = floor(w·log2e + ½).
	VBROADCASTSS log2e<>(SB), Z10
	VFMADD213PS  Z14, Z9, Z10
	VRNDSCALEPS  $1, Z10, Z10
	// Z9 = r = w − n·ln2Hi − n·ln2Lo.
	VFNMADD231PS.BCST ln2Hi<>(SB), Z10, Z9
	VFNMADD231PS.BCST ln2Lo<>(SB), Z10, Z9
	// Z11 = e^r = p(r)·r² + r + 1.
	VBROADCASTSS     ep0<>(SB), Z11
	VFMADD213PS.BCST ep1<>(SB), Z9, Z11
	VFMADD213PS.BCST ep2<>(SB), Z9, Z11
	VFMADD213PS.BCST ep3<>(SB), Z9, Z11
	VFMADD213PS.BCST ep4<>(SB), Z9, Z11
	VFMADD213PS.BCST ep5<>(SB), Z9, Z11
	VMULPS           Z9, Z11, Z11
	VFMADD213PS      Z9, Z9, Z11
	VADDPS           Z15, Z11, Z11
	// Z11 = e^w = e^r·2ⁿ, 2ⁿ built in the exponent bits (n ≥ −126), and 0
	// outside K2.
	VCVTTPS2DQ       Z10, Z10
	VPADDD.BCST      bias127<>(SB), Z10, Z10
	VPSLLD           $23, Z10, Z10
	VMULPS.Z         Z10, Z11, K2, Z11
	// dx = dy·(Φ + x·e^w/√(2π)).
	VMULPS           Z0, Z11, Z11
	VFMADD231PS.BCST invSqrt2Pi<>(SB), Z11, Z4
	VMULPS           (DX), Z4, Z4
	VMOVUPS          Z4, (DI)
	ADDQ             $64, SI
	ADDQ             $64, DX
	ADDQ             $64, DI
	SUBQ             $16, CX
	JNZ              b16loop
	VZEROUPPER
	RET
