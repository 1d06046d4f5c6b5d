#!/usr/bin/env python3
# Writes bf16_amd64.s (python3 gen_bf16_amd64.py > bf16_amd64.s): the
# AVX512_BF16 kernels, with the instructions Go's assembler lacks
# (VDPBF16PS, VCVTNE2PS2BF16) as BYTEs of their encodings, which it takes
# from GNU as and objdump (binutils), each commented with its mnemonic.
# The template lines "@ <instruction in Intel syntax>" become those BYTEs.
# TestBF16Encodings checks the result in the compiled test binary; .ci/run
# checks that bf16_amd64.s is what this writes.
import re, subprocess, sys, tempfile

L = []
def e(s=''): L.append(s)
e('//go:build amd64 && !purego')
e()
e('#include "textflag.h"')
e()
e('#include "avx.h"')
e()
e('''// The AVX512_BF16 kernels of bf16.go. Go's assembler has no mnemonics for
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
// the epilogue SI = the current row at add, R9 = ldAdd.''')
e()
MR = 4  # rows of the tile
e('// func bf16Avx512(kp int, a unsafe.Pointer, aRow, aStep int, b, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)')
e('TEXT ·bf16Avx512(SB), NOSPLIT, $8-96')
e('\tSTMXCSR mxcsr-8(SP)')
e('\tMOVL mxcsr-8(SP), AX')
e('\tORL $0x8040, AX          // FTZ, DAZ')
e('\tMOVL AX, ftz-4(SP)')
e()
e('bf16strip:')
e('\tLDMXCSR ftz-4(SP)')
e('\tMOVQ kp+0(FP), BX')
e('\tSHRQ $4, BX              // chunks')
e('\tMOVQ a+8(FP), SI')
e('\tMOVQ aRow+16(FP), R9')
e('\tSHLQ $2, R9')
e('\tLEAQ (R9)(R9*2), R10')
e('\tMOVQ aStep+24(FP), R14')
e('\tSHLQ $2, R14')
e('\tLEAQ (SI)(R14*1), R12')
e('\tSHLQ $1, R14')
e('\tMOVQ b+32(FP), DI')
e('\tMOVQ c+40(FP), DX')
e('\tMOVQ ldc+48(FP), R8')
e('\tSHLQ $2, R8')
NV = 2*MR  # output vectors
S = [16 + v for v in range(NV)]  # s registers
for v in range(NV): e('\tVPXORD Z%d, Z%d, Z%d' % (S[v], S[v], S[v]))
e('\tMOVQ DX, CX')
for r in range(MR):
    e('\tPREFETCHT0 (CX)'); e('\tPREFETCHT0 64(CX)')
    if r < MR-1: e('\tADDQ R8, CX')
e('\tTESTQ BX, BX')
e('\tJZ    bf16sums')
e()
e('bf16chunk:')
e('\tZERO_Z16')
for u in range(8):
    for i in range(4): e('\tVMOVUPS %d(DI), Z%d' % (256*u + 64*i, 24 + i))
    addr = ['(%s)', '(%s)(R9*1)', '(%s)(R9*2)', '(%s)(R10*1)']
    for r in range(MR):
        for chain in range(2):
            base = ['SI', 'R12'][chain]
            z = 28 + (2*r + chain) % 4
            acc = NV*chain + 2*r
            e('\tVBROADCASTSS ' + addr[r % 4] % base + ', Z%d' % z)
            e('\t@ vdpbf16ps zmm%d, zmm%d, zmm%d' % (acc, z, 24 + 2*chain))
            e('\t@ vdpbf16ps zmm%d, zmm%d, zmm%d' % (acc + 1, z, 25 + 2*chain))
    e('\tADDQ R14, SI')
    e('\tADDQ R14, R12')
e('\tADDQ $2048, DI')
for v in range(NV): e('\tVADDPS Z%d, Z%d, Z%d' % (NV + v, v, v))
for v in range(NV): e('\tVADDPS Z%d, Z%d, Z%d' % (v, S[v], S[v]))
e('\tDECQ BX')
e('\tJNZ  bf16chunk')
e()
e('bf16sums:')
e('\tLDMXCSR mxcsr-8(SP)')
e('\tMOVBLZX accumulate+72(FP), CX')
e('\tTESTL   CX, CX')
e('\tJZ      bf16write')
e('\tMOVQ add+56(FP), SI')
e('\tMOVQ ldAdd+64(FP), R9')
e('\tSHLQ $2, R9')
for r in range(MR):
    e('\tVADDPS (SI), Z%d, Z%d' % (S[2*r], S[2*r]))
    e('\tVADDPS 64(SI), Z%d, Z%d' % (S[2*r+1], S[2*r+1]))
    e('\tVMOVUPS Z%d, (DX)' % S[2*r])
    e('\tVMOVUPS Z%d, 64(DX)' % S[2*r+1])
    e('\tADDQ R8, DX')
    e('\tADDQ R9, SI')
e('\tJMP  bf16next')
e()
e('bf16write:')
for r in range(MR):
    e('\tVMOVUPS Z%d, (DX)' % S[2*r])
    e('\tVMOVUPS Z%d, 64(DX)' % S[2*r+1])
    e('\tADDQ R8, DX')
e()
e('bf16next:')
e('\tDECQ strips+88(FP)')
e('\tJZ   bf16done')
e('\tMOVQ aNext+80(FP), CX')
e('\tSHLQ $2, CX')
e('\tADDQ CX, a+8(FP)')
e('\tMOVQ ldc+48(FP), CX')
e('\tIMUL3Q $%d, CX, CX' % (4*MR))
e('\tADDQ CX, c+40(FP)')
e('\tMOVQ ldAdd+64(FP), CX')
e('\tIMUL3Q $%d, CX, CX' % (4*MR))
e('\tADDQ CX, add+56(FP)')
e('\tJMP  bf16strip')
e()
e('bf16done:')
e('\tVZEROUPPER')
e('\tRET')
e()
e('''// func bf16Pack(dst unsafe.Pointer, w int, row0, row1 unsafe.Pointer, step, n, pairs int)
//
// For q < pairs: the n words at dst + q·w·4 get, word i, bfloat16 of
// float32 i of row0 + q·step·4 in the low half and of row1 + q·step·4 in
// the high half (packBF16's words: two steps' rows, step floats on to the
// next word's). 16 words at a time: VCVTNE2PS2BF16 rounds both rows' 16
// numbers into one register (row0's in the low 16 words), VPERMW
// interleaves them; n mod 16 words under a mask (loads and stores), so
// that nothing past the rows is read and nothing past n written.''')
e('TEXT ·bf16Pack(SB), NOSPLIT, $0-56')
e('\tMOVQ dst+0(FP), DI')
e('\tMOVQ w+8(FP), R8')
e('\tSHLQ $2, R8')
e('\tMOVQ row0+16(FP), SI')
e('\tMOVQ row1+24(FP), DX')
e('\tMOVQ step+32(FP), R9')
e('\tSHLQ $2, R9')
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
e("""// func bf16Rows(dst unsafe.Pointer, ldDst int, src unsafe.Pointer, ldSrc, n, rows int, chains bool)
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
// loads, K3 for the words stored.""")
e('TEXT ·bf16Rows(SB), NOSPLIT, $0-49')
e('\tMOVQ dst+0(FP), DI')
e('\tMOVQ ldDst+8(FP), R8')
e('\tSHLQ $2, R8')
e('\tMOVQ src+16(FP), SI')
e('\tMOVQ ldSrc+24(FP), R9')
e('\tSHLQ $2, R9')
e('\tMOVQ n+32(FP), R10')
e('\tMOVQ rows+40(FP), R11')
e('\tMOVBLZX chains+48(FP), DX')
e('\tMOVQ DX, CX')
e('\tSHLQ $6, CX')
e('\tLEAQ ·bf16Shuffle(SB), AX')
e('\tVMOVDQU8 (AX)(CX*1), Z31')
e('\tMOVQ R10, CX')
e('\tANDQ $31, CX')
e('\tMOVQ $1, AX')
e('\tSHLQ CX, AX')
e('\tDECQ AX')
e('\tKMOVW AX, K1              // the first 16 numbers of the tail')
e('\tSHRQ $16, AX')
e('\tKMOVW AX, K2              // its next 16')
e('\tTESTQ DX, DX')
e('\tJZ    rowsmask')
e('\tADDQ $3, CX              // chains: whole groups of four steps')
e('\tANDQ $-4, CX')
e()
e('rowsmask:')
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
e('\tVPSHUFB Z31, Z2, Z2')
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
e('\tVPSHUFB Z31, Z2, Z2')
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
e('// bf16Shuffle: VPSHUFB\'s byte indices (per 128-bit lane) for bf16Rows,')
e('// the identity for pairs order, then for chains order: per four steps s0')
e('// … s3 (four 16-bit words, in order), the words s2, s0, s3, s1.')
for lane in range(4):
    for i in range(16): e('DATA ·bf16Shuffle+%d(SB)/1, $%d' % (16*lane + i, i))
chain = []
for g in range(2):
    for w in [2, 0, 3, 1]:
        chain += [8*g + 2*w, 8*g + 2*w + 1]
for lane in range(4):
    for i in range(16): e('DATA ·bf16Shuffle+%d(SB)/1, $%d' % (64 + 16*lane + i, chain[i]))
e('GLOBL ·bf16Shuffle(SB), RODATA|NOPTR, $128')
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
e('\tZERO_Z16')
e('\tVPXORD Z16, Z16, Z16')
e('\tVPXORD Z17, Z17, Z17')
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
