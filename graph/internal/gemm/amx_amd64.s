//go:build amd64 && !purego

#include "textflag.h"

// The AMX-BF16 kernels of amx.go. Go's assembler has no mnemonics for the
// tile instructions: they are written as their bytes (VEX encodings as
// GNU as emits them), each line commented with its instruction in Intel
// syntax as objdump prints it; TestBF16Encodings disassembles the test
// binary and checks every one.
//
// The tile configuration (amxTileConfig, palette 1) makes all eight tiles
// 16 rows of 64 bytes: tmm0–tmm3 the four 16×16 float32 blocks of a 32×32
// block of C (tmm0 rows 0–15 columns 0–15, tmm1 rows 0–15 columns 16–31,
// tmm2 rows 16–31 columns 0–15, tmm3 rows 16–31 columns 16–31), tmm4 and
// tmm5 A's rows 0–15 and 16–31 (16 words a row: one chunk of 32 steps),
// tmm6 and tmm7 B's columns 0–15 and 16–31 (16 rows of pairs, 16 words a
// row). TDPBF16PS tmm_c, tmm_a, tmm_b adds to each float32 of tmm_c the
// sum of the 32 products of its row of tmm_a and column of tmm_b, as
// amxModel computes it (two chains, even and odd steps, then their sum,
// then tmm_c; bench/NOTES.md "AMX TDPBF16PS numerics").

// PREFETCH_C32(label) prefetches the 32 rows of a block of C at AX (two lines
// each, R8 bytes apart): the next strip's while this one is computed, so
// that its stores do not wait for C's lines to come from memory (C is
// often far larger than the caches). Uses AX and CX; a prefetch past C's
// end does not fault.
#define PREFETCH_C32(label) \
	MOVQ $32, CX; \
	label: \
	PREFETCHT0 (AX); \
	PREFETCHT0 64(AX); \
	ADDQ R8, AX; \
	DECQ CX; \
	JNZ label

// func amxBF16(chunks int, a, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, strips int, tmp unsafe.Pointer)
//
// strips 32×32 blocks of C, one below the other, from a packed block of
// A in tiles (per strip, per chunk, its 32 rows of 16 words: 2 KiB, rows
// 64 bytes apart, the tiles of rows 0–15 and 16–31 one after the other;
// the strips one after the other) and one packed panel of B (per pair of
// steps 32 words, chunk after chunk: 16 pairs of 128 bytes, 2 KiB). So
// both operands are read as runs of 2 KiB, in order. Each block's sums
// start at zero (TILEZERO) and take one TDPBF16PS per chunk and tile;
// then they are stored into C (row stride ldc float32) or, when
// accumulate is set, stored into tmp (32×32 float32) and added to the
// rows at add (ldAdd apart; 0 for a bias row) with a plain float32 add
// (VADDPS), the sums into C. The tiles are released before it returns,
// so that no tile state outlives the call (the goroutine may move to
// another thread).
//
// Registers: SI = A at the chunk (it runs on through the strips), R9 = 64,
// A's row stride; DX = the strip's C, R13 = the strip's add; CX = chunks
// left; DI = B at the chunk, R10 = 128, B's row stride; R8 = ldc and R15 =
// ldAdd in bytes; BX = tmp; R11, R12 = rows in the epilogue.
TEXT ·amxBF16(SB), NOSPLIT, $0-80
	LEAQ ·amxTileConfig(SB), AX
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg [rax]
	MOVQ $64, R9
	MOVQ $128, R10
	MOVQ ldc+32(FP), R8
	SHLQ $2, R8
	MOVQ add+40(FP), R13
	MOVQ ldAdd+48(FP), R15
	SHLQ $2, R15
	MOVQ tmp+72(FP), BX
	MOVQ a+8(FP), SI
	MOVQ c+24(FP), DX
	MOVQ DX, AX
	PREFETCH_C32(amxpf0)

amxstrip:
	MOVQ R8, AX
	SHLQ $5, AX
	ADDQ DX, AX
	PREFETCH_C32(amxpf1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // tilezero tmm3
	MOVQ chunks+0(FP), CX
	MOVQ b+16(FP), DI

amxloop:
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x0e                                           // tileloadd tmm4, [rsi+r9*1]
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x17                                           // tileloadd tmm6, [rdi+r10*1]
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x17; BYTE $0x40                              // tileloadd tmm7, [rdi+r10*1+0x40]
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0xac; BYTE $0x0e; BYTE $0x00; BYTE $0x04; BYTE $0x00; BYTE $0x00 // tileloadd tmm5, [rsi+r9*1+0x400]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4                                                       // tdpbf16ps tmm0, tmm4, tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc                                                       // tdpbf16ps tmm1, tmm4, tmm7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5                                                       // tdpbf16ps tmm2, tmm5, tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd                                                       // tdpbf16ps tmm3, tmm5, tmm7
	ADDQ $2048, SI
	ADDQ $2048, DI
	DECQ CX
	JNZ  amxloop

	MOVBLZX accumulate+56(FP), CX
	TESTL   CX, CX
	JNZ     amxadd
	MOVQ    R8, R12
	SHLQ    $4, R12
	ADDQ    DX, R12
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x02              // tilestored [rdx+r8*1], tmm0
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x02; BYTE $0x40 // tilestored [rdx+r8*1+0x40], tmm1
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x04              // tilestored [r12+r8*1], tmm2
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x04; BYTE $0x40 // tilestored [r12+r8*1+0x40], tmm3
	JMP     amxnext

amxadd:
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x13                                           // tilestored [rbx+r10*1], tmm0
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x13; BYTE $0x40                              // tilestored [rbx+r10*1+0x40], tmm1
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x94; BYTE $0x13; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tilestored [rbx+r10*1+0x800], tmm2
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x9c; BYTE $0x13; BYTE $0x40; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tilestored [rbx+r10*1+0x840], tmm3
	MOVQ BX, AX
	MOVQ R13, R11
	MOVQ DX, R12
	MOVQ $32, CX

amxaddrow:
	VMOVUPS (AX), Z0
	VMOVUPS 64(AX), Z1
	VADDPS  (R11), Z0, Z0
	VADDPS  64(R11), Z1, Z1
	VMOVUPS Z0, (R12)
	VMOVUPS Z1, 64(R12)
	ADDQ    $128, AX
	ADDQ    R15, R11
	ADDQ    R8, R12
	DECQ    CX
	JNZ     amxaddrow
	MOVQ    R15, CX
	SHLQ    $5, CX
	ADDQ    CX, R13

amxnext:
	MOVQ R8, CX
	SHLQ $5, CX
	ADDQ CX, DX
	DECQ strips+64(FP)
	JNZ  amxstrip
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease
	VZEROUPPER
	RET

// func amxPeak(n int)
//
// n iterations of four independent TDPBF16PS on tiles (4·16·16·32
// multiply-adds, 65536 flops): AMX's bfloat16 peak, as peakBF16 is
// VDPBF16PS's. The sources are zero tiles: no memory traffic.
TEXT ·amxPeak(SB), NOSPLIT, $0-8
	LEAQ ·amxTileConfig(SB), CX
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x01 // ldtilecfg [rcx]
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // tilezero tmm3
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xe0 // tilezero tmm4
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xe8 // tilezero tmm5
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xf0 // tilezero tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xf8 // tilezero tmm7
	MOVQ n+0(FP), CX

amxpeakloop:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // tdpbf16ps tmm0, tmm4, tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc // tdpbf16ps tmm1, tmm4, tmm7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5 // tdpbf16ps tmm2, tmm5, tmm6
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd // tdpbf16ps tmm3, tmm5, tmm7
	DECQ CX
	JNZ  amxpeakloop
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease
	RET

// func xgetbv0() uint32
//
// XCR0's low half: the state components the OS saves (bits 17 and 18:
// the tile configuration and the tile data).
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, ret+0(FP)
	RET
