//go:build arm64 && !purego

#include "textflag.h"
#include "neon.h"

// The register-only multiply-add loop that measures the core's peak for
// the benchmark (peak.go): 24 independent accumulators (enough to cover a
// 4-cycle FMLA latency on four pipes), no loads or stores, so the loop
// runs at the FMA units' throughput. Each iteration does 24 FMLAs on full
// 128-bit registers.

// func peakNEON(n int)
TEXT ·peakNEON(SB), NOSPLIT, $0-8
	MOVD n+0(FP), R0
	VZERO24
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16

neonloop:
	VFMLA V24.S4, V25.S4, V0.S4
	VFMLA V24.S4, V25.S4, V1.S4
	VFMLA V24.S4, V25.S4, V2.S4
	VFMLA V24.S4, V25.S4, V3.S4
	VFMLA V24.S4, V25.S4, V4.S4
	VFMLA V24.S4, V25.S4, V5.S4
	VFMLA V24.S4, V25.S4, V6.S4
	VFMLA V24.S4, V25.S4, V7.S4
	VFMLA V24.S4, V25.S4, V8.S4
	VFMLA V24.S4, V25.S4, V9.S4
	VFMLA V24.S4, V25.S4, V10.S4
	VFMLA V24.S4, V25.S4, V11.S4
	VFMLA V24.S4, V25.S4, V12.S4
	VFMLA V24.S4, V25.S4, V13.S4
	VFMLA V24.S4, V25.S4, V14.S4
	VFMLA V24.S4, V25.S4, V15.S4
	VFMLA V24.S4, V25.S4, V16.S4
	VFMLA V24.S4, V25.S4, V17.S4
	VFMLA V24.S4, V25.S4, V18.S4
	VFMLA V24.S4, V25.S4, V19.S4
	VFMLA V24.S4, V25.S4, V20.S4
	VFMLA V24.S4, V25.S4, V21.S4
	VFMLA V24.S4, V25.S4, V22.S4
	VFMLA V24.S4, V25.S4, V23.S4
	SUBS $1, R0
	BNE  neonloop
	RET
