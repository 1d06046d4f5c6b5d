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
// bf16Avx512 is microKernelBF16's kernel: a 12×32 tile of C from a packed
// strip of A (word (r, q), two bfloat16 of row r at steps 2q and 2q+1, at
// a[r·aRow + q·aStep]) and a packed panel of B (per pair, 32 words), as
// avx512F32 is for float32
// (kernel_amd64.s): each row of the tile is two zmm registers of 16
// float32 sums, Z0–Z23. Each pair of steps loads B's 32 words into
// Z24/Z25, broadcasts A's twelve words in turn into Z26–Z29, and does two
// VDPBF16PS per row (2 + 12 loads, 24 instructions of 32 multiply-adds:
// twice avx512F32's work per instruction). VDPBF16PS zmm_acc, zmm_a, zmm_b
// adds to each float32 lane i the products of the high bfloat16 of word i
// of zmm_a and zmm_b, then those of the low ones (bf16.go: dpbf16).
//
// The epilogue, the strips and the prefetch of C's tile are avx512F32's:
// the sums are added to the rows at add when accumulate is set (C, or a
// bias row with ldAdd = 0), then stored; after each tile a moves by aNext
// words and c and add by 12 rows.
//
// Registers: CX = pairs left; SI, R11, R12 = &a[r·aRow + q·aStep] of rows
// 0, 4, 8, R9 = aRow, R10 = 3·aRow, R14 = aStep; DI = &b[q·32]; DX = &c's
// current row, R8 = ldc (strides in bytes); in the epilogue SI = the
// current row at add, R9 = ldAdd.

// func bf16Avx512(kp int, a unsafe.Pointer, aRow, aStep int, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
TEXT ·bf16Avx512(SB), NOSPLIT, $0-96
bf16strip:
	MOVQ kp+0(FP), CX
	MOVQ a+8(FP), SI
	MOVQ aRow+16(FP), R9
	SHLQ $2, R9
	LEAQ (R9)(R9*2), R10
	MOVQ aStep+24(FP), R14
	SHLQ $2, R14
	MOVQ b+32(FP), DI
	MOVQ c+40(FP), DX
	MOVQ ldc+48(FP), R8
	SHLQ $2, R8
	LEAQ (SI)(R9*4), R11
	LEAQ (R11)(R9*4), R12
	ZERO_Z24
	PREFETCH_C12
	TESTQ CX, CX
	JZ    bf16sums

bf16loop:
	VMOVUPS (DI), Z24
	VMOVUPS 64(DI), Z25
	VBROADCASTSS (SI), Z26
	BYTE $0x62; BYTE $0x92; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm0, zmm26, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm1, zmm26, zmm25
	VBROADCASTSS (SI)(R9*1), Z27
	BYTE $0x62; BYTE $0x92; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm2, zmm27, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm3, zmm27, zmm25
	VBROADCASTSS (SI)(R9*2), Z28
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm4, zmm28, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm5, zmm28, zmm25
	VBROADCASTSS (SI)(R10*1), Z29
	BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm6, zmm29, zmm24
	BYTE $0x62; BYTE $0x92; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm7, zmm29, zmm25
	VBROADCASTSS (R11), Z26
	BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm8, zmm26, zmm24
	BYTE $0x62; BYTE $0x12; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm9, zmm26, zmm25
	VBROADCASTSS (R11)(R9*1), Z27
	BYTE $0x62; BYTE $0x12; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm10, zmm27, zmm24
	BYTE $0x62; BYTE $0x12; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm11, zmm27, zmm25
	VBROADCASTSS (R11)(R9*2), Z28
	BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm12, zmm28, zmm24
	BYTE $0x62; BYTE $0x12; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm13, zmm28, zmm25
	VBROADCASTSS (R11)(R10*1), Z29
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm14, zmm29, zmm24
	BYTE $0x62; BYTE $0x12; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm15, zmm29, zmm25
	VBROADCASTSS (R12), Z26
	BYTE $0x62; BYTE $0x82; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc0 // vdpbf16ps zmm16, zmm26, zmm24
	BYTE $0x62; BYTE $0x82; BYTE $0x2e; BYTE $0x40; BYTE $0x52; BYTE $0xc9 // vdpbf16ps zmm17, zmm26, zmm25
	VBROADCASTSS (R12)(R9*1), Z27
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd0 // vdpbf16ps zmm18, zmm27, zmm24
	BYTE $0x62; BYTE $0x82; BYTE $0x26; BYTE $0x40; BYTE $0x52; BYTE $0xd9 // vdpbf16ps zmm19, zmm27, zmm25
	VBROADCASTSS (R12)(R9*2), Z28
	BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe0 // vdpbf16ps zmm20, zmm28, zmm24
	BYTE $0x62; BYTE $0x82; BYTE $0x1e; BYTE $0x40; BYTE $0x52; BYTE $0xe9 // vdpbf16ps zmm21, zmm28, zmm25
	VBROADCASTSS (R12)(R10*1), Z29
	BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf0 // vdpbf16ps zmm22, zmm29, zmm24
	BYTE $0x62; BYTE $0x82; BYTE $0x16; BYTE $0x40; BYTE $0x52; BYTE $0xf9 // vdpbf16ps zmm23, zmm29, zmm25
	ADDQ R14, SI
	ADDQ R14, R11
	ADDQ R14, R12
	SUBQ $-128, DI
	DECQ CX
	JNZ  bf16loop

bf16sums:
	MOVBLZX accumulate+72(FP), AX
	TESTL   AX, AX
	JZ      bf16write
	MOVQ add+56(FP), SI
	MOVQ ldAdd+64(FP), R9
	SHLQ $2, R9
	ADD_STORE_C12
	JMP  bf16next

bf16write:
	STORE_C12

bf16next:
	DECQ strips+88(FP)
	JZ   bf16done
	MOVQ aNext+80(FP), AX
	SHLQ $2, AX
	ADDQ AX, a+8(FP)
	MOVQ ldc+48(FP), AX
	IMUL3Q $48, AX, AX
	ADDQ AX, c+40(FP)
	MOVQ ldAdd+64(FP), AX
	IMUL3Q $48, AX, AX
	ADDQ AX, add+56(FP)
	JMP  bf16strip

bf16done:
	VZEROUPPER
	RET

// func bf16Pack(dst unsafe.Pointer, w int, row0, row1 unsafe.Pointer, ld, n, pairs int)
//
// For q < pairs: the n words at dst + q·w·4 get, word i, bfloat16 of
// float32 i of row0 + 2q·ld·4 in the low half and of row1 + 2q·ld·4 in
// the high half (packBF16's pairs of steps). 16 words at a time:
// VCVTNE2PS2BF16 rounds both rows' 16 numbers into one register (row0's
// in the low 16 words), VPERMW interleaves them; n mod 16 words under a
// mask (loads and stores), so that nothing past the rows is read and
// nothing past n written.
TEXT ·bf16Pack(SB), NOSPLIT, $0-56
	MOVQ dst+0(FP), DI
	MOVQ w+8(FP), R8
	SHLQ $2, R8
	MOVQ row0+16(FP), SI
	MOVQ row1+24(FP), DX
	MOVQ ld+32(FP), R9
	SHLQ $3, R9              // two rows
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

// func bf16Rows(dst unsafe.Pointer, ldDst int, src unsafe.Pointer, ldSrc, n, rows int)
//
// For each of rows rows (ldSrc float32 apart in src, ldDst words apart in
// dst): the row's n numbers rounded to bfloat16, in order, two to a word
// (the last word's high half zero for an odd n). A row of A is packed so
// (packBF16): its pairs of steps are neighbours already, and
// VCVTNE2PS2BF16 rounds 32 numbers into 16 words in order (its second
// source into the low half). The last n mod 32 numbers under masks: K1 and
// K2 for the loads, K3 for the words stored.
TEXT ·bf16Rows(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ ldDst+8(FP), R8
	SHLQ $2, R8
	MOVQ src+16(FP), SI
	MOVQ ldSrc+24(FP), R9
	SHLQ $2, R9
	MOVQ n+32(FP), R10
	MOVQ rows+40(FP), R11
	MOVQ R10, CX
	ANDQ $31, CX
	MOVQ $1, AX
	SHLQ CX, AX
	DECQ AX
	KMOVW AX, K1              // the first 16 numbers of the tail
	SHRQ $16, AX
	KMOVW AX, K2              // its next 16
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
	VMOVDQU32 Z2, K3, (DI)(DX*1)

rowsnext:
	ADDQ R9, SI
	ADDQ R8, DI
	DECQ R11
	JNZ  rowsrow

rowsdone:
	VZEROUPPER
	RET

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
