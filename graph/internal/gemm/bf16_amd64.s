//go:build amd64 && !purego

#include "textflag.h"

#include "avx.h"

// The AVX512_BF16 kernels of bf16.go. Go's assembler has no mnemonics for
// VDPBF16PS and VCVTNE2PS2BF16: they are written as their bytes (EVEX
// encodings as GNU as emits them), each line commented with its
// instruction in Intel syntax (destination first); TestBF16Encodings
// disassembles the test binary with objdump and checks every one. This
// file is written by gen_bf16_amd64.py: edit that, and run it.
//
// bf16Avx512 is microKernelBF16's kernel: a 4×32 tile of C summed as the
// model of bf16.go (AMX's order), from a packed strip of A (word (r, q) of
// row r at a[r·aRow + q·aStep]) and a packed panel of B (32 words a word
// of k), both in chains order: word 2i holds two steps of the even chain
// (4i in the high half, 4i+2 in the low), word 2i+1 two of the odd chain
// (4i+1, 4i+3). VDPBF16PS zmm_acc, zmm_a, zmm_b adds to each float32
// lane the product of the high halves, then that of the low halves, each
// add rounded once, a denormal result flushed: so each word adds its
// chain's two steps in the model's order.
//
// Each 16 sums of the tile have three registers: the even chain's
// accumulator (Z0–Z7: row r in Z2r, Z2r+1), the odd one's (Z8–Z15:
// Z8+2r, Z9+2r) and s (Z16–Z23: Z16+2r, Z17+2r). A chunk of 32 steps is 8
// even and 8 odd words, unrolled: per word pair B's 2 × 32 words load into
// Z24–Z27 and A's 4 + 4 words broadcast in turn into Z28–Z31, 16
// VDPBF16PS of 32 multiply-adds. At the chunk's end s = s + (even + odd),
// with MXCSR's FTZ and DAZ set so that VADDPS flushes a denormal sum as
// the model does (VDPBF16PS flushes whatever MXCSR says), and the
// accumulators start the next chunk from zero. Two adds per 8 VDPBF16PS
// take the ports VDPBF16PS runs on; 6×32 with s in memory (loaded and
// stored at each chunk's end) measured no faster, 12×32 would need 72
// registers.
// After the last chunk MXCSR is restored and the epilogue adds s to the
// rows at add when accumulate is set (C, or a bias row with ldAdd = 0; a
// plain float32 add), then stores; after each tile a moves by aNext
// words, c and add by 4 rows.
//
// Registers: BX = chunks left; SI, R12 = &a[q·aStep] (row 0) at the even
// word q and the odd word q+1, R9 = aRow, R10 = 3·aRow, R14 = 2·aStep;
// DI = &b[q·32]; DX = &c's current row, R8 = ldc (strides in bytes); in
// the epilogue SI = the current row at add, R9 = ldAdd.

// func bf16Avx512(kp int, a unsafe.Pointer, aRow, aStep int, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·bf16Avx512(SB), NOSPLIT, $8-96
	STMXCSR mxcsr-8(SP)
	MOVL mxcsr-8(SP), AX
	ORL $0x8040, AX          // FTZ, DAZ
	MOVL AX, ftz-4(SP)

bf16strip:
	LDMXCSR ftz-4(SP)
	MOVQ kp+0(FP), BX
	SHRQ $4, BX              // chunks
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	MOVQ aStep+24(FP), R14
	SHLQ $2, R14
	LEAQ (SI)(R14*1), R12
	SHLQ $1, R14
	MOVQ b+32(FP), DI
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $2, R8
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
	VPXORD Z20, Z20, Z20
	VPXORD Z21, Z21, Z21
	VPXORD Z22, Z22, Z22
	VPXORD Z23, Z23, Z23
	MOVQ DX, CX
	PREFETCHT0 (CX)
	PREFETCHT0 64(CX)
	ADDQ R8, CX
	PREFETCHT0 (CX)
	PREFETCHT0 64(CX)
	ADDQ R8, CX
	PREFETCHT0 (CX)
	PREFETCHT0 64(CX)
	ADDQ R8, CX
	PREFETCHT0 (CX)
	PREFETCHT0 64(CX)
	TESTQ BX, BX
	JZ    bf16sums

bf16chunk:
	ZERO_Z16
	VMOVUPS 0(DI), Z24
	VMOVUPS 64(DI), Z25
	VMOVUPS 128(DI), Z26
	VMOVUPS 192(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	VMOVUPS 256(DI), Z24
	VMOVUPS 320(DI), Z25
	VMOVUPS 384(DI), Z26
	VMOVUPS 448(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	VMOVUPS 512(DI), Z24
	VMOVUPS 576(DI), Z25
	VMOVUPS 640(DI), Z26
	VMOVUPS 704(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	VMOVUPS 768(DI), Z24
	VMOVUPS 832(DI), Z25
	VMOVUPS 896(DI), Z26
	VMOVUPS 960(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	VMOVUPS 1024(DI), Z24
	VMOVUPS 1088(DI), Z25
	VMOVUPS 1152(DI), Z26
	VMOVUPS 1216(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	VMOVUPS 1280(DI), Z24
	VMOVUPS 1344(DI), Z25
	VMOVUPS 1408(DI), Z26
	VMOVUPS 1472(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	VMOVUPS 1536(DI), Z24
	VMOVUPS 1600(DI), Z25
	VMOVUPS 1664(DI), Z26
	VMOVUPS 1728(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	VMOVUPS 1792(DI), Z24
	VMOVUPS 1856(DI), Z25
	VMOVUPS 1920(DI), Z26
	VMOVUPS 1984(DI), Z27
	VBROADCASTSS (SI), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm28, zmm25
	VBROADCASTSS (R12), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xc2 // vdpbf16ps zmm8, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xcb // vdpbf16ps zmm9, zmm29, zmm27
	VBROADCASTSS (SI)(R9*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm30, zmm25
	VBROADCASTSS (R12)(R9*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xd2 // vdpbf16ps zmm10, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xdb // vdpbf16ps zmm11, zmm31, zmm27
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (R12)(R9*2), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xe2 // vdpbf16ps zmm12, zmm29, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xeb // vdpbf16ps zmm13, zmm29, zmm27
	VBROADCASTSS (SI)(R10*1), Z30
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm30, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x0e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm30, zmm25
	VBROADCASTSS (R12)(R10*1), Z31
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xf2 // vdpbf16ps zmm14, zmm31, zmm26
	BYTE $0x62; BYTE $0x12; BYTE $0x06; BYTE $0x40; BYTE $0x52; BYTE $0xfb // vdpbf16ps zmm15, zmm31, zmm27
	ADDQ R14, SI
	ADDQ R14, R12
	ADDQ $2048, DI
	VADDPS Z8, Z0, Z0
	VADDPS Z9, Z1, Z1
	VADDPS Z10, Z2, Z2
	VADDPS Z11, Z3, Z3
	VADDPS Z12, Z4, Z4
	VADDPS Z13, Z5, Z5
	VADDPS Z14, Z6, Z6
	VADDPS Z15, Z7, Z7
	VADDPS Z0, Z16, Z16
	VADDPS Z1, Z17, Z17
	VADDPS Z2, Z18, Z18
	VADDPS Z3, Z19, Z19
	VADDPS Z4, Z20, Z20
	VADDPS Z5, Z21, Z21
	VADDPS Z6, Z22, Z22
	VADDPS Z7, Z23, Z23
	DECQ BX
	JNZ  bf16chunk

bf16sums:
	LDMXCSR mxcsr-8(SP)
	MOVBLZX accumulate+72(FP), CX
	TESTL   CX, CX
	JZ      bf16write
	MOVQ add+56(FP), SI
	MOVQ ldAdd+64(FP), R9
	SHLQ $2, R9
	VADDPS (SI), Z16, Z16
	VADDPS 64(SI), Z17, Z17
	VMOVUPS Z16, (DX)
	VMOVUPS Z17, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z18, Z18
	VADDPS 64(SI), Z19, Z19
	VMOVUPS Z18, (DX)
	VMOVUPS Z19, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z20, Z20
	VADDPS 64(SI), Z21, Z21
	VMOVUPS Z20, (DX)
	VMOVUPS Z21, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	VADDPS (SI), Z22, Z22
	VADDPS 64(SI), Z23, Z23
	VMOVUPS Z22, (DX)
	VMOVUPS Z23, 64(DX)
	ADDQ R8, DX
	ADDQ R9, SI
	JMP  bf16next

bf16write:
	VMOVUPS Z16, (DX)
	VMOVUPS Z17, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z18, (DX)
	VMOVUPS Z19, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z20, (DX)
	VMOVUPS Z21, 64(DX)
	ADDQ R8, DX
	VMOVUPS Z22, (DX)
	VMOVUPS Z23, 64(DX)
	ADDQ R8, DX

bf16next:
	DECQ strips+88(FP)
	JZ   bf16done
	MOVQ aNext+80(FP), CX
	SHLQ $2, CX
	ADDQ CX, a+8(FP)
	MOVQ ldc+48(FP), CX
	IMUL3Q $16, CX, CX
	ADDQ CX, c+40(FP)
	MOVQ ldAdd+64(FP), CX
	IMUL3Q $16, CX, CX
	ADDQ CX, add+56(FP)
	JMP  bf16strip

bf16done:
	VZEROUPPER
	RET

// func bf16Pack(dst unsafe.Pointer, w int, row0, row1 unsafe.Pointer, step, n, pairs int)
//
// For q < pairs: the n words at dst + q·w·4 get, word i, bfloat16 of
// float32 i of row0 + q·step·4 in the low half and of row1 + q·step·4 in
// the high half (packBF16's words: two steps' rows, step floats on to the
// next word's). 16 words at a time: VCVTNE2PS2BF16 rounds both rows' 16
// numbers into one register (row0's in the low 16 words), VPERMW
// interleaves them; n mod 16 words under a mask (loads and stores), so
// that nothing past the rows is read and nothing past n written.
TEXT ·bf16Pack(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), R8
	SHLQ $2, R8
	MOVQ row0+16(FP), SI
	MOVQ row1+24(FP), DX
	MOVQ step+32(FP), R9
	SHLQ $2, R9
	MOVQ n+40(FP), R10
	MOVQ pairs+48(FP), R11
	MOVQ R10, CX
	ANDQ $15, CX
	MOVL $1, AX
	SHLL CX, AX
	DECL AX
	KMOVW AX, K1              // the last n mod 16 words
	VMOVDQU16 ·bf16Interleave(SB), Z31
	TESTQ R11, R11
	JZ    packdone

packpair:
	XORQ BX, BX               // byte offset in the rows
	MOVQ R10, CX

pack16:
	CMPQ CX, $16
	JLT  packtail
	VMOVUPS (SI)(BX*1), Z0
	VMOVUPS (DX)(BX*1), Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm2, zmm1, zmm0
	VPERMW Z2, Z31, Z2
	VMOVDQU32 Z2, (DI)(BX*1)
	ADDQ $64, BX
	SUBQ $16, CX
	JMP  pack16

packtail:
	TESTQ CX, CX
	JZ    packnext
	VMOVUPS.Z (SI)(BX*1), K1, Z0
	VMOVUPS.Z (DX)(BX*1), K1, Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm2, zmm1, zmm0
	VPERMW Z2, Z31, Z2
	VMOVDQU32 Z2, K1, (DI)(BX*1)

packnext:
	ADDQ R9, SI
	ADDQ R9, DX
	ADDQ R8, DI
	DECQ R11
	JNZ  packpair

packdone:
	VZEROUPPER
	RET

// func bf16Rows(dst unsafe.Pointer, ldDst int, src unsafe.Pointer, ldSrc, n, rows int, chains bool)
//
// For each of rows rows (ldSrc float32 apart in src, ldDst words apart in
// dst): the row's n numbers rounded to bfloat16, two to a word, in pairs
// order (the last word's high half zero for an odd n) or, with chains, in
// chains order (bf16.go: bf16Steps; the last group of four steps padded
// with zeros). A row of A is packed so (packBF16Rows): its steps are
// neighbours already, and VCVTNE2PS2BF16 rounds 32 numbers into 16 words
// in order (its second source into the low half); for chains order
// VPSHUFB then reorders the halves of each four steps (in place in a
// 128-bit lane), and in pairs order shuffles nothing (bf16Shuffle's
// identity). The last n mod 32 numbers under masks: K1 and K2 for the
// loads, K3 for the words stored.
TEXT ·bf16Rows(SB), NOSPLIT, $0-49
	MOVQ dst+0(FP), DI
	MOVQ ldDst+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ ldSrc+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), R10
	MOVQ rows+40(FP), R11
	MOVBLZX chains+48(FP), DX
	MOVQ DX, CX
	SHLQ $6, CX
	LEAQ ·bf16Shuffle(SB), AX
	VMOVDQU8 (AX)(CX*1), Z31
	MOVQ R10, CX
	ANDQ $31, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1              // the first 16 numbers of the tail
	SHRQ $16, AX
	KMOVW AX, K2              // its next 16
	TESTQ DX, DX
	JZ    rowsmask
	ADDQ $3, CX              // chains: whole groups of four steps
	ANDQ $-4, CX

rowsmask:
	INCQ CX
	SHRQ $1, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K3              // its words
	TESTQ R11, R11
	JZ    rowsdone

rowsrow:
	XORQ BX, BX               // byte offset in the source row
	XORQ DX, DX               // and in the destination row
	MOVQ R10, CX

rows32:
	CMPQ CX, $32
	JLT  rowstail
	VMOVUPS (SI)(BX*1), Z0
	VMOVUPS 64(SI)(BX*1), Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm2, zmm1, zmm0
	VPSHUFB Z31, Z2, Z2
	VMOVDQU32 Z2, (DI)(DX*1)
	SUBQ $-128, BX
	ADDQ $64, DX
	SUBQ $32, CX
	JMP  rows32

rowstail:
	TESTQ CX, CX
	JZ    rowsnext
	VMOVUPS.Z (SI)(BX*1), K1, Z0
	VMOVUPS.Z 64(SI)(BX*1), K2, Z1
	BYTE $0x62; BYTE $0xf2; BYTE $0x77; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm2, zmm1, zmm0
	VPSHUFB Z31, Z2, Z2
	VMOVDQU32 Z2, K3, (DI)(DX*1)

rowsnext:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ R11
	JNZ  rowsrow

rowsdone:
	VZEROUPPER
	RET

// bf16Shuffle: VPSHUFB's byte indices (per 128-bit lane) for bf16Rows,
// the identity for pairs order, then for chains order: per four steps s0
// … s3 (four 16-bit words, in order), the words s2, s0, s3, s1.
DATA ·bf16Shuffle+0(SB)/1, $0
DATA ·bf16Shuffle+1(SB)/1, $1
DATA ·bf16Shuffle+2(SB)/1, $2
DATA ·bf16Shuffle+3(SB)/1, $3
DATA ·bf16Shuffle+4(SB)/1, $4
DATA ·bf16Shuffle+5(SB)/1, $5
DATA ·bf16Shuffle+6(SB)/1, $6
DATA ·bf16Shuffle+7(SB)/1, $7
DATA ·bf16Shuffle+8(SB)/1, $8
DATA ·bf16Shuffle+9(SB)/1, $9
DATA ·bf16Shuffle+10(SB)/1, $10
DATA ·bf16Shuffle+11(SB)/1, $11
DATA ·bf16Shuffle+12(SB)/1, $12
DATA ·bf16Shuffle+13(SB)/1, $13
DATA ·bf16Shuffle+14(SB)/1, $14
DATA ·bf16Shuffle+15(SB)/1, $15
DATA ·bf16Shuffle+16(SB)/1, $0
DATA ·bf16Shuffle+17(SB)/1, $1
DATA ·bf16Shuffle+18(SB)/1, $2
DATA ·bf16Shuffle+19(SB)/1, $3
DATA ·bf16Shuffle+20(SB)/1, $4
DATA ·bf16Shuffle+21(SB)/1, $5
DATA ·bf16Shuffle+22(SB)/1, $6
DATA ·bf16Shuffle+23(SB)/1, $7
DATA ·bf16Shuffle+24(SB)/1, $8
DATA ·bf16Shuffle+25(SB)/1, $9
DATA ·bf16Shuffle+26(SB)/1, $10
DATA ·bf16Shuffle+27(SB)/1, $11
DATA ·bf16Shuffle+28(SB)/1, $12
DATA ·bf16Shuffle+29(SB)/1, $13
DATA ·bf16Shuffle+30(SB)/1, $14
DATA ·bf16Shuffle+31(SB)/1, $15
DATA ·bf16Shuffle+32(SB)/1, $0
DATA ·bf16Shuffle+33(SB)/1, $1
DATA ·bf16Shuffle+34(SB)/1, $2
DATA ·bf16Shuffle+35(SB)/1, $3
DATA ·bf16Shuffle+36(SB)/1, $4
DATA ·bf16Shuffle+37(SB)/1, $5
DATA ·bf16Shuffle+38(SB)/1, $6
DATA ·bf16Shuffle+39(SB)/1, $7
DATA ·bf16Shuffle+40(SB)/1, $8
DATA ·bf16Shuffle+41(SB)/1, $9
DATA ·bf16Shuffle+42(SB)/1, $10
DATA ·bf16Shuffle+43(SB)/1, $11
DATA ·bf16Shuffle+44(SB)/1, $12
DATA ·bf16Shuffle+45(SB)/1, $13
DATA ·bf16Shuffle+46(SB)/1, $14
DATA ·bf16Shuffle+47(SB)/1, $15
DATA ·bf16Shuffle+48(SB)/1, $0
DATA ·bf16Shuffle+49(SB)/1, $1
DATA ·bf16Shuffle+50(SB)/1, $2
DATA ·bf16Shuffle+51(SB)/1, $3
DATA ·bf16Shuffle+52(SB)/1, $4
DATA ·bf16Shuffle+53(SB)/1, $5
DATA ·bf16Shuffle+54(SB)/1, $6
DATA ·bf16Shuffle+55(SB)/1, $7
DATA ·bf16Shuffle+56(SB)/1, $8
DATA ·bf16Shuffle+57(SB)/1, $9
DATA ·bf16Shuffle+58(SB)/1, $10
DATA ·bf16Shuffle+59(SB)/1, $11
DATA ·bf16Shuffle+60(SB)/1, $12
DATA ·bf16Shuffle+61(SB)/1, $13
DATA ·bf16Shuffle+62(SB)/1, $14
DATA ·bf16Shuffle+63(SB)/1, $15
DATA ·bf16Shuffle+64(SB)/1, $4
DATA ·bf16Shuffle+65(SB)/1, $5
DATA ·bf16Shuffle+66(SB)/1, $0
DATA ·bf16Shuffle+67(SB)/1, $1
DATA ·bf16Shuffle+68(SB)/1, $6
DATA ·bf16Shuffle+69(SB)/1, $7
DATA ·bf16Shuffle+70(SB)/1, $2
DATA ·bf16Shuffle+71(SB)/1, $3
DATA ·bf16Shuffle+72(SB)/1, $12
DATA ·bf16Shuffle+73(SB)/1, $13
DATA ·bf16Shuffle+74(SB)/1, $8
DATA ·bf16Shuffle+75(SB)/1, $9
DATA ·bf16Shuffle+76(SB)/1, $14
DATA ·bf16Shuffle+77(SB)/1, $15
DATA ·bf16Shuffle+78(SB)/1, $10
DATA ·bf16Shuffle+79(SB)/1, $11
DATA ·bf16Shuffle+80(SB)/1, $4
DATA ·bf16Shuffle+81(SB)/1, $5
DATA ·bf16Shuffle+82(SB)/1, $0
DATA ·bf16Shuffle+83(SB)/1, $1
DATA ·bf16Shuffle+84(SB)/1, $6
DATA ·bf16Shuffle+85(SB)/1, $7
DATA ·bf16Shuffle+86(SB)/1, $2
DATA ·bf16Shuffle+87(SB)/1, $3
DATA ·bf16Shuffle+88(SB)/1, $12
DATA ·bf16Shuffle+89(SB)/1, $13
DATA ·bf16Shuffle+90(SB)/1, $8
DATA ·bf16Shuffle+91(SB)/1, $9
DATA ·bf16Shuffle+92(SB)/1, $14
DATA ·bf16Shuffle+93(SB)/1, $15
DATA ·bf16Shuffle+94(SB)/1, $10
DATA ·bf16Shuffle+95(SB)/1, $11
DATA ·bf16Shuffle+96(SB)/1, $4
DATA ·bf16Shuffle+97(SB)/1, $5
DATA ·bf16Shuffle+98(SB)/1, $0
DATA ·bf16Shuffle+99(SB)/1, $1
DATA ·bf16Shuffle+100(SB)/1, $6
DATA ·bf16Shuffle+101(SB)/1, $7
DATA ·bf16Shuffle+102(SB)/1, $2
DATA ·bf16Shuffle+103(SB)/1, $3
DATA ·bf16Shuffle+104(SB)/1, $12
DATA ·bf16Shuffle+105(SB)/1, $13
DATA ·bf16Shuffle+106(SB)/1, $8
DATA ·bf16Shuffle+107(SB)/1, $9
DATA ·bf16Shuffle+108(SB)/1, $14
DATA ·bf16Shuffle+109(SB)/1, $15
DATA ·bf16Shuffle+110(SB)/1, $10
DATA ·bf16Shuffle+111(SB)/1, $11
DATA ·bf16Shuffle+112(SB)/1, $4
DATA ·bf16Shuffle+113(SB)/1, $5
DATA ·bf16Shuffle+114(SB)/1, $0
DATA ·bf16Shuffle+115(SB)/1, $1
DATA ·bf16Shuffle+116(SB)/1, $6
DATA ·bf16Shuffle+117(SB)/1, $7
DATA ·bf16Shuffle+118(SB)/1, $2
DATA ·bf16Shuffle+119(SB)/1, $3
DATA ·bf16Shuffle+120(SB)/1, $12
DATA ·bf16Shuffle+121(SB)/1, $13
DATA ·bf16Shuffle+122(SB)/1, $8
DATA ·bf16Shuffle+123(SB)/1, $9
DATA ·bf16Shuffle+124(SB)/1, $14
DATA ·bf16Shuffle+125(SB)/1, $15
DATA ·bf16Shuffle+126(SB)/1, $10
DATA ·bf16Shuffle+127(SB)/1, $11
GLOBL ·bf16Shuffle(SB), RODATA|NOPTR, $128

// bf16Interleave: VPERMW's word indices that interleave the low 16 words
// of a register with its high 16 (word 2i from word i, 2i+1 from 16+i).
DATA ·bf16Interleave+0(SB)/2, $0
DATA ·bf16Interleave+2(SB)/2, $16
DATA ·bf16Interleave+4(SB)/2, $1
DATA ·bf16Interleave+6(SB)/2, $17
DATA ·bf16Interleave+8(SB)/2, $2
DATA ·bf16Interleave+10(SB)/2, $18
DATA ·bf16Interleave+12(SB)/2, $3
DATA ·bf16Interleave+14(SB)/2, $19
DATA ·bf16Interleave+16(SB)/2, $4
DATA ·bf16Interleave+18(SB)/2, $20
DATA ·bf16Interleave+20(SB)/2, $5
DATA ·bf16Interleave+22(SB)/2, $21
DATA ·bf16Interleave+24(SB)/2, $6
DATA ·bf16Interleave+26(SB)/2, $22
DATA ·bf16Interleave+28(SB)/2, $7
DATA ·bf16Interleave+30(SB)/2, $23
DATA ·bf16Interleave+32(SB)/2, $8
DATA ·bf16Interleave+34(SB)/2, $24
DATA ·bf16Interleave+36(SB)/2, $9
DATA ·bf16Interleave+38(SB)/2, $25
DATA ·bf16Interleave+40(SB)/2, $10
DATA ·bf16Interleave+42(SB)/2, $26
DATA ·bf16Interleave+44(SB)/2, $11
DATA ·bf16Interleave+46(SB)/2, $27
DATA ·bf16Interleave+48(SB)/2, $12
DATA ·bf16Interleave+50(SB)/2, $28
DATA ·bf16Interleave+52(SB)/2, $13
DATA ·bf16Interleave+54(SB)/2, $29
DATA ·bf16Interleave+56(SB)/2, $14
DATA ·bf16Interleave+58(SB)/2, $30
DATA ·bf16Interleave+60(SB)/2, $15
DATA ·bf16Interleave+62(SB)/2, $31
GLOBL ·bf16Interleave(SB), RODATA|NOPTR, $64

// func dot4BF16(chunks int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer)
//
// gemvBF16's four rows at a time: for r < 4 and lane l < 16, out[r·16 + l]
// = the sum, pair after pair from zero, of the pairs q = l, l+16, … <
// 16·chunks of x (packed pairs, 16 words a load) and of row r of b
// (float32, ldb apart, rounded here: VCVTNE2PS2BF16 of its next 32
// numbers), as VDPBF16PS sums a lane. The lanes are reduced in Go.
TEXT ·dot4BF16(SB), NOSPLIT, $0-40
	MOVQ chunks+0(FP), CX
	MOVQ x+8(FP), SI
	MOVQ b+16(FP), DI
	MOVQ ldb+24(FP), R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	MOVQ out+32(FP), DX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	TESTQ CX, CX
	JZ    dot4bf16done

dot4bf16loop:
	VMOVDQU32 (SI), Z4
	VMOVUPS (DI), Z5
	VMOVUPS 64(DI), Z6
	BYTE $0x62; BYTE $0xf2; BYTE $0x4f; BYTE $0x48; BYTE $0x72; BYTE $0xfd // vcvtne2ps2bf16 zmm7, zmm6, zmm5
	BYTE $0x62; BYTE $0xf2; BYTE $0x46; BYTE $0x48; BYTE $0x52; BYTE $0xc4 // vdpbf16ps zmm0, zmm7, zmm4
	VMOVUPS (DI)(R8*1), Z8
	VMOVUPS 64(DI)(R8*1), Z9
	BYTE $0x62; BYTE $0x52; BYTE $0x37; BYTE $0x48; BYTE $0x72; BYTE $0xd0 // vcvtne2ps2bf16 zmm10, zmm9, zmm8
	BYTE $0x62; BYTE $0xf2; BYTE $0x2e; BYTE $0x48; BYTE $0x52; BYTE $0xcc // vdpbf16ps zmm1, zmm10, zmm4
	VMOVUPS (DI)(R8*2), Z11
	VMOVUPS 64(DI)(R8*2), Z12
	BYTE $0x62; BYTE $0x52; BYTE $0x1f; BYTE $0x48; BYTE $0x72; BYTE $0xeb // vcvtne2ps2bf16 zmm13, zmm12, zmm11
	BYTE $0x62; BYTE $0xf2; BYTE $0x16; BYTE $0x48; BYTE $0x52; BYTE $0xd4 // vdpbf16ps zmm2, zmm13, zmm4
	VMOVUPS (DI)(R9*1), Z14
	VMOVUPS 64(DI)(R9*1), Z15
	BYTE $0x62; BYTE $0xc2; BYTE $0x07; BYTE $0x48; BYTE $0x72; BYTE $0xc6 // vcvtne2ps2bf16 zmm16, zmm15, zmm14
	BYTE $0x62; BYTE $0xf2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xdc // vdpbf16ps zmm3, zmm16, zmm4
	ADDQ $64, SI
	SUBQ $-128, DI
	DECQ CX
	JNZ  dot4bf16loop

dot4bf16done:
	VMOVUPS Z0, (DX)
	VMOVUPS Z1, 64(DX)
	VMOVUPS Z2, 128(DX)
	VMOVUPS Z3, 192(DX)
	VZEROUPPER
	RET

// func peakBF16(n int)
//
// n iterations of 16 independent VDPBF16PS on registers (1024 flops):
// the bfloat16 peak, as peakAVX512 (peak_amd64.s) is float32's.
TEXT ·peakBF16(SB), NOSPLIT, $0-8
	MOVQ n+0(FP), CX
	ZERO_Z16
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17

peakbf16loop:
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xc1 // vdpbf16ps zmm0, zmm16, zmm17
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm16, zmm17
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xd1 // vdpbf16ps zmm2, zmm16, zmm17
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm16, zmm17
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xe1 // vdpbf16ps zmm4, zmm16, zmm17
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm16, zmm17
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xf1 // vdpbf16ps zmm6, zmm16, zmm17
	BYTE $0x62; BYTE $0xb2; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xc1 // vdpbf16ps zmm8, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm9, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xd1 // vdpbf16ps zmm10, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm11, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xe1 // vdpbf16ps zmm12, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm13, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xf1 // vdpbf16ps zmm14, zmm16, zmm17
	BYTE $0x62; BYTE $0x32; BYTE $0x7e; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm15, zmm16, zmm17
	DECQ CX
	JNZ  peakbf16loop
	VZEROUPPER
	RET
