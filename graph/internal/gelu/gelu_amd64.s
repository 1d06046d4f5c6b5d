//go:build amd64 && !purego

#include "textflag.h"

// The loops of gelu.go, eight float32 at a time with AVX2 and FMA. Each
// constant is stored eight times (one 256-bit vector), so that it can be
// an operand of a vector instruction straight from memory.


// clampHi = 7.998811721801758
DATA clampHi<>+0(SB)/4, $0x40fff644
DATA clampHi<>+4(SB)/4, $0x40fff644
DATA clampHi<>+8(SB)/4, $0x40fff644
DATA clampHi<>+12(SB)/4, $0x40fff644
DATA clampHi<>+16(SB)/4, $0x40fff644
DATA clampHi<>+20(SB)/4, $0x40fff644
DATA clampHi<>+24(SB)/4, $0x40fff644
DATA clampHi<>+28(SB)/4, $0x40fff644
GLOBL clampHi<>(SB), RODATA|NOPTR, $32

// clampLo = -7.998811721801758
DATA clampLo<>+0(SB)/4, $0xc0fff644
DATA clampLo<>+4(SB)/4, $0xc0fff644
DATA clampLo<>+8(SB)/4, $0xc0fff644
DATA clampLo<>+12(SB)/4, $0xc0fff644
DATA clampLo<>+16(SB)/4, $0xc0fff644
DATA clampLo<>+20(SB)/4, $0xc0fff644
DATA clampLo<>+24(SB)/4, $0xc0fff644
DATA clampLo<>+28(SB)/4, $0xc0fff644
GLOBL clampLo<>(SB), RODATA|NOPTR, $32

// a1 = 0.00489352455891786
DATA a1<>+0(SB)/4, $0x3ba059dc
DATA a1<>+4(SB)/4, $0x3ba059dc
DATA a1<>+8(SB)/4, $0x3ba059dc
DATA a1<>+12(SB)/4, $0x3ba059dc
DATA a1<>+16(SB)/4, $0x3ba059dc
DATA a1<>+20(SB)/4, $0x3ba059dc
DATA a1<>+24(SB)/4, $0x3ba059dc
DATA a1<>+28(SB)/4, $0x3ba059dc
GLOBL a1<>(SB), RODATA|NOPTR, $32

// a3 = 0.000637261928875436
DATA a3<>+0(SB)/4, $0x3a270ded
DATA a3<>+4(SB)/4, $0x3a270ded
DATA a3<>+8(SB)/4, $0x3a270ded
DATA a3<>+12(SB)/4, $0x3a270ded
DATA a3<>+16(SB)/4, $0x3a270ded
DATA a3<>+20(SB)/4, $0x3a270ded
DATA a3<>+24(SB)/4, $0x3a270ded
DATA a3<>+28(SB)/4, $0x3a270ded
GLOBL a3<>(SB), RODATA|NOPTR, $32

// a5 = 1.48572235717979e-05
DATA a5<>+0(SB)/4, $0x3779434a
DATA a5<>+4(SB)/4, $0x3779434a
DATA a5<>+8(SB)/4, $0x3779434a
DATA a5<>+12(SB)/4, $0x3779434a
DATA a5<>+16(SB)/4, $0x3779434a
DATA a5<>+20(SB)/4, $0x3779434a
DATA a5<>+24(SB)/4, $0x3779434a
DATA a5<>+28(SB)/4, $0x3779434a
GLOBL a5<>(SB), RODATA|NOPTR, $32

// a7 = 5.12229709037114e-08
DATA a7<>+0(SB)/4, $0x335c0041
DATA a7<>+4(SB)/4, $0x335c0041
DATA a7<>+8(SB)/4, $0x335c0041
DATA a7<>+12(SB)/4, $0x335c0041
DATA a7<>+16(SB)/4, $0x335c0041
DATA a7<>+20(SB)/4, $0x335c0041
DATA a7<>+24(SB)/4, $0x335c0041
DATA a7<>+28(SB)/4, $0x335c0041
GLOBL a7<>(SB), RODATA|NOPTR, $32

// a9 = -8.60467152213735e-11
DATA a9<>+0(SB)/4, $0xaebd37ff
DATA a9<>+4(SB)/4, $0xaebd37ff
DATA a9<>+8(SB)/4, $0xaebd37ff
DATA a9<>+12(SB)/4, $0xaebd37ff
DATA a9<>+16(SB)/4, $0xaebd37ff
DATA a9<>+20(SB)/4, $0xaebd37ff
DATA a9<>+24(SB)/4, $0xaebd37ff
DATA a9<>+28(SB)/4, $0xaebd37ff
GLOBL a9<>(SB), RODATA|NOPTR, $32

// a11 = 2.00018790482477e-13
DATA a11<>+0(SB)/4, $0x2a61337e
DATA a11<>+4(SB)/4, $0x2a61337e
DATA a11<>+8(SB)/4, $0x2a61337e
DATA a11<>+12(SB)/4, $0x2a61337e
DATA a11<>+16(SB)/4, $0x2a61337e
DATA a11<>+20(SB)/4, $0x2a61337e
DATA a11<>+24(SB)/4, $0x2a61337e
DATA a11<>+28(SB)/4, $0x2a61337e
GLOBL a11<>(SB), RODATA|NOPTR, $32

// a13 = -2.76076847742355e-16
DATA a13<>+0(SB)/4, $0xa59f25c0
DATA a13<>+4(SB)/4, $0xa59f25c0
DATA a13<>+8(SB)/4, $0xa59f25c0
DATA a13<>+12(SB)/4, $0xa59f25c0
DATA a13<>+16(SB)/4, $0xa59f25c0
DATA a13<>+20(SB)/4, $0xa59f25c0
DATA a13<>+24(SB)/4, $0xa59f25c0
DATA a13<>+28(SB)/4, $0xa59f25c0
GLOBL a13<>(SB), RODATA|NOPTR, $32

// b0 = 0.00489352518554385
DATA b0<>+0(SB)/4, $0x3ba059dd
DATA b0<>+4(SB)/4, $0x3ba059dd
DATA b0<>+8(SB)/4, $0x3ba059dd
DATA b0<>+12(SB)/4, $0x3ba059dd
DATA b0<>+16(SB)/4, $0x3ba059dd
DATA b0<>+20(SB)/4, $0x3ba059dd
DATA b0<>+24(SB)/4, $0x3ba059dd
DATA b0<>+28(SB)/4, $0x3ba059dd
GLOBL b0<>(SB), RODATA|NOPTR, $32

// b2 = 0.002268434632439
DATA b2<>+0(SB)/4, $0x3b14aa05
DATA b2<>+4(SB)/4, $0x3b14aa05
DATA b2<>+8(SB)/4, $0x3b14aa05
DATA b2<>+12(SB)/4, $0x3b14aa05
DATA b2<>+16(SB)/4, $0x3b14aa05
DATA b2<>+20(SB)/4, $0x3b14aa05
DATA b2<>+24(SB)/4, $0x3b14aa05
DATA b2<>+28(SB)/4, $0x3b14aa05
GLOBL b2<>(SB), RODATA|NOPTR, $32

// b4 = 0.000118534705686654
DATA b4<>+0(SB)/4, $0x38f895d6
DATA b4<>+4(SB)/4, $0x38f895d6
DATA b4<>+8(SB)/4, $0x38f895d6
DATA b4<>+12(SB)/4, $0x38f895d6
DATA b4<>+16(SB)/4, $0x38f895d6
DATA b4<>+20(SB)/4, $0x38f895d6
DATA b4<>+24(SB)/4, $0x38f895d6
DATA b4<>+28(SB)/4, $0x38f895d6
GLOBL b4<>(SB), RODATA|NOPTR, $32

// b6 = 1.19825839466702e-06
DATA b6<>+0(SB)/4, $0x35a0d3d8
DATA b6<>+4(SB)/4, $0x35a0d3d8
DATA b6<>+8(SB)/4, $0x35a0d3d8
DATA b6<>+12(SB)/4, $0x35a0d3d8
DATA b6<>+16(SB)/4, $0x35a0d3d8
DATA b6<>+20(SB)/4, $0x35a0d3d8
DATA b6<>+24(SB)/4, $0x35a0d3d8
DATA b6<>+28(SB)/4, $0x35a0d3d8
GLOBL b6<>(SB), RODATA|NOPTR, $32

// geluA = 0.044715
DATA geluA<>+0(SB)/4, $0x3d372713
DATA geluA<>+4(SB)/4, $0x3d372713
DATA geluA<>+8(SB)/4, $0x3d372713
DATA geluA<>+12(SB)/4, $0x3d372713
DATA geluA<>+16(SB)/4, $0x3d372713
DATA geluA<>+20(SB)/4, $0x3d372713
DATA geluA<>+24(SB)/4, $0x3d372713
DATA geluA<>+28(SB)/4, $0x3d372713
GLOBL geluA<>(SB), RODATA|NOPTR, $32

// geluC = 0.7978845608028654
DATA geluC<>+0(SB)/4, $0x3f4c422a
DATA geluC<>+4(SB)/4, $0x3f4c422a
DATA geluC<>+8(SB)/4, $0x3f4c422a
DATA geluC<>+12(SB)/4, $0x3f4c422a
DATA geluC<>+16(SB)/4, $0x3f4c422a
DATA geluC<>+20(SB)/4, $0x3f4c422a
DATA geluC<>+24(SB)/4, $0x3f4c422a
DATA geluC<>+28(SB)/4, $0x3f4c422a
GLOBL geluC<>(SB), RODATA|NOPTR, $32

// threeA = 0.134145
DATA threeA<>+0(SB)/4, $0x3e095d4f
DATA threeA<>+4(SB)/4, $0x3e095d4f
DATA threeA<>+8(SB)/4, $0x3e095d4f
DATA threeA<>+12(SB)/4, $0x3e095d4f
DATA threeA<>+16(SB)/4, $0x3e095d4f
DATA threeA<>+20(SB)/4, $0x3e095d4f
DATA threeA<>+24(SB)/4, $0x3e095d4f
DATA threeA<>+28(SB)/4, $0x3e095d4f
GLOBL threeA<>(SB), RODATA|NOPTR, $32

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

// one = 1.0
DATA one<>+0(SB)/4, $0x3f800000
DATA one<>+4(SB)/4, $0x3f800000
DATA one<>+8(SB)/4, $0x3f800000
DATA one<>+12(SB)/4, $0x3f800000
DATA one<>+16(SB)/4, $0x3f800000
DATA one<>+20(SB)/4, $0x3f800000
DATA one<>+24(SB)/4, $0x3f800000
DATA one<>+28(SB)/4, $0x3f800000
GLOBL one<>(SB), RODATA|NOPTR, $32

// sat = 9.02
DATA sat<>+0(SB)/4, $0x411051ec
DATA sat<>+4(SB)/4, $0x411051ec
DATA sat<>+8(SB)/4, $0x411051ec
DATA sat<>+12(SB)/4, $0x411051ec
DATA sat<>+16(SB)/4, $0x411051ec
DATA sat<>+20(SB)/4, $0x411051ec
DATA sat<>+24(SB)/4, $0x411051ec
DATA sat<>+28(SB)/4, $0x411051ec
GLOBL sat<>(SB), RODATA|NOPTR, $32
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

// func forwardAVX2(y, x *float32, n int)
// SI = &x[i], DI = &y[i], CX = elements left. Y0 = x, Y7 = x².
TEXT ·forwardAVX2(SB), NOSPLIT, $0-24
	MOVQ y+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ n+16(FP), CX

floop:
	VMOVUPS (SI), Y0
	// u = c(x + a·x³), clamped; Y2 = u, Y3 = u².
	VMULPS      Y0, Y0, Y7
	VMULPS      Y0, Y7, Y1
	VFMADD132PS geluA<>(SB), Y0, Y1
	VMULPS      geluC<>(SB), Y1, Y2
	// Y6 = |u| ≥ sat (all ones or zero), Y8 = ±1 with the sign of u.
	VANDPS      absMask<>(SB), Y2, Y6
	VCMPPS      $0x1d, sat<>(SB), Y6, Y6
	VANDPS      signMask<>(SB), Y2, Y8
	VORPS       one<>(SB), Y8, Y8
	VMINPS      clampHi<>(SB), Y2, Y2
	VMAXPS      clampLo<>(SB), Y2, Y2
	VMULPS      Y2, Y2, Y3
	// Y4 = t = tanh(u) = u·p(u²)/q(u²), Horner: p ← u²·p + a.
	VMOVUPS     a13<>(SB), Y4
	VFMADD213PS a11<>(SB), Y3, Y4
	VFMADD213PS a9<>(SB), Y3, Y4
	VFMADD213PS a7<>(SB), Y3, Y4
	VFMADD213PS a5<>(SB), Y3, Y4
	VFMADD213PS a3<>(SB), Y3, Y4
	VFMADD213PS a1<>(SB), Y3, Y4
	VMULPS      Y2, Y4, Y4
	VMOVUPS     b6<>(SB), Y5
	VFMADD213PS b4<>(SB), Y3, Y5
	VFMADD213PS b2<>(SB), Y3, Y5
	VFMADD213PS b0<>(SB), Y3, Y5
	VDIVPS      Y5, Y4, Y4
	VBLENDVPS   Y6, Y8, Y4, Y4 // t = ±1 where |u| ≥ sat
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

// func backwardAVX2(dx, x, dy *float32, n int)
// SI = &x[i], DX = &dy[i], DI = &dx[i], CX = elements left. Y0 = x, Y7 = x².
TEXT ·backwardAVX2(SB), NOSPLIT, $0-32
	MOVQ dx+0(FP), DI
	MOVQ x+8(FP), SI
	MOVQ dy+16(FP), DX
	MOVQ n+24(FP), CX
	VMOVUPS one<>(SB), Y15

bloop:
	VMOVUPS (SI), Y0
	// u = c(x + a·x³), clamped; Y2 = u, Y3 = u².
	VMULPS      Y0, Y0, Y7
	VMULPS      Y0, Y7, Y1
	VFMADD132PS geluA<>(SB), Y0, Y1
	VMULPS      geluC<>(SB), Y1, Y2
	// Y6 = |u| ≥ sat (all ones or zero), Y8 = ±1 with the sign of u.
	VANDPS      absMask<>(SB), Y2, Y6
	VCMPPS      $0x1d, sat<>(SB), Y6, Y6
	VANDPS      signMask<>(SB), Y2, Y8
	VORPS       one<>(SB), Y8, Y8
	VMINPS      clampHi<>(SB), Y2, Y2
	VMAXPS      clampLo<>(SB), Y2, Y2
	VMULPS      Y2, Y2, Y3
	// Y4 = t = tanh(u) = u·p(u²)/q(u²), Horner: p ← u²·p + a.
	VMOVUPS     a13<>(SB), Y4
	VFMADD213PS a11<>(SB), Y3, Y4
	VFMADD213PS a9<>(SB), Y3, Y4
	VFMADD213PS a7<>(SB), Y3, Y4
	VFMADD213PS a5<>(SB), Y3, Y4
	VFMADD213PS a3<>(SB), Y3, Y4
	VFMADD213PS a1<>(SB), Y3, Y4
	VMULPS      Y2, Y4, Y4
	VMOVUPS     b6<>(SB), Y5
	VFMADD213PS b4<>(SB), Y3, Y5
	VFMADD213PS b2<>(SB), Y3, Y5
	VFMADD213PS b0<>(SB), Y3, Y5
	VDIVPS      Y5, Y4, Y4
	VBLENDVPS   Y6, Y8, Y4, Y4 // t = ±1 where |u| ≥ sat
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
