#!/usr/bin/env python3
# Writes bf16_amd64.s (python3 gen_bf16_amd64.py > bf16_amd64.s): the
# AVX512_BF16 kernels, with the instructions Go's assembler lacks
# (VDPBF16PS, VCVTNE2PS2BF16) as BYTEs of their encodings, which it takes
# from GNU as and objdump (binutils), each commented with its mnemonic.
# The template lines "@ <instruction in Intel syntax>" become those BYTEs.
# TestBF16Encodings checks the result in the compiled test binary.
import re, subprocess, sys, tempfile

L = []
def e(s=''): L.append(s)
e('//go:build amd64 && !purego')
e()
e('#include "textflag.h"')
e()
e('''// The AVX512_BF16 kernels of bf16.go. Go's assembler has no mnemonics for
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
// current row at add, R9 = ldAdd.''')
e()
e('// func bf16Avx512(kp int, a unsafe.Pointer, aRow, aStep int, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)')
e('TEXT ·bf16Avx512(SB), NOSPLIT, $0-96')
e('bf16strip:')
e('\tMOVQ kp+0(FP), CX')
e('\tMOVQ a+8(FP), SI')
e('\tMOVQ aRow+16(FP), R9')
e('\tSHLQ $2, R9')
e('\tLEAQ (R9)(R9*2), R10')
e('\tMOVQ aStep+24(FP), R14')
e('\tSHLQ $2, R14')
e('\tMOVQ b+32(FP), DI')
e('\tMOVQ c+40(FP), DX')
e('\tMOVQ ldc+48(FP), R8')
e('\tSHLQ $2, R8')
e('\tLEAQ (SI)(R9*4), R11')
e('\tLEAQ (R11)(R9*4), R12')
for i in range(24): e('\tVPXORD Z%d, Z%d, Z%d' % (i, i, i))
e('\tMOVQ DX, AX')
for r in range(12):
    e('\tPREFETCHT0 (AX)'); e('\tPREFETCHT0 64(AX)')
    if r < 11: e('\tADDQ R8, AX')
e('\tTESTQ CX, CX')
e('\tJZ    bf16sums')
e()
e('bf16loop:')
e('\tVMOVUPS (DI), Z24')
e('\tVMOVUPS 64(DI), Z25')
for r in range(12):
    z = 26 + r % 4
    base = ['SI', 'R11', 'R12'][r // 4]
    e('\tVBROADCASTSS ' + ['(%s)', '(%s)(R9*1)', '(%s)(R9*2)', '(%s)(R10*1)'][r % 4] % base + ', Z%d' % z)
    e('\t@ vdpbf16ps zmm%d, zmm%d, zmm24' % (2*r, z))
    e('\t@ vdpbf16ps zmm%d, zmm%d, zmm25' % (2*r+1, z))
e('\tADDQ R14, SI')
e('\tADDQ R14, R11')
e('\tADDQ R14, R12')
e('\tSUBQ $-128, DI')
e('\tDECQ CX')
e('\tJNZ  bf16loop')
e()
e('bf16sums:')
e('\tMOVBLZX accumulate+72(FP), AX')
e('\tTESTL   AX, AX')
e('\tJZ      bf16write')
e('\tMOVQ add+56(FP), SI')
e('\tMOVQ ldAdd+64(FP), R9')
e('\tSHLQ $2, R9')
for r in range(12):
    e('\tVADDPS (SI), Z%d, Z%d' % (2*r, 2*r))
    e('\tVADDPS 64(SI), Z%d, Z%d' % (2*r+1, 2*r+1))
    e('\tVMOVUPS Z%d, (DX)' % (2*r))
    e('\tVMOVUPS Z%d, 64(DX)' % (2*r+1))
    e('\tADDQ R8, DX')
    e('\tADDQ R9, SI')
e('\tJMP  bf16next')
e()
e('bf16write:')
for r in range(12):
    e('\tVMOVUPS Z%d, (DX)' % (2*r))
    e('\tVMOVUPS Z%d, 64(DX)' % (2*r+1))
    e('\tADDQ R8, DX')
e()
e('bf16next:')
e('\tDECQ strips+88(FP)')
e('\tJZ   bf16done')
e('\tMOVQ aNext+80(FP), AX')
e('\tSHLQ $2, AX')
e('\tADDQ AX, a+8(FP)')
e('\tMOVQ ldc+48(FP), AX')
e('\tIMUL3Q $48, AX, AX')
e('\tADDQ AX, c+40(FP)')
e('\tMOVQ ldAdd+64(FP), AX')
e('\tIMUL3Q $48, AX, AX')
e('\tADDQ AX, add+56(FP)')
e('\tJMP  bf16strip')
e()
e('bf16done:')
e('\tVZEROUPPER')
e('\tRET')
e()
e('''// func bf16Pack(dst unsafe.Pointer, w int, row0, row1 unsafe.Pointer, ld, n, pairs int)
//
// For q < pairs: the n words at dst + q·w·4 get, word i, bfloat16 of
// float32 i of row0 + 2q·ld·4 in the low half and of row1 + 2q·ld·4 in
// the high half (packBF16's pairs of steps). 16 words at a time:
// VCVTNE2PS2BF16 rounds both rows' 16 numbers into one register (row0's
// in the low 16 words), VPERMW interleaves them; n mod 16 words under a
// mask (loads and stores), so that nothing past the rows is read and
// nothing past n written.''')
e('TEXT ·bf16Pack(SB), NOSPLIT, $0-56')
e('\tMOVQ dst+0(FP), DI')
e('\tMOVQ w+8(FP), R8')
e('\tSHLQ $2, R8')
e('\tMOVQ row0+16(FP), SI')
e('\tMOVQ row1+24(FP), DX')
e('\tMOVQ ld+32(FP), R9')
e('\tSHLQ $3, R9              // two rows')
e('\tMOVQ n+40(FP), R10')
e('\tMOVQ pairs+48(FP), R11')
e('\tMOVQ R10, CX')
e('\tANDQ $15, CX')
e('\tMOVL $1, AX')
e('\tSHLL CX, AX')
e('\tDECL AX')
e('\tKMOVW AX, K1              // the last n mod 16 words')
e('\tVMOVDQU16 ·bf16Interleave(SB), Z31')
e('\tTESTQ R11, R11')
e('\tJZ    packdone')
e()
e('packpair:')
e('\tXORQ BX, BX               // byte offset in the rows')
e('\tMOVQ R10, CX')
e()
e('pack16:')
e('\tCMPQ CX, $16')
e('\tJLT  packtail')
e('\tVMOVUPS (SI)(BX*1), Z0')
e('\tVMOVUPS (DX)(BX*1), Z1')
e('\t@ vcvtne2ps2bf16 zmm2, zmm1, zmm0')
e('\tVPERMW Z2, Z31, Z2')
e('\tVMOVDQU32 Z2, (DI)(BX*1)')
e('\tADDQ $64, BX')
e('\tSUBQ $16, CX')
e('\tJMP  pack16')
e()
e('packtail:')
e('\tTESTQ CX, CX')
e('\tJZ    packnext')
e('\tVMOVUPS.Z (SI)(BX*1), K1, Z0')
e('\tVMOVUPS.Z (DX)(BX*1), K1, Z1')
e('\t@ vcvtne2ps2bf16 zmm2, zmm1, zmm0')
e('\tVPERMW Z2, Z31, Z2')
e('\tVMOVDQU32 Z2, K1, (DI)(BX*1)')
e()
e('packnext:')
e('\tADDQ R9, SI')
e('\tADDQ R9, DX')
e('\tADDQ R8, DI')
e('\tDECQ R11')
e('\tJNZ  packpair')
e()
e('packdone:')
e('\tVZEROUPPER')
e('\tRET')
e()
e("""// func bf16Rows(dst unsafe.Pointer, ldDst int, src unsafe.Pointer, ldSrc, n, rows int)
//
// For each of rows rows (ldSrc float32 apart in src, ldDst words apart in
// dst): the row's n numbers rounded to bfloat16, in order, two to a word
// (the last word's high half zero for an odd n). A row of A is packed so
// (packBF16): its pairs of steps are neighbours already, and
// VCVTNE2PS2BF16 rounds 32 numbers into 16 words in order (its second
// source into the low half). The last n mod 32 numbers under masks: K1 and
// K2 for the loads, K3 for the words stored.""")
e('TEXT ·bf16Rows(SB), NOSPLIT, $0-48')
e('\tMOVQ dst+0(FP), DI')
e('\tMOVQ ldDst+8(FP), R8')
e('\tSHLQ $2, R8')
e('\tMOVQ src+16(FP), SI')
e('\tMOVQ ldSrc+24(FP), R9')
e('\tSHLQ $2, R9')
e('\tMOVQ n+32(FP), R10')
e('\tMOVQ rows+40(FP), R11')
e('\tMOVQ R10, CX')
e('\tANDQ $31, CX')
e('\tMOVQ $1, AX')
e('\tSHLQ CX, AX')
e('\tDECQ AX')
e('\tKMOVW AX, K1              // the first 16 numbers of the tail')
e('\tSHRQ $16, AX')
e('\tKMOVW AX, K2              // its next 16')
e('\tINCQ CX')
e('\tSHRQ $1, CX')
e('\tMOVQ $1, AX')
e('\tSHLQ CX, AX')
e('\tDECQ AX')
e('\tKMOVW AX, K3              // its words')
e('\tTESTQ R11, R11')
e('\tJZ    rowsdone')
e()
e('rowsrow:')
e('\tXORQ BX, BX               // byte offset in the source row')
e('\tXORQ DX, DX               // and in the destination row')
e('\tMOVQ R10, CX')
e()
e('rows32:')
e('\tCMPQ CX, $32')
e('\tJLT  rowstail')
e('\tVMOVUPS (SI)(BX*1), Z0')
e('\tVMOVUPS 64(SI)(BX*1), Z1')
e('\t@ vcvtne2ps2bf16 zmm2, zmm1, zmm0')
e('\tVMOVDQU32 Z2, (DI)(DX*1)')
e('\tSUBQ $-128, BX')
e('\tADDQ $64, DX')
e('\tSUBQ $32, CX')
e('\tJMP  rows32')
e()
e('rowstail:')
e('\tTESTQ CX, CX')
e('\tJZ    rowsnext')
e('\tVMOVUPS.Z (SI)(BX*1), K1, Z0')
e('\tVMOVUPS.Z 64(SI)(BX*1), K2, Z1')
e('\t@ vcvtne2ps2bf16 zmm2, zmm1, zmm0')
e('\tVMOVDQU32 Z2, K3, (DI)(DX*1)')
e()
e('rowsnext:')
e('\tADDQ R9, SI')
e('\tADDQ R8, DI')
e('\tDECQ R11')
e('\tJNZ  rowsrow')
e()
e('rowsdone:')
e('\tVZEROUPPER')
e('\tRET')
e()
e('// bf16Interleave: VPERMW\'s word indices that interleave the low 16 words')
e('// of a register with its high 16 (word 2i from word i, 2i+1 from 16+i).')
for i in range(16):
    e('DATA ·bf16Interleave+%d(SB)/2, $%d' % (4*i, i))
    e('DATA ·bf16Interleave+%d(SB)/2, $%d' % (4*i+2, 16+i))
e('GLOBL ·bf16Interleave(SB), RODATA|NOPTR, $64')
e()
e("""// func dot4BF16(chunks int, x, b unsafe.Pointer, ldb int, out unsafe.Pointer)
//
// gemvBF16's four rows at a time: for r < 4 and lane l < 16, out[r·16 + l]
// = the sum, pair after pair from zero, of the pairs q = l, l+16, … <
// 16·chunks of x (packed pairs, 16 words a load) and of row r of b
// (float32, ldb apart, rounded here: VCVTNE2PS2BF16 of its next 32
// numbers), as VDPBF16PS sums a lane. The lanes are reduced in Go.""")
e('TEXT ·dot4BF16(SB), NOSPLIT, $0-40')
e('\tMOVQ chunks+0(FP), CX')
e('\tMOVQ x+8(FP), SI')
e('\tMOVQ b+16(FP), DI')
e('\tMOVQ ldb+24(FP), R8')
e('\tSHLQ $2, R8')
e('\tLEAQ (R8)(R8*2), R9')
e('\tMOVQ out+32(FP), DX')
for i in range(4): e('\tVPXORD Z%d, Z%d, Z%d' % (i, i, i))
e('\tTESTQ CX, CX')
e('\tJZ    dot4bf16done')
e()
e('dot4bf16loop:')
e('\tVMOVDQU32 (SI), Z4')
for r, idx in enumerate(['', '(R8*1)', '(R8*2)', '(R9*1)']):
    t = 5 + 3*r
    e('\tVMOVUPS (DI)%s, Z%d' % (idx, t))
    e('\tVMOVUPS 64(DI)%s, Z%d' % (idx, t+1))
    e('\t@ vcvtne2ps2bf16 zmm%d, zmm%d, zmm%d' % (t+2, t+1, t))
    e('\t@ vdpbf16ps zmm%d, zmm%d, zmm4' % (r, t+2))
e('\tADDQ $64, SI')
e('\tSUBQ $-128, DI')
e('\tDECQ CX')
e('\tJNZ  dot4bf16loop')
e()
e('dot4bf16done:')
e('\tVMOVUPS Z0, (DX)')
e('\tVMOVUPS Z1, 64(DX)')
e('\tVMOVUPS Z2, 128(DX)')
e('\tVMOVUPS Z3, 192(DX)')
e('\tVZEROUPPER')
e('\tRET')
e()
e('''// func peakBF16(n int)
//
// n iterations of 16 independent VDPBF16PS on registers (1024 flops):
// the bfloat16 peak, as peakAVX512 (peak_amd64.s) is float32's.''')
e('TEXT ·peakBF16(SB), NOSPLIT, $0-8')
e('\tMOVQ n+0(FP), CX')
for i in range(18): e('\tVPXORD Z%d, Z%d, Z%d' % (i, i, i))
e()
e('peakbf16loop:')
for i in range(16): e('\t@ vdpbf16ps zmm%d, zmm16, zmm17' % i)
e('\tDECQ CX')
e('\tJNZ  peakbf16loop')
e('\tVZEROUPPER')
e('\tRET')

def encode(lines):
    insns = [l.strip()[2:] for l in lines if l.strip().startswith('@ ')]
    d = tempfile.mkdtemp()
    with open(d + '/t.s', 'w') as f:
        f.write('.intel_syntax noprefix\n' + '\n'.join(insns) + '\n')
    subprocess.check_call(['as', '--64', '-o', d + '/t.o', d + '/t.s'])
    out = subprocess.check_output(['objdump', '-d', '-M', 'intel', d + '/t.o']).decode()
    enc = [m.group(1).split() for m in re.finditer(r'(?m)^\s*[0-9a-f]+:\t((?:[0-9a-f]{2} )+)\s*\t', out)]
    assert len(enc) == len(insns), (len(enc), len(insns))
    res, i = [], 0
    for l in lines:
        if l.strip().startswith('@ '):
            res.append('\t' + '; '.join('BYTE $0x' + b for b in enc[i]) + ' // ' + insns[i])
            i += 1
        else:
            res.append(l)
    return res

sys.stdout.write('\n'.join(encode(L)) + '\n')
