package gemm

import (
	"math"
	"unsafe"
)

// # bfloat16 products
//
// A float32 product through a Workspace with BF16 set rounds both
// operands to bfloat16 (the top 16 bits of a float32: 8 bits of
// significand) as it packs them and sums their products in float32: the
// mixed precision of model.dtype "bfloat16". It always packs both
// operands (the rounding happens there), whatever their shape, except one
// row times Bᵀ (one token's x·Wᵀ), which gemvBF16 computes as dot
// products, B's rows rounded as they are read, as gemvT does for float32.
//
// Every element of C is summed as Intel AMX's TDPBF16PS sums one element
// of its tile (measured on Sapphire Rapids: bench/NOTES.md, "AMX
// TDPBF16PS numerics"), whichever kernel runs: AMX's order is fixed by
// the hardware, and the VDPBF16PS kernel and the plain-Go twin can follow
// it, so that an AMX kernel, the VDPBF16PS kernel and the twin give the
// same bits. (gemvBF16's one-row products keep an order of their own.)
// Over each block of kc steps (kc a multiple of 32, blocks at multiples
// of kc), the block padded with zero steps to whole chunks of 32 (a tile
// of AMX is 32 steps deep; every kernel does the padding's adds, so that
// even the signs of zero sums agree):
//
//	s = +0
//	for each chunk of 32 steps, in order:
//		even = +0; odd = +0
//		for q in 0..15: even = even + a[2q]·b[2q]; odd = odd + a[2q+1]·b[2q+1]
//		s = s + (even + odd)
//	C = s, or C = add + s (add: C, or the bias)
//
// Each product is exact (8 × 8 significant bits fit in float32's 24);
// each add in a chunk, even + odd and s + (…) is rounded once to nearest
// even, a denormal result flushed to a zero of its sign, a denormal
// operand read as zero: one TDPBF16PS of a 32-step tile adding to C = s.
// The last add, add + s, is a plain float32 add. chunkBF16 is one chunk
// in Go, checked against sums the hardware computed
// (TestChunkGivesAMXBits); kernelBF16Go, the twin, sums the chunks of a
// tile with it.
//
// The packed layout holds two bfloat16 a uint32 word. In pairs order,
// which the twin and AMX's tiles read, word q holds steps 2q (low half)
// and 2q+1 (high half). VDPBF16PS adds to each float32 lane the product
// of the words' high halves and then that of the low halves, each add
// rounded; fed two steps of one chain a word, it sums the chains in the
// model's order. So the VDPBF16PS kernel reads chains order: per four
// steps 4g … 4g+3 two words, the even chain's (4g+2 low, 4g high) and the
// odd chain's (4g+3 low, 4g+1 high) (bf16Steps). A row or column of a
// block of kc steps packs into bf16BlockWords(kc) words, the steps past
// kc zero.
//
// A panel of B is, per word, nr words (one per column, a vector). A
// strip of A has its mr words per word of k broadcast one by one, so
// their order is free: row after row (each row's words in order) where A
// is read along its rows, as a row rounds into its words with no
// transposition (packBF16Rows); where A is transposed, word after word
// across the whole height of A's block, each strip a run of mr words in
// it.

// RoundBF16 returns x rounded to bfloat16, as a float32 (its low 16 bits
// zero), as VCVTNE2PS2BF16 rounds: to nearest, ties to even; a denormal
// becomes a zero of its sign (the instruction treats denormal inputs as
// zero); infinities stay; a NaN stays a NaN (quieted, its sign and top
// payload bits kept); a finite number beyond bfloat16's largest rounds
// to infinity.
func RoundBF16(x float32) float32 {
	return math.Float32frombits(uint32(bf16Bits(x)) << 16)
}

// bf16Bits is RoundBF16's bfloat16, as its 16 bits.
func bf16Bits(x float32) uint32 {
	u := math.Float32bits(x)
	switch {
	case u&0x7f800000 == 0: // zero or denormal
		return u >> 16 & 0x8000
	case u&0x7fffffff > 0x7f800000: // NaN
		return u>>16 | 0x40
	}
	return (u + 0x7fff + u>>16&1) >> 16
}

// BF16Kernel names the kernel that bfloat16 products run here: "amx"
// (TDPBF16PS on AMX tiles: Intel Sapphire Rapids and later, on Linux),
// "avx512bf16" (VDPBF16PS, on CPUs with AVX512_BF16: AMD Zen 4 and later,
// Intel Cooper Lake and Sapphire Rapids and later) or "go", the plain-Go
// twin (same bits, a fraction of the speed), where the CPU lacks it, with
// -tags purego, on other architectures, or when the tests force the Go
// kernels (Use("Go")) or the AVX2 ones. Where the CPU has AMX but it is not
// used (the OS refused the tile state), the name says why, in parentheses
// after "avx512bf16".
func BF16Kernel() string {
	switch {
	case bf16AMX():
		return "amx"
	case bf16Asm() && amxCPU() == "" && !amxOff:
		return "avx512bf16 (AMX unused: " + amxWhyNot() + ")"
	case bf16Asm():
		return "avx512bf16"
	}
	return "go"
}

// bf16Asm reports whether bfloat16 products run the assembly kernel: the
// CPU has it and the AVX-512 kernels are the active family (the tests
// switch families and the twin with Use and withPath).
func bf16Asm() bool {
	return haveBF16 && activePath == pathAVX512 && !forceGo
}

// bf16Chunk is the steps of k the model sums in two chains before adding
// them to the block's sum: 32, the depth of one AMX tile of bfloat16.
const bf16Chunk = 32

// bf16BlockWords is the number of words a row or column of a block of kc
// steps packs into: kc padded with zero steps to whole chunks, two steps
// a word.
func bf16BlockWords(kc int) int { return roundUp(kc, bf16Chunk) / 2 }

// bf16Steps returns the steps of k whose bfloat16 word q holds in its low
// and high half: 2q and 2q+1 in pairs order; in chains order, per four
// steps from 4g = 4⌊q/2⌋, 4g+2 and 4g for the even chain's word (q even),
// 4g+3 and 4g+1 for the odd chain's.
func bf16Steps(chains bool, q int) (lo, hi int) {
	if !chains {
		return 2 * q, 2*q + 1
	}
	g, odd := q/2*4, q%2
	return g + 2 + odd, g + odd
}

// bf16Kernels is the bfloat16 kernel's tile and blocks: 4×32, three zmm
// registers per 16 sums (the even chain, the odd one and the chunks' sum
// s), 24 in all (see bf16_amd64.s). Blocks of kc = 512 steps keep a panel of B (kc/2 × 32 words) at
// 32 KiB, as the float32 kernel's 256 × 32 floats; A's block mc·kc halves
// of 2 bytes stays in L2 (mcFor).
var bf16Kernels = kernels{path: pathAVX512, mr: 4, nr: 32, mc: 252, kc: 512, kcRows: 512, nc: 4096}

// runBF16 is job.run for a bfloat16 product (job.bf16): both operands
// packed, rounded, into wk's word buffers (chains order for the
// VDPBF16PS kernel, pairs order for the twin), then the loops of the
// package comment around the bfloat16 kernel.
func runBF16(j *job[float32], wk *worker) {
	ks := j.ks
	mr, nr := ks.mr, ks.nr
	asm := j.asm
	chains := asm
	kBlock := min(ks.kc, j.k)
	mcMax := mcFor(ks, kBlock, 2)
	kpMax := bf16BlockWords(kBlock)
	wk.aBF = growWords(wk.aBF, min(mcMax, roundUp(j.i1-j.i0, mr))*kpMax)
	wk.bBF = growWords(wk.bBF, min(ks.nc, roundUp(j.j1-j.j0, nr))*kpMax)
	tile := edgeTile(wk.t32[:], mr*nr)
	for jc := j.j0; jc < j.j1; jc += ks.nc {
		nc := min(ks.nc, j.j1-jc)
		for pc := 0; pc < j.k; pc += ks.kc {
			kc := min(ks.kc, j.k-pc)
			kp := bf16BlockWords(kc)
			acc := j.accumulate || pc > 0
			for jr := 0; jr < nc; jr += nr {
				packBF16(wk, asm, chains, wk.bBF[jr*kp:(jr+nr)*kp], kp, nr, j.b, j.ldb, j.transB, pc, kc, jc+jr, min(nr, nc-jr))
			}
			for ic := j.i0; ic < j.i1; ic += mcMax {
				mc := min(mcMax, j.i1-ic)
				// Word (r, q) of the strip at row ir of A's block is
				// aBF[ir/mr·aNext + r·aRow + q·aStep]: strips row after row
				// where A is read along its rows; a transposed A's block
				// word after word across its whole height, so that each
				// word of k packs as one long run (a strip at a time
				// would fill 4 of 16 lanes and read each source line
				// more than once, once per strip that shares it).
				aRow, aStep, aNext := kp, 1, mr*kp
				if j.transA {
					h := roundUp(mc, mr)
					aRow, aStep, aNext = 1, h, mr
					packBF16(wk, asm, chains, wk.aBF[:kp*h], kp, h, j.a, j.lda, false, pc, kc, ic, mc)
				} else {
					for ir := 0; ir < mc; ir += mr {
						packBF16Rows(asm, chains, wk.aBF[ir*kp:(ir+mr)*kp], kp, mr, j.a, j.lda, pc, kc, ic+ir, min(mr, mc-ir))
					}
				}
				for jr := 0; jr < nc; jr += nr {
					cols := min(nr, nc-jr)
					bs := wk.bBF[jr*kp : (jr+nr)*kp]
					addTo := func(c0 int) (add []float32, ldAdd int) {
						switch {
						case acc:
							return j.c[c0:], j.ldc
						case j.bias != nil:
							return j.bias[jc+jr:], 0
						}
						return nil, 0
					}
					first := 0 // under lower, the strips wholly above the diagonal are skipped
					if j.lower {
						first = max(0, (jc+jr-ic)/mr)
					}
					whole := first // the strips of whole tiles, in one call of the assembly
					if asm && cols == nr {
						whole = max(first, mc/mr)
					}
					if whole > first {
						c0 := (ic+first*mr)*j.ldc + jc + jr
						add, ldAdd := addTo(c0)
						microKernelBF16(kp, whole-first, wk.aBF[first*aNext:], aRow, aStep, aNext, bs, j.c[c0:], j.ldc, add, ldAdd)
					}
					for ir := whole * mr; ir < mc; ir += mr {
						rows := min(mr, mc-ir)
						as := wk.aBF[ir/mr*aNext:]
						c0 := (ic+ir)*j.ldc + jc + jr
						if !asm {
							add, ldAdd := addTo(c0)
							kernelBF16Go(mr, nr, rows, cols, kp, as, aRow, aStep, bs, j.c[c0:], j.ldc, add, ldAdd)
							continue
						}
						microKernelBF16(kp, 1, as, aRow, aStep, aNext, bs, tile, nr, nil, 0)
						storeEdge(j.c[c0:], j.ldc, tile, nr, rows, cols, acc, from(j.bias, jc+jr))
					}
				}
			}
		}
	}
}

// microKernelBF16 checks the bounds of strips whole 4×32 tiles, one
// below the other (strip s at a[s·aNext …], word (r, q) at r·aRow +
// q·aStep, in chains order; kp a multiple of 16, whole chunks), and runs
// the assembly kernel on them.
func microKernelBF16(kp, strips int, a []uint32, aRow, aStep, aNext int, b []uint32, c []float32, ldc int, add []float32, ldAdd int) {
	const mr, nr = 4, 32
	if kp%(bf16Chunk/2) != 0 {
		panic("gemm: a bfloat16 block not padded to whole chunks")
	}
	_ = a[(strips-1)*aNext+(mr-1)*aRow+(kp-1)*aStep]
	_ = b[kp*nr-1]
	_ = c[(strips*mr-1)*ldc+nr-1]
	addPtr := unsafe.Pointer(nil)
	if add != nil {
		_ = add[(strips*mr-1)*ldAdd+nr-1]
		addPtr = unsafe.Pointer(&add[0])
	}
	bf16Avx512(kp, unsafe.Pointer(&a[0]), aRow, aStep, unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), ldc, addPtr, ldAdd, add != nil, aNext, strips)
}

// packBF16Rows packs cnt ≤ w rows of kc steps of a row-major float32
// matrix (row r at src[(c0+r)·ld + p0 …]), rounded to bfloat16, row after
// row: dst[r·kp + q] is word q of row r (bf16Steps: pairs or chains
// order), kp ≥ ⌈kc/2⌉ (in chains order, even); the halves past kc and the
// rows past cnt are zero. (A strip of A; the row x of gemvBF16.)
func packBF16Rows(asm, chains bool, dst []uint32, kp, w int, src []float32, ld, p0, kc, c0, cnt int) {
	dst = dst[:w*kp]
	if asm {
		n := (kc + 1) / 2 // the words bf16Rows writes a row
		if chains {
			n = (kc + 3) / 4 * 2
		}
		_ = src[(c0+cnt-1)*ld+p0+kc-1] // the last element read
		_ = dst[(cnt-1)*kp+n-1]        // and written (cnt ≤ w)
		bf16Rows(unsafe.Pointer(&dst[0]), kp, unsafe.Pointer(&src[c0*ld+p0]), ld, kc, cnt, chains)
		for r := range cnt {
			clear(dst[r*kp+n : (r+1)*kp])
		}
	} else {
		for r := 0; r < cnt; r++ {
			row, d := src[(c0+r)*ld+p0:(c0+r)*ld+p0+kc], dst[r*kp:(r+1)*kp]
			for q := range d {
				d[q] = bf16Word(chains, q, func(p int) float32 { return row[p] }, kc)
			}
		}
	}
	clear(dst[cnt*kp:])
}

// bf16Word is word q (bf16Steps) of steps 0 … kc-1 of a row or column,
// entry(p) its step p, rounded; steps past kc are zero.
func bf16Word(chains bool, q int, entry func(p int) float32, kc int) uint32 {
	lo, hi := bf16Steps(chains, q)
	var w uint32
	if lo < kc {
		w = bf16Bits(entry(lo))
	}
	if hi < kc {
		w |= bf16Bits(entry(hi)) << 16
	}
	return w
}

// packBF16 packs cnt ≤ w neighbouring rows or columns of kc steps of a
// row-major float32 matrix, rounded to bfloat16, word after word of k:
// dst[q·w + r] is word q (bf16Steps: pairs or chains order, q < kp) of
// entries (p, r), entry (p, r) being src[(c0+r)·ld + p0 + p] when
// alongRows (a panel of Bᵀ: each of the w is a row of src), else
// src[(p0+p)·ld + c0 + r] (a strip of Aᵀ, a panel of B). Entries past cnt
// or past kc are zero.
//
// With asm, bf16Pack rounds and interleaves two steps' rows a word; along
// rows the entries are first transposed into wk's scratch (packTrans), so
// that each step's w entries are neighbours there. Else packBF16Go.
func packBF16(wk *worker, asm, chains bool, dst []uint32, kp, w int, src []float32, ld int, alongRows bool, p0, kc, c0, cnt int) {
	if !asm {
		packBF16Go(chains, dst, kp, w, src, ld, alongRows, p0, kc, c0, cnt)
		return
	}
	dst = dst[:kp*w]
	n := cnt
	if alongRows {
		wk.scratch = grow(wk.scratch, kc*w)
		packTrans(wk.scratch, w, src, ld, p0, kc, c0, cnt)
		src, ld, p0, c0, n = wk.scratch, w, 0, 0, w
	}
	_ = src[(p0+kc-1)*ld+c0+n-1] // the last element read
	_ = dst[(kp-1)*w+n-1]        // and written (cnt ≤ w)
	zero := zeroStep[:n]         // the steps past kc (bf16Pack reads n floats of each)
	row := func(p int) unsafe.Pointer {
		if p >= kc {
			return unsafe.Pointer(&zero[0])
		}
		return unsafe.Pointer(&src[(p0+p)*ld+c0])
	}
	// The words whose steps all lie in k in runs of one stride of the
	// source, then each word holding a step past kc alone.
	done := 0
	if !chains {
		if kc/2 > 0 {
			bf16Pack(unsafe.Pointer(&dst[0]), w, row(0), row(1), 2*ld, n, kc/2)
		}
		done = kc / 2
	} else if g := kc / 4; g > 0 {
		bf16Pack(unsafe.Pointer(&dst[0]), 2*w, row(2), row(0), 4*ld, n, g)
		bf16Pack(unsafe.Pointer(&dst[w]), 2*w, row(3), row(1), 4*ld, n, g)
		done = 2 * g
	}
	for q := done; q < kp; q++ {
		lo, hi := bf16Steps(chains, q)
		if lo >= kc && hi >= kc {
			clear(dst[q*w : kp*w])
			break
		}
		bf16Pack(unsafe.Pointer(&dst[q*w]), w, row(lo), row(hi), 0, n, 1)
	}
	if n < w {
		for q := 0; q < kp; q++ {
			clear(dst[q*w+n : q*w+w])
		}
	}
}

// zeroStep is the zero step that pads k. It is as long as the widest
// block packBF16 packs, a transposed A's mc rows (bf16Kernels.mc or
// mcFor's smaller blocks) or a panel's nr: bf16Pack reads as many floats
// of it as the block has rows. (A slice, so that the guard-page tests can
// move it against an inaccessible page.)
var zeroStep = make([]float32, max(bf16Kernels.mc, bf16Kernels.nr))

// packBF16Go is packBF16 in plain Go (RoundBF16's rounding).
func packBF16Go(chains bool, dst []uint32, kp, w int, src []float32, ld int, alongRows bool, p0, kc, c0, cnt int) {
	dst = dst[:kp*w]
	for r := 0; r < cnt; r++ {
		entry := func(p int) float32 { return src[(p0+p)*ld+c0+r] }
		if alongRows {
			entry = func(p int) float32 { return src[(c0+r)*ld+p0+p] }
		}
		for q := 0; q < kp; q++ {
			dst[q*w+r] = bf16Word(chains, q, entry, kc)
		}
	}
	for q := 0; q < kp; q++ {
		clear(dst[q*w+cnt : q*w+w])
	}
}

// kernelBF16Go is the bfloat16 micro-kernel in plain Go, the twin of the
// assembly kernels: the rows×cols corner of the tile from words in pairs
// order (a strip with word (r, q) at a[r·aRow + q·aStep], a panel of nr
// words per word of k; kp a multiple of 16, whole chunks), c[r·ldc + j] =
// the model's sum s (chunkBF16, chunk after chunk from +0), or
// add[r·ldAdd + j] + s when add is not nil.
func kernelBF16Go(mr, nr, rows, cols, kp int, a []uint32, aRow, aStep int, b []uint32, c []float32, ldc int, add []float32, ldAdd int) {
	const words = bf16Chunk / 2
	if kp%words != 0 {
		panic("gemm: a bfloat16 block not padded to whole chunks")
	}
	_ = a[(mr-1)*aRow+(kp-1)*aStep]
	_ = b[kp*nr-1]
	for r := 0; r < rows; r++ {
		for j := 0; j < cols; j++ {
			var s float32
			for q := 0; q < kp; q += words {
				s = chunkBF16(s, a[r*aRow+q*aStep:], aStep, b[q*nr+j:], nr, words)
			}
			if add != nil {
				s = add[r*ldAdd+j] + s
			}
			c[r*ldc+j] = s
		}
	}
}

// chunkBF16 is one chunk of the model (the package comment): s + (even +
// odd), even and odd the chains of the products of the words a[q·aStep]
// and b[q·bStep], q < words (16 for a chunk of 32 steps; the golden test
// passes shorter ones, as the hardware summed them), in pairs order.
// Each chain's add is done in float64 and rounded to float32: the product
// is exact there, and a float64 sum of two numbers of at most 24
// significant bits rounds to float32 as one correctly rounded add would.
func chunkBF16(s float32, a []uint32, aStep int, b []uint32, bStep int, words int) float32 {
	_ = a[(words-1)*aStep]
	_ = b[(words-1)*bStep]
	var even, odd float32
	for q := range words {
		x, y := a[q*aStep], b[q*bStep]
		even = flushDenormal(float32(float64(even) + bf16Operand(x<<16)*bf16Operand(y<<16)))
		odd = flushDenormal(float32(float64(odd) + bf16Operand(x&0xffff0000)*bf16Operand(y&0xffff0000)))
	}
	return flushDenormal(flushDenormal(s) + flushDenormal(even+odd))
}

// bf16Operand is the bfloat16 in the high half of u (the low half zero),
// a denormal read as a zero of its sign.
func bf16Operand(u uint32) float64 {
	return float64(flushDenormal(math.Float32frombits(u)))
}

// dpbf16 is one float32 lane of VDPBF16PS (gemvBF16's lanes): s plus the
// products of the high halves, then of the low halves, of two words of
// packed bfloat16 pairs, each add rounded once (as in chunkBF16) and a
// denormal result flushed to zero.
func dpbf16(s float32, a, b uint32) float32 {
	aHi, bHi := math.Float32frombits(a&0xffff0000), math.Float32frombits(b&0xffff0000)
	aLo, bLo := math.Float32frombits(a<<16), math.Float32frombits(b<<16)
	s = flushDenormal(float32(float64(s) + float64(aHi)*float64(bHi)))
	return flushDenormal(float32(float64(s) + float64(aLo)*float64(bLo)))
}

// flushDenormal returns a zero of x's sign for a denormal x, else x.
func flushDenormal(x float32) float32 {
	if u := math.Float32bits(x); u&0x7f800000 == 0 {
		return math.Float32frombits(u & 0x80000000)
	}
	return x
}

// gemvBF16 is gemvT for a bfloat16 product: c[j] (+)= the sum over the
// pairs of steps of x (xw: rounded, in pairs) times row j of B (rounded
// as it is read). The sum is taken as 16 lanes of VDPBF16PS sum a dot
// product: pair q goes to lane q mod 16 (dpbf16, in order of q), then the
// lanes are added as a tree (sum16). dot4BF16 computes the lanes of four
// rows at a time over the whole chunks of 32 steps; the rest of each lane
// sum, rows not in a group of four, and everything in the Go twin (asm
// false) are summed here in the same order: the same bits either way.
func gemvBF16(asm bool, n, k int, xw []uint32, b []float32, ldb int, c []float32, accumulate bool) {
	kp := (k + 1) / 2
	xw = xw[:kp]
	chunks := 0
	if asm {
		chunks = k / 32
	}
	var lanes [64]float32
	for j := 0; j < n; j += 4 {
		rows := min(4, n-j)
		q0 := 0
		if rows == 4 && chunks > 0 {
			_ = b[(j+3)*ldb+chunks*32-1] // the last elements dot4BF16 reads
			_ = xw[chunks*16-1]
			dot4BF16(chunks, unsafe.Pointer(&xw[0]), unsafe.Pointer(&b[j*ldb]), ldb, unsafe.Pointer(&lanes[0]))
			q0 = chunks * 16
		} else {
			lanes = [64]float32{}
		}
		for r := 0; r < rows; r++ {
			l := (*[16]float32)(lanes[r*16 : r*16+16])
			row := b[(j+r)*ldb : (j+r)*ldb+k]
			for q := q0; q < kp; q++ {
				w := bf16Bits(row[2*q])
				if 2*q+1 < k {
					w |= bf16Bits(row[2*q+1]) << 16
				}
				l[q%16] = dpbf16(l[q%16], xw[q], w)
			}
			s := sum16(l)
			if accumulate {
				c[j+r] += s
			} else {
				c[j+r] = s
			}
		}
	}
}

// sum16 adds 16 lanes as a tree: halves, then quarters, eighths and the
// last two, for the assembly's lanes and the twin's alike.
func sum16(l *[16]float32) float32 {
	var t [8]float32
	for i := range 8 {
		t[i] = l[i] + l[i+8]
	}
	for i := range 4 {
		t[i] += t[i+4]
	}
	for i := range 2 {
		t[i] += t[i+2]
	}
	return t[0] + t[1]
}

func growWords(s []uint32, n int) []uint32 {
	if guardBuffer != nil {
		return unsafe.Slice((*uint32)(guardBuffer(n, 4)), n)
	}
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}
