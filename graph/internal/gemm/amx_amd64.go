//go:build amd64 && !purego

package gemm

import "unsafe"

// amxBF16 is amxKernel's kernel: strips 32×32 blocks of C by AMX tiles,
// see amx_amd64.s.
//
//go:noescape
func amxBF16(chunks int, a, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, strips int, tmp unsafe.Pointer)

// amxPeak runs n iterations of four independent TDPBF16PS on tiles.
//
//go:noescape
func amxPeak(n int)

// xgetbv0 returns XCR0's low 32 bits (OSXSAVE must be set).
func xgetbv0() uint32

// amxTileConfig is LDTILECFG's 64 bytes (palette 1): tiles 0–7 of 16
// rows of 64 bytes (bytes 16–31 the bytes a row, 48–55 the rows).
var amxTileConfig = func() (c [64]byte) {
	c[0] = 1
	for t := range 8 {
		c[16+2*t] = 64
		c[48+t] = 16
	}
	return c
}()

// amxCPU reports why this CPU cannot run the AMX kernel, or "" if it can:
// AMX-TILE and AMX-BF16 (CPUID leaf 7, EDX bits 24 and 22), the OS saving
// the tile state (XCR0 bits 17 and 18, read by XGETBV where CPUID leaf 1
// reports OSXSAVE), and AVX512_BF16, which packs the operands and adds
// the sums (haveBF16).
func amxCPU() string {
	if max7, _, _, _ := cpuid(0, 0); max7 < 7 {
		return "no AMX (CPUID leaf 7 absent)"
	}
	_, _, _, edx7 := cpuid(7, 0)
	if edx7&(1<<24) == 0 || edx7&(1<<22) == 0 {
		return "no AMX-BF16"
	}
	if _, _, ecx1, _ := cpuid(1, 0); ecx1&(1<<27) == 0 {
		return "the OS has not enabled XSAVE"
	}
	if xcr0 := xgetbv0(); xcr0&(3<<17) != 3<<17 {
		return "the OS does not save the AMX tile state (XCR0)"
	}
	if !haveBF16 {
		return "no AVX512_BF16 beside AMX"
	}
	return ""
}
