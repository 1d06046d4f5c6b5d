package gemm

import (
	"sync"
	"unsafe"
)

// # bfloat16 products on AMX tiles
//
// On a CPU with AMX-BF16 (Intel Sapphire Rapids and later), where Linux
// grants the tile state, bfloat16 products run TDPBF16PS on tiles: 32×32
// blocks of C, each four 16×16 tiles of float32 sums, from two tiles of
// A (16 rows × 32 steps) and two of B (16 pairs of steps × 16 columns) a
// chunk of 32 steps. TDPBF16PS computes the sum model of bf16.go exactly:
// per chunk, from zero, the even and the odd steps in two chains, then
// their sum added to the block's sum, each add rounded to nearest even
// and denormals flushed (bench/NOTES.md, "AMX TDPBF16PS numerics"). So a
// block of kc steps starts its tiles at zero, takes one instruction a
// chunk, and its sums are added to C (or the bias) by a plain float32
// add, as the other bfloat16 kernels do: the same bits.
//
// The packing is bf16.go's in pairs order, k padded to whole chunks:
// A's block in tiles (per strip of 32 rows and chunk, 32 rows of 16
// words, 2 KiB: packAMXRows); B's panels of 32 columns, per pair 32 words
// (a tile reading 16 pairs of 16 words, 128 bytes apart: 2 KiB a chunk).
// Both are read as runs of 2 KiB in order, which the caches' prefetchers
// follow. A transposed A (dyᵀ·x) is transposed into scratch first, a
// strip of 32 rows at a time. What bounds the products is C: its blocks
// are written (and read, when added to) through memory, far larger than
// the caches, so the kernel prefetches the next block of C while it
// computes one (4096×1536×384 ran at 470 GFLOP/cpu-s without, 920 with:
// docs/performance.md).

// amxKernels is the AMX kernel's block and its blocks of A and B. kc is
// bf16Kernels' (the blocks of k are part of the sums' model); A's block of
// mc·kc halves is 512 KiB, a quarter of Sapphire Rapids' 2 MiB L2 (mcFor
// keeps it within half of any L2), B's panel of kc·32 halves 32 KiB.
var amxKernels = kernels{path: pathAVX512, mr: 32, nr: 32, mc: 512, kc: bf16Kernels.kc, kcRows: bf16Kernels.kc, nc: 4096}

// amxOff, which only the tests set, keeps bfloat16 products off AMX.
var amxOff = false

// amxWhyNot is why bfloat16 products do not use AMX on this machine, or
// "" where they do: asked once (amxPermit requests the tile state from
// the OS, for the whole process).
var amxWhyNot = sync.OnceValue(amxPermit)

// bf16AMX reports whether bfloat16 products run the AMX kernel: the
// assembly kernels are active (bf16Asm) and the CPU and OS let AMX run.
func bf16AMX() bool {
	return bf16Asm() && !amxOff && amxWhyNot() == ""
}

// runAMX is runBF16 on AMX tiles (job.ks is amxKernels): the loops of
// the package comment, each whole 32×32 block computed by amxKernel, the
// blocks of a panel that C's edge cuts computed whole into an edge tile
// and stored by storeEdge. One call of the kernel computes a panel's
// blocks down A's block (up to mc/32 = 16 of them, a few µs), paying for
// LDTILECFG and TILERELEASE once: one block a call measured 2.1 TFLOP/s,
// eight 2.5 (BenchmarkKernelAMX). A call is not preempted (assembly), so
// it is kept from growing to a whole mc×nc block (up to 0.5 ms).
func runAMX(j *job[float32], wk *worker) {
	ks := j.ks
	const mr, nr = 32, 32
	kBlock := min(ks.kc, j.k)
	padMax := bf16BlockWords(kBlock) // words a row of A's block, a pair of B's panel
	mcMax := mcFor(ks, kBlock, 2)
	wk.aBF = growWords(wk.aBF, min(mcMax, roundUp(j.i1-j.i0, mr))*padMax)
	wk.bBF = growWords(wk.bBF, min(ks.nc, roundUp(j.j1-j.j0, nr))*padMax)
	wk.amxT = grow(wk.amxT, 2*mr*nr)
	tile, tmp := wk.amxT[:mr*nr], wk.amxT[mr*nr:]
	if j.transA {
		wk.scratch = grow(wk.scratch, mr*kBlock)
	}
	for jc := j.j0; jc < j.j1; jc += ks.nc {
		nc := min(ks.nc, j.j1-jc)
		for pc := 0; pc < j.k; pc += ks.kc {
			kc := min(ks.kc, j.k-pc)
			pad := bf16BlockWords(kc)
			acc := j.accumulate || pc > 0
			for jr := 0; jr < nc; jr += nr {
				panel := wk.bBF[jr*pad : (jr+nr)*pad]
				packBF16(wk, true, false, panel, pad, nr, j.b, j.ldb, j.transB, pc, kc, jc+jr, min(nr, nc-jr))
			}
			for ic := j.i0; ic < j.i1; ic += mcMax {
				mc := min(mcMax, j.i1-ic)
				packAMXRows(wk, wk.aBF[:roundUp(mc, mr)*pad], pad, j, pc, kc, ic, mc)
				for jr := 0; jr < nc; jr += nr {
					cols := min(nr, nc-jr)
					panel := wk.bBF[jr*pad : (jr+nr)*pad]
					first := 0 // under lower, the strips wholly above the diagonal are skipped
					if j.lower {
						first = max(0, (jc+jr-ic)/mr)
					}
					whole := first
					if cols == nr {
						whole = max(first, mc/mr)
					}
					if whole > first {
						c0 := (ic+first*mr)*j.ldc + jc + jr
						var add []float32
						ldAdd := 0
						switch {
						case acc:
							add, ldAdd = j.c[c0:], j.ldc
						case j.bias != nil:
							add = j.bias[jc+jr:]
						}
						amxKernel(pad/16, whole-first, wk.aBF[first*mr*pad:], panel, j.c[c0:], j.ldc, add, ldAdd, tmp)
					}
					for ir := whole * mr; ir < mc; ir += mr {
						rows := min(mr, mc-ir)
						if j.lower && ic+ir+rows <= jc+jr {
							continue
						}
						c0 := (ic+ir)*j.ldc + jc + jr
						amxKernel(pad/16, 1, wk.aBF[ir*pad:], panel, tile, nr, nil, 0, tmp)
						storeEdge(j.c[c0:], j.ldc, tile, nr, rows, cols, acc, from(j.bias, jc+jr))
					}
				}
			}
		}
	}
}

// packAMXRows packs rows ic … ic+mc−1 of op(A), steps pc … pc+kc−1, into
// dst in tiles, in pairs order: per strip of 32 rows, per chunk of 32
// steps, the strip's 32 rows of 16 words (2 KiB), so that the kernel
// reads A as runs of 2 KiB in order. The words past kc and the rows past
// mc up to a whole strip are zero. bf16Rows packs a whole chunk of a
// whole strip, packBF16Rows the chunks cut by kc or mc (and clears what
// they leave). A transposed A is transposed into wk.scratch a strip at a
// time first (packTrans), so that each row's steps are neighbours.
func packAMXRows(wk *worker, dst []uint32, pad int, j *job[float32], pc, kc, ic, mc int) {
	const mr, words = 32, bf16Chunk / 2
	chunks := pad / words
	for ir := 0; ir < mc; ir += mr {
		rows := min(mr, mc-ir)
		src, ld, p0, c0 := j.a, j.lda, pc, ic+ir
		if j.transA {
			s := wk.scratch[:rows*kc]
			packTrans(s, kc, j.a, j.lda, ic+ir, rows, pc, kc) // s[i·kc + p] = op(A)(ic+ir+i, pc+p)
			src, ld, p0, c0 = s, kc, 0, 0
		}
		for c := range chunks {
			tile := dst[(ir/mr*chunks+c)*mr*words : (ir/mr*chunks+c+1)*mr*words]
			steps := min(bf16Chunk, kc-c*bf16Chunk)
			if rows < mr || steps < bf16Chunk {
				packBF16Rows(true, false, tile, words, mr, src, ld, p0+c*bf16Chunk, steps, c0, rows)
				continue
			}
			_ = src[(c0+mr-1)*ld+p0+(c+1)*bf16Chunk-1] // the last element read
			bf16Rows(unsafe.Pointer(&tile[0]), words, unsafe.Pointer(&src[c0*ld+p0+c*bf16Chunk]), ld, bf16Chunk, mr, false)
		}
	}
}

// amxKernel checks the bounds of strips whole 32×32 blocks, one below the
// other (A in tiles, chunks·512 words a strip, packAMXRows; B's panel of
// chunks·16 pairs of 32 words), and runs the assembly kernel on them, the
// sums added to add (ldAdd apart) when it is not nil; tmp holds a block's
// sums before that add.
func amxKernel(chunks, strips int, a []uint32, b []uint32, c []float32, ldc int, add []float32, ldAdd int, tmp []float32) {
	_ = a[strips*chunks*512-1]
	_ = b[chunks*16*32-1]
	_ = c[(strips*32-1)*ldc+31]
	_ = tmp[32*32-1]
	addPtr := unsafe.Pointer(nil)
	if add != nil {
		_ = add[(strips*32-1)*ldAdd+31]
		addPtr = unsafe.Pointer(&add[0])
	}
	amxBF16(chunks, unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), ldc, addPtr, ldAdd, add != nil, strips, unsafe.Pointer(&tmp[0]))
}
