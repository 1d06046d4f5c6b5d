//go:build amd64 && !purego

#include "textflag.h"
#include "vec8.h"

// The loops of gelu.go, eight float32 at a time with AVX2 and FMA; the
// constants are 256-bit vectors (VEC8, vec8.h).

// clampHi = 7.998811721801758
VEC8(clampHi, $0x40fff644)

// clampLo = -7.998811721801758
VEC8(clampLo, $0xc0fff644)

// a1 = 0.00489352455891786
VEC8(a1, $0x3ba059dc)

// a3 = 0.000637261928875436
VEC8(a3, $0x3a270ded)

// a5 = 1.48572235717979e-05
VEC8(a5, $0x3779434a)

// a7 = 5.12229709037114e-08
VEC8(a7, $0x335c0041)

// a9 = -8.60467152213735e-11
VEC8(a9, $0xaebd37ff)

// a11 = 2.00018790482477e-13
VEC8(a11, $0x2a61337e)

// a13 = -2.76076847742355e-16
VEC8(a13, $0xa59f25c0)

// b0 = 0.00489352518554385
VEC8(b0, $0x3ba059dd)

// b2 = 0.002268434632439
VEC8(b2, $0x3b14aa05)

// b4 = 0.000118534705686654
VEC8(b4, $0x38f895d6)

// b6 = 1.19825839466702e-06
VEC8(b6, $0x35a0d3d8)

// geluA = 0.044715
VEC8(geluA, $0x3d372713)

// geluC = 0.7978845608028654
VEC8(geluC, $0x3f4c422a)

// threeA = 0.134145
VEC8(threeA, $0x3e095d4f)

// half = 0.5
VEC8(half, $0x3f000000)

// one = 1.0
VEC8(one, $0x3f800000)

// sat = 9.02
VEC8(sat, $0x411051ec)
// absMask clears the sign bit
VEC8(absMask, $0x7fffffff)
// signMask keeps only the sign bit
VEC8(signMask, $0x80000000)

// TANH_AVX2 sets Y4 = t = tanh(u) for u = c(x + a·x³), Y0 = x: Y7 = x²,
// Y2 = u clamped to [clampLo, clampHi], Y3 = u², Y6 = |u| ≥ sat (all ones
// or zero), Y8 = ±1 with the sign of u, t = u·p(u²)/q(u²) by Horner (p ←
// u²·p + a, Y5 = q), and t = ±1 where |u| ≥ sat. Y1 is scratch.
#define TANH_AVX2 \
	VMULPS      Y0, Y0, Y7; \
	VMULPS      Y0, Y7, Y1; \
	VFMADD132PS geluA<>(SB), Y0, Y1; \
	VMULPS      geluC<>(SB), Y1, Y2; \
	VANDPS      absMask<>(SB), Y2, Y6; \
	VCMPPS      $0x1d, sat<>(SB), Y6, Y6; \
	VANDPS      signMask<>(SB), Y2, Y8; \
	VORPS       one<>(SB), Y8, Y8; \
	VMINPS      clampHi<>(SB), Y2, Y2; \
	VMAXPS      clampLo<>(SB), Y2, Y2; \
	VMULPS      Y2, Y2, Y3; \
	VMOVUPS     a13<>(SB), Y4; \
	VFMADD213PS a11<>(SB), Y3, Y4; \
	VFMADD213PS a9<>(SB), Y3, Y4; \
	VFMADD213PS a7<>(SB), Y3, Y4; \
	VFMADD213PS a5<>(SB), Y3, Y4; \
	VFMADD213PS a3<>(SB), Y3, Y4; \
	VFMADD213PS a1<>(SB), Y3, Y4; \
	VMULPS      Y2, Y4, Y4; \
	VMOVUPS     b6<>(SB), Y5; \
	VFMADD213PS b4<>(SB), Y3, Y5; \
	VFMADD213PS b2<>(SB), Y3, Y5; \
	VFMADD213PS b0<>(SB), Y3, Y5; \
	VDIVPS      Y5, Y4, Y4; \
	VBLENDVPS   Y6, Y8, Y4, Y4

// func forwardVec(y, x *float32, n int)
// SI = &x[i], DI = &y[i], CX = elements left. Y0 = x, Y7 = x².
TEXT ·forwardVec(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

floop:
	VMOVUPS (SI), Y0
	// Y4 = t = tanh(u), u = c(x + a·x³).
	TANH_AVX2
	// y = h·t + h, h = ½x.
	VMULPS      half<>(SB), Y0, Y1
	VFMADD213PS Y1, Y1, Y4
	VMOVUPS     Y4, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         floop
	VZEROUPPER
	RET

// func backwardVec(dx, x, dy *float32, n int)
// SI = &x[i], DX = &dy[i], DI = &dx[i], CX = elements left. Y0 = x, Y7 = x².
TEXT ·backwardVec(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVUPS one<>(SB), Y15

bloop:
	VMOVUPS (SI), Y0
	// Y4 = t = tanh(u), u = c(x + a·x³).
	TANH_AVX2
	// Y5 = x(1 − t²)·c(1 + 3a·x²)
	VMULPS      Y4, Y4, Y5
	VSUBPS      Y5, Y15, Y5
	VFMADD132PS threeA<>(SB), Y15, Y7
	VMULPS      Y7, Y5, Y5
	VMULPS      geluC<>(SB), Y5, Y5
	VMULPS      Y0, Y5, Y5
	// dx = dy·½(1 + t + Y5)
	VADDPS      Y15, Y4, Y4
	VADDPS      Y5, Y4, Y4
	VMULPS      half<>(SB), Y4, Y4
	VMULPS      (DX), Y4, Y4
	VMOVUPS     Y4, (DI)
	ADDQ        $32, SI
	ADDQ        $32, DX
	ADDQ        $32, DI
	SUBQ        $8, CX
	JNZ         bloop
	VZEROUPPER
	RET
