//go:build amd64 && !purego

#include "textflag.h"

// The loops of exact.go, eight float32 at a time with AVX2 and FMA. Each
// constant is stored eight times (one 256-bit vector), so that it can be
// an operand of a vector instruction straight from memory.
//
// e^(−x²/2) in exactBackwardAVX2 is a copy of expf.Exp
// (graph/internal/expf/expf.go, the one definition; assembly cannot call
// into another package's assembly without a call per vector), for
// arguments ≤ 0 only, and with FMA where expf.Exp rounds the product and
// the sum apart: it may differ from expf.Exp by an ulp or two.
// TestExactAsmMatchesGo bounds the difference with the Go loop.

// invSqrt2 = 0.70710677
DATA invSqrt2<>+0(SB)/4, $0x3f3504f3
DATA invSqrt2<>+4(SB)/4, $0x3f3504f3
DATA invSqrt2<>+8(SB)/4, $0x3f3504f3
DATA invSqrt2<>+12(SB)/4, $0x3f3504f3
DATA invSqrt2<>+16(SB)/4, $0x3f3504f3
DATA invSqrt2<>+20(SB)/4, $0x3f3504f3
DATA invSqrt2<>+24(SB)/4, $0x3f3504f3
DATA invSqrt2<>+28(SB)/4, $0x3f3504f3
GLOBL invSqrt2<>(SB), RODATA|NOPTR, $32

// invSqrt2Pi = 0.3989423
DATA invSqrt2Pi<>+0(SB)/4, $0x3ecc422a
DATA invSqrt2Pi<>+4(SB)/4, $0x3ecc422a
DATA invSqrt2Pi<>+8(SB)/4, $0x3ecc422a
DATA invSqrt2Pi<>+12(SB)/4, $0x3ecc422a
DATA invSqrt2Pi<>+16(SB)/4, $0x3ecc422a
DATA invSqrt2Pi<>+20(SB)/4, $0x3ecc422a
DATA invSqrt2Pi<>+24(SB)/4, $0x3ecc422a
DATA invSqrt2Pi<>+28(SB)/4, $0x3ecc422a
GLOBL invSqrt2Pi<>(SB), RODATA|NOPTR, $32

// erfSat = 3.832507
DATA erfSat<>+0(SB)/4, $0x407547cb
DATA erfSat<>+4(SB)/4, $0x407547cb
DATA erfSat<>+8(SB)/4, $0x407547cb
DATA erfSat<>+12(SB)/4, $0x407547cb
DATA erfSat<>+16(SB)/4, $0x407547cb
DATA erfSat<>+20(SB)/4, $0x407547cb
DATA erfSat<>+24(SB)/4, $0x407547cb
DATA erfSat<>+28(SB)/4, $0x407547cb
GLOBL erfSat<>(SB), RODATA|NOPTR, $32

// ea1 = 1.1283791
DATA ea1<>+0(SB)/4, $0x3f906eba
DATA ea1<>+4(SB)/4, $0x3f906eba
DATA ea1<>+8(SB)/4, $0x3f906eba
DATA ea1<>+12(SB)/4, $0x3f906eba
DATA ea1<>+16(SB)/4, $0x3f906eba
DATA ea1<>+20(SB)/4, $0x3f906eba
DATA ea1<>+24(SB)/4, $0x3f906eba
DATA ea1<>+28(SB)/4, $0x3f906eba
GLOBL ea1<>(SB), RODATA|NOPTR, $32

// ea3 = 0.18520832
DATA ea3<>+0(SB)/4, $0x3e3da740
DATA ea3<>+4(SB)/4, $0x3e3da740
DATA ea3<>+8(SB)/4, $0x3e3da740
DATA ea3<>+12(SB)/4, $0x3e3da740
DATA ea3<>+16(SB)/4, $0x3e3da740
DATA ea3<>+20(SB)/4, $0x3e3da740
DATA ea3<>+24(SB)/4, $0x3e3da740
DATA ea3<>+28(SB)/4, $0x3e3da740
GLOBL ea3<>(SB), RODATA|NOPTR, $32

// ea5 = 0.050955694
DATA ea5<>+0(SB)/4, $0x3d50b6eb
DATA ea5<>+4(SB)/4, $0x3d50b6eb
DATA ea5<>+8(SB)/4, $0x3d50b6eb
DATA ea5<>+12(SB)/4, $0x3d50b6eb
DATA ea5<>+16(SB)/4, $0x3d50b6eb
DATA ea5<>+20(SB)/4, $0x3d50b6eb
DATA ea5<>+24(SB)/4, $0x3d50b6eb
DATA ea5<>+28(SB)/4, $0x3d50b6eb
GLOBL ea5<>(SB), RODATA|NOPTR, $32

// ea7 = 0.003408291
DATA ea7<>+0(SB)/4, $0x3b5f5da2
DATA ea7<>+4(SB)/4, $0x3b5f5da2
DATA ea7<>+8(SB)/4, $0x3b5f5da2
DATA ea7<>+12(SB)/4, $0x3b5f5da2
DATA ea7<>+16(SB)/4, $0x3b5f5da2
DATA ea7<>+20(SB)/4, $0x3b5f5da2
DATA ea7<>+24(SB)/4, $0x3b5f5da2
DATA ea7<>+28(SB)/4, $0x3b5f5da2
GLOBL ea7<>(SB), RODATA|NOPTR, $32

// ea9 = 0.00022905065
DATA ea9<>+0(SB)/4, $0x39702d51
DATA ea9<>+4(SB)/4, $0x39702d51
DATA ea9<>+8(SB)/4, $0x39702d51
DATA ea9<>+12(SB)/4, $0x39702d51
DATA ea9<>+16(SB)/4, $0x39702d51
DATA ea9<>+20(SB)/4, $0x39702d51
DATA ea9<>+24(SB)/4, $0x39702d51
DATA ea9<>+28(SB)/4, $0x39702d51
GLOBL ea9<>(SB), RODATA|NOPTR, $32

// eb2 = 0.49746925
DATA eb2<>+0(SB)/4, $0x3efeb44a
DATA eb2<>+4(SB)/4, $0x3efeb44a
DATA eb2<>+8(SB)/4, $0x3efeb44a
DATA eb2<>+12(SB)/4, $0x3efeb44a
DATA eb2<>+16(SB)/4, $0x3efeb44a
DATA eb2<>+20(SB)/4, $0x3efeb44a
DATA eb2<>+24(SB)/4, $0x3efeb44a
DATA eb2<>+28(SB)/4, $0x3efeb44a
GLOBL eb2<>(SB), RODATA|NOPTR, $32

// eb4 = 0.11098505
DATA eb4<>+0(SB)/4, $0x3de34c21
DATA eb4<>+4(SB)/4, $0x3de34c21
DATA eb4<>+8(SB)/4, $0x3de34c21
DATA eb4<>+12(SB)/4, $0x3de34c21
DATA eb4<>+16(SB)/4, $0x3de34c21
DATA eb4<>+20(SB)/4, $0x3de34c21
DATA eb4<>+24(SB)/4, $0x3de34c21
DATA eb4<>+28(SB)/4, $0x3de34c21
GLOBL eb4<>(SB), RODATA|NOPTR, $32

// eb6 = 0.01407047
DATA eb6<>+0(SB)/4, $0x3c6687d4
DATA eb6<>+4(SB)/4, $0x3c6687d4
DATA eb6<>+8(SB)/4, $0x3c6687d4
DATA eb6<>+12(SB)/4, $0x3c6687d4
DATA eb6<>+16(SB)/4, $0x3c6687d4
DATA eb6<>+20(SB)/4, $0x3c6687d4
DATA eb6<>+24(SB)/4, $0x3c6687d4
DATA eb6<>+28(SB)/4, $0x3c6687d4
GLOBL eb6<>(SB), RODATA|NOPTR, $32

// eb8 = 0.0010179626
DATA eb8<>+0(SB)/4, $0x3a856d28
DATA eb8<>+4(SB)/4, $0x3a856d28
DATA eb8<>+8(SB)/4, $0x3a856d28
DATA eb8<>+12(SB)/4, $0x3a856d28
DATA eb8<>+16(SB)/4, $0x3a856d28
DATA eb8<>+20(SB)/4, $0x3a856d28
DATA eb8<>+24(SB)/4, $0x3a856d28
DATA eb8<>+28(SB)/4, $0x3a856d28
GLOBL eb8<>(SB), RODATA|NOPTR, $32

// eb10 = 2.3547966e-05
DATA eb10<>+0(SB)/4, $0x37c588df
DATA eb10<>+4(SB)/4, $0x37c588df
DATA eb10<>+8(SB)/4, $0x37c588df
DATA eb10<>+12(SB)/4, $0x37c588df
DATA eb10<>+16(SB)/4, $0x37c588df
DATA eb10<>+20(SB)/4, $0x37c588df
DATA eb10<>+24(SB)/4, $0x37c588df
DATA eb10<>+28(SB)/4, $0x37c588df
GLOBL eb10<>(SB), RODATA|NOPTR, $32

// eb12 = -1.1791603e-07
DATA eb12<>+0(SB)/4, $0xb3fd3906
DATA eb12<>+4(SB)/4, $0xb3fd3906
DATA eb12<>+8(SB)/4, $0xb3fd3906
DATA eb12<>+12(SB)/4, $0xb3fd3906
DATA eb12<>+16(SB)/4, $0xb3fd3906
DATA eb12<>+20(SB)/4, $0xb3fd3906
DATA eb12<>+24(SB)/4, $0xb3fd3906
DATA eb12<>+28(SB)/4, $0xb3fd3906
GLOBL eb12<>(SB), RODATA|NOPTR, $32

// negHalf = -0.5
DATA negHalf<>+0(SB)/4, $0xbf000000
DATA negHalf<>+4(SB)/4, $0xbf000000
DATA negHalf<>+8(SB)/4, $0xbf000000
DATA negHalf<>+12(SB)/4, $0xbf000000
DATA negHalf<>+16(SB)/4, $0xbf000000
DATA negHalf<>+20(SB)/4, $0xbf000000
DATA negHalf<>+24(SB)/4, $0xbf000000
DATA negHalf<>+28(SB)/4, $0xbf000000
GLOBL negHalf<>(SB), RODATA|NOPTR, $32

// log2e = 1.442695
DATA log2e<>+0(SB)/4, $0x3fb8aa3b
DATA log2e<>+4(SB)/4, $0x3fb8aa3b
DATA log2e<>+8(SB)/4, $0x3fb8aa3b
DATA log2e<>+12(SB)/4, $0x3fb8aa3b
DATA log2e<>+16(SB)/4, $0x3fb8aa3b
DATA log2e<>+20(SB)/4, $0x3fb8aa3b
DATA log2e<>+24(SB)/4, $0x3fb8aa3b
DATA log2e<>+28(SB)/4, $0x3fb8aa3b
GLOBL log2e<>(SB), RODATA|NOPTR, $32

// ln2Hi = 0.6933594
DATA ln2Hi<>+0(SB)/4, $0x3f318000
DATA ln2Hi<>+4(SB)/4, $0x3f318000
DATA ln2Hi<>+8(SB)/4, $0x3f318000
DATA ln2Hi<>+12(SB)/4, $0x3f318000
DATA ln2Hi<>+16(SB)/4, $0x3f318000
DATA ln2Hi<>+20(SB)/4, $0x3f318000
DATA ln2Hi<>+24(SB)/4, $0x3f318000
DATA ln2Hi<>+28(SB)/4, $0x3f318000
GLOBL ln2Hi<>(SB), RODATA|NOPTR, $32

// ln2Lo = -0.00021219444
DATA ln2Lo<>+0(SB)/4, $0xb95e8083
DATA ln2Lo<>+4(SB)/4, $0xb95e8083
DATA ln2Lo<>+8(SB)/4, $0xb95e8083
DATA ln2Lo<>+12(SB)/4, $0xb95e8083
DATA ln2Lo<>+16(SB)/4, $0xb95e8083
DATA ln2Lo<>+20(SB)/4, $0xb95e8083
DATA ln2Lo<>+24(SB)/4, $0xb95e8083
DATA ln2Lo<>+28(SB)/4, $0xb95e8083
GLOBL ln2Lo<>(SB), RODATA|NOPTR, $32

// expLo = -87.33655, below which expf.Exp is 0
DATA expLo<>+0(SB)/4, $0xc2aeac50
DATA expLo<>+4(SB)/4, $0xc2aeac50
DATA expLo<>+8(SB)/4, $0xc2aeac50
DATA expLo<>+12(SB)/4, $0xc2aeac50
DATA expLo<>+16(SB)/4, $0xc2aeac50
DATA expLo<>+20(SB)/4, $0xc2aeac50
DATA expLo<>+24(SB)/4, $0xc2aeac50
DATA expLo<>+28(SB)/4, $0xc2aeac50
GLOBL expLo<>(SB), RODATA|NOPTR, $32

// ep0 = 0.00019875691
DATA ep0<>+0(SB)/4, $0x39506967
DATA ep0<>+4(SB)/4, $0x39506967
DATA ep0<>+8(SB)/4, $0x39506967
DATA ep0<>+12(SB)/4, $0x39506967
DATA ep0<>+16(SB)/4, $0x39506967
DATA ep0<>+20(SB)/4, $0x39506967
DATA ep0<>+24(SB)/4, $0x39506967
DATA ep0<>+28(SB)/4, $0x39506967
GLOBL ep0<>(SB), RODATA|NOPTR, $32

// ep1 = 0.0013981999
DATA ep1<>+0(SB)/4, $0x3ab743ce
DATA ep1<>+4(SB)/4, $0x3ab743ce
DATA ep1<>+8(SB)/4, $0x3ab743ce
DATA ep1<>+12(SB)/4, $0x3ab743ce
DATA ep1<>+16(SB)/4, $0x3ab743ce
DATA ep1<>+20(SB)/4, $0x3ab743ce
DATA ep1<>+24(SB)/4, $0x3ab743ce
DATA ep1<>+28(SB)/4, $0x3ab743ce
GLOBL ep1<>(SB), RODATA|NOPTR, $32

// ep2 = 0.008333452
DATA ep2<>+0(SB)/4, $0x3c088908
DATA ep2<>+4(SB)/4, $0x3c088908
DATA ep2<>+8(SB)/4, $0x3c088908
DATA ep2<>+12(SB)/4, $0x3c088908
DATA ep2<>+16(SB)/4, $0x3c088908
DATA ep2<>+20(SB)/4, $0x3c088908
DATA ep2<>+24(SB)/4, $0x3c088908
DATA ep2<>+28(SB)/4, $0x3c088908
GLOBL ep2<>(SB), RODATA|NOPTR, $32

// ep3 = 0.041665796
DATA ep3<>+0(SB)/4, $0x3d2aa9c1
DATA ep3<>+4(SB)/4, $0x3d2aa9c1
DATA ep3<>+8(SB)/4, $0x3d2aa9c1
DATA ep3<>+12(SB)/4, $0x3d2aa9c1
DATA ep3<>+16(SB)/4, $0x3d2aa9c1
DATA ep3<>+20(SB)/4, $0x3d2aa9c1
DATA ep3<>+24(SB)/4, $0x3d2aa9c1
DATA ep3<>+28(SB)/4, $0x3d2aa9c1
GLOBL ep3<>(SB), RODATA|NOPTR, $32

// ep4 = 0.16666666
DATA ep4<>+0(SB)/4, $0x3e2aaaaa
DATA ep4<>+4(SB)/4, $0x3e2aaaaa
DATA ep4<>+8(SB)/4, $0x3e2aaaaa
DATA ep4<>+12(SB)/4, $0x3e2aaaaa
DATA ep4<>+16(SB)/4, $0x3e2aaaaa
DATA ep4<>+20(SB)/4, $0x3e2aaaaa
DATA ep4<>+24(SB)/4, $0x3e2aaaaa
DATA ep4<>+28(SB)/4, $0x3e2aaaaa
GLOBL ep4<>(SB), RODATA|NOPTR, $32

// ep5 = 0.5
DATA ep5<>+0(SB)/4, $0x3f000000
DATA ep5<>+4(SB)/4, $0x3f000000
DATA ep5<>+8(SB)/4, $0x3f000000
DATA ep5<>+12(SB)/4, $0x3f000000
DATA ep5<>+16(SB)/4, $0x3f000000
DATA ep5<>+20(SB)/4, $0x3f000000
DATA ep5<>+24(SB)/4, $0x3f000000
DATA ep5<>+28(SB)/4, $0x3f000000
GLOBL ep5<>(SB), RODATA|NOPTR, $32

// half = 0.5
DATA half<>+0(SB)/4, $0x3f000000
DATA half<>+4(SB)/4, $0x3f000000
DATA half<>+8(SB)/4, $0x3f000000
DATA half<>+12(SB)/4, $0x3f000000
DATA half<>+16(SB)/4, $0x3f000000
DATA half<>+20(SB)/4, $0x3f000000
DATA half<>+24(SB)/4, $0x3f000000
DATA half<>+28(SB)/4, $0x3f000000
GLOBL half<>(SB), RODATA|NOPTR, $32

// one = 1
DATA one<>+0(SB)/4, $0x3f800000
DATA one<>+4(SB)/4, $0x3f800000
DATA one<>+8(SB)/4, $0x3f800000
DATA one<>+12(SB)/4, $0x3f800000
DATA one<>+16(SB)/4, $0x3f800000
DATA one<>+20(SB)/4, $0x3f800000
DATA one<>+24(SB)/4, $0x3f800000
DATA one<>+28(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $32

// negOne = -1
DATA negOne<>+0(SB)/4, $0xbf800000
DATA negOne<>+4(SB)/4, $0xbf800000
DATA negOne<>+8(SB)/4, $0xbf800000
DATA negOne<>+12(SB)/4, $0xbf800000
DATA negOne<>+16(SB)/4, $0xbf800000
DATA negOne<>+20(SB)/4, $0xbf800000
DATA negOne<>+24(SB)/4, $0xbf800000
DATA negOne<>+28(SB)/4, $0xbf800000
GLOBL negOne<>(SB), RODATA|NOPTR, $32

// absMask clears the sign bit
DATA absMask<>+0(SB)/4, $0x7fffffff
DATA absMask<>+4(SB)/4, $0x7fffffff
DATA absMask<>+8(SB)/4, $0x7fffffff
DATA absMask<>+12(SB)/4, $0x7fffffff
DATA absMask<>+16(SB)/4, $0x7fffffff
DATA absMask<>+20(SB)/4, $0x7fffffff
DATA absMask<>+24(SB)/4, $0x7fffffff
DATA absMask<>+28(SB)/4, $0x7fffffff
GLOBL absMask<>(SB), RODATA|NOPTR, $32

// signMask keeps only the sign bit
DATA signMask<>+0(SB)/4, $0x80000000
DATA signMask<>+4(SB)/4, $0x80000000
DATA signMask<>+8(SB)/4, $0x80000000
DATA signMask<>+12(SB)/4, $0x80000000
DATA signMask<>+16(SB)/4, $0x80000000
DATA signMask<>+20(SB)/4, $0x80000000
DATA signMask<>+24(SB)/4, $0x80000000
DATA signMask<>+28(SB)/4, $0x80000000
GLOBL signMask<>(SB), RODATA|NOPTR, $32

// bias127 the float32 exponent bias, as an int32
DATA bias127<>+0(SB)/4, $0x0000007f
DATA bias127<>+4(SB)/4, $0x0000007f
DATA bias127<>+8(SB)/4, $0x0000007f
DATA bias127<>+12(SB)/4, $0x0000007f
DATA bias127<>+16(SB)/4, $0x0000007f
DATA bias127<>+20(SB)/4, $0x0000007f
DATA bias127<>+24(SB)/4, $0x0000007f
DATA bias127<>+28(SB)/4, $0x0000007f
GLOBL bias127<>(SB), RODATA|NOPTR, $32

// func exactForwardAVX2(y, x *float32, n int)
// SI = &x[i], DI = &y[i], CX = elements left. Y0 = x.
TEXT ·exactForwardAVX2(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

floop:
	VMOVUPS (SI), Y0
	// Y1 = z = x/√2, Y3 = z².
	VMULPS      invSqrt2<>(SB), Y0, Y1
	VMULPS      Y1, Y1, Y3
	// Y6 = |z| ≥ erfSat (all ones or zero), Y8 = ±1 with the sign of z.
	VANDPS      absMask<>(SB), Y1, Y6
	VCMPPS      $0x1d, erfSat<>(SB), Y6, Y6
	VANDPS      signMask<>(SB), Y1, Y8
	VORPS       one<>(SB), Y8, Y8
	// Y4 = erf(z) = z·p(z²)/q(z²), Horner: p ← z²·p + a.
	VMOVUPS     ea9<>(SB), Y4
	VFMADD213PS ea7<>(SB), Y3, Y4
	VFMADD213PS ea5<>(SB), Y3, Y4
	VFMADD213PS ea3<>(SB), Y3, Y4
	VFMADD213PS ea1<>(SB), Y3, Y4
	VMULPS      Y1, Y4, Y4
	VMOVUPS     eb12<>(SB), Y5
	VFMADD213PS eb10<>(SB), Y3, Y5
	VFMADD213PS eb8<>(SB), Y3, Y5
	VFMADD213PS eb6<>(SB), Y3, Y5
	VFMADD213PS eb4<>(SB), Y3, Y5
	VFMADD213PS eb2<>(SB), Y3, Y5
	VFMADD213PS one<>(SB), Y3, Y5
	VDIVPS      Y5, Y4, Y4
	VMINPS      one<>(SB), Y4, Y4 // near erfSat the quotient overshoots ±1
	VMAXPS      negOne<>(SB), Y4, Y4
	VBLENDVPS   Y6, Y8, Y4, Y4 // erf = ±1 where |z| ≥ erfSat
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

// func exactBackwardAVX2(dx, x, dy *float32, n int)
// SI = &x[i], DX = &dy[i], DI = &dx[i], CX = elements left. Y0 = x.
TEXT ·exactBackwardAVX2(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVUPS one<>(SB), Y15

bloop:
	VMOVUPS (SI), Y0
	// Y1 = z = x/√2, Y3 = z².
	VMULPS      invSqrt2<>(SB), Y0, Y1
	VMULPS      Y1, Y1, Y3
	// Y6 = |z| ≥ erfSat (all ones or zero), Y8 = ±1 with the sign of z.
	VANDPS      absMask<>(SB), Y1, Y6
	VCMPPS      $0x1d, erfSat<>(SB), Y6, Y6
	VANDPS      signMask<>(SB), Y1, Y8
	VORPS       Y15, Y8, Y8
	// Y4 = erf(z) = z·p(z²)/q(z²), Horner: p ← z²·p + a.
	VMOVUPS     ea9<>(SB), Y4
	VFMADD213PS ea7<>(SB), Y3, Y4
	VFMADD213PS ea5<>(SB), Y3, Y4
	VFMADD213PS ea3<>(SB), Y3, Y4
	VFMADD213PS ea1<>(SB), Y3, Y4
	VMULPS      Y1, Y4, Y4
	VMOVUPS     eb12<>(SB), Y5
	VFMADD213PS eb10<>(SB), Y3, Y5
	VFMADD213PS eb8<>(SB), Y3, Y5
	VFMADD213PS eb6<>(SB), Y3, Y5
	VFMADD213PS eb4<>(SB), Y3, Y5
	VFMADD213PS eb2<>(SB), Y3, Y5
	VFMADD213PS Y15, Y3, Y5
	VDIVPS      Y5, Y4, Y4
	VMINPS      one<>(SB), Y4, Y4 // near erfSat the quotient overshoots ±1
	VMAXPS      negOne<>(SB), Y4, Y4
	VBLENDVPS   Y6, Y8, Y4, Y4 // erf = ±1 where |z| ≥ erfSat
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

// func exactForwardAVX512(y, x *float32, n int)
// SI = &x[i], DI = &y[i], CX = elements left (a multiple of 16). Z0 = x.
TEXT ·exactForwardAVX512(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX
	VBROADCASTSS one<>(SB), Z15

f16loop:
	VMOVUPS (SI), Z0
	// Z1 = z = x/√2, Z3 = z².
	VMULPS.BCST invSqrt2<>(SB), Z0, Z1
	VMULPS      Z1, Z1, Z3
	// K1 = |z| ≥ erfSat, Z8 = ±1 with the sign of z.
	VPANDD.BCST absMask<>(SB), Z1, Z6
	VCMPPS.BCST $0x1d, erfSat<>(SB), Z6, K1
	VPANDD.BCST signMask<>(SB), Z1, Z8
	VPORD       Z15, Z8, Z8
	// Z4 = erf(z) = z·p(z²)/q(z²), Horner: p ← z²·p + a.
	VBROADCASTSS     ea9<>(SB), Z4
	VFMADD213PS.BCST ea7<>(SB), Z3, Z4
	VFMADD213PS.BCST ea5<>(SB), Z3, Z4
	VFMADD213PS.BCST ea3<>(SB), Z3, Z4
	VFMADD213PS.BCST ea1<>(SB), Z3, Z4
	VMULPS           Z1, Z4, Z4
	VBROADCASTSS     eb12<>(SB), Z5
	VFMADD213PS.BCST eb10<>(SB), Z3, Z5
	VFMADD213PS.BCST eb8<>(SB), Z3, Z5
	VFMADD213PS.BCST eb6<>(SB), Z3, Z5
	VFMADD213PS.BCST eb4<>(SB), Z3, Z5
	VFMADD213PS.BCST eb2<>(SB), Z3, Z5
	VFMADD213PS      Z15, Z3, Z5
	VDIVPS           Z5, Z4, Z4
	VMINPS           Z15, Z4, Z4 // near erfSat the quotient overshoots ±1
	VMAXPS.BCST      negOne<>(SB), Z4, Z4
	VBLENDMPS        Z8, Z4, K1, Z4 // erf = ±1 where |z| ≥ erfSat
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
	// Z1 = z = x/√2, Z3 = z².
	VMULPS.BCST invSqrt2<>(SB), Z0, Z1
	VMULPS      Z1, Z1, Z3
	// K1 = |z| ≥ erfSat, Z8 = ±1 with the sign of z.
	VPANDD.BCST absMask<>(SB), Z1, Z6
	VCMPPS.BCST $0x1d, erfSat<>(SB), Z6, K1
	VPANDD.BCST signMask<>(SB), Z1, Z8
	VPORD       Z15, Z8, Z8
	// Z4 = erf(z) = z·p(z²)/q(z²), Horner: p ← z²·p + a.
	VBROADCASTSS     ea9<>(SB), Z4
	VFMADD213PS.BCST ea7<>(SB), Z3, Z4
	VFMADD213PS.BCST ea5<>(SB), Z3, Z4
	VFMADD213PS.BCST ea3<>(SB), Z3, Z4
	VFMADD213PS.BCST ea1<>(SB), Z3, Z4
	VMULPS           Z1, Z4, Z4
	VBROADCASTSS     eb12<>(SB), Z5
	VFMADD213PS.BCST eb10<>(SB), Z3, Z5
	VFMADD213PS.BCST eb8<>(SB), Z3, Z5
	VFMADD213PS.BCST eb6<>(SB), Z3, Z5
	VFMADD213PS.BCST eb4<>(SB), Z3, Z5
	VFMADD213PS.BCST eb2<>(SB), Z3, Z5
	VFMADD213PS      Z15, Z3, Z5
	VDIVPS           Z5, Z4, Z4
	VMINPS           Z15, Z4, Z4 // near erfSat the quotient overshoots ±1
	VMAXPS.BCST      negOne<>(SB), Z4, Z4
	VBLENDMPS        Z8, Z4, K1, Z4 // erf = ±1 where |z| ≥ erfSat
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
