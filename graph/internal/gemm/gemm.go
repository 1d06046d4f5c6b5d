// Package gemm multiplies row-major matrices for the fused graph ops:
// C = op(A)·op(B) or C += op(A)·op(B), with op(X) = X or Xᵀ, each matrix
// read in place through a row stride (one attention head is a few columns
// of a wider matrix).
//
// # How a product is computed
//
// The work is organised as in GotoBLAS and BLIS (Goto & van de Geijn,
// "Anatomy of high-performance matrix multiplication", 2008; Van Zee &
// van de Geijn, "BLIS", 2015). At the bottom is the micro-kernel: it
// computes one mr×nr tile of C as a sum of k outer products, a column of
// mr entries of A times a row of nr entries of B, keeping the whole tile
// in vector registers, so each step loads mr+nr numbers and does mr·nr
// multiply-adds. The AVX-512 kernels hold 16×16 float32 (16×8 float64) in
// 16 of the 32 zmm registers; the AVX2 kernels 6×16 float32 (6×8 float64)
// in 12 of the 16 ymm registers, the classic shape for that register
// file (two B registers and one broadcast left over).
//
// The kernel reads its operands from packed copies, laid out in the order
// it consumes them: a strip of A as mr numbers per step of k, a panel of B
// as nr numbers per step, contiguous, zero-padded at the matrix edges.
// Packing turns every transpose/stride combination into one layout and
// keeps the data the kernel streams in as few cache lines and pages as
// possible. It costs about as much per element as the kernel spends on an
// element used 16 times, so it pays only for operands read many times:
// the kernel also takes strides (a[r·aRow + p·aStep], b[p·bStep + j]) and
// reads an operand in place when its packed copy would be read at most
// four times (small products, one attention head's w·v); see job.run.
//
// Around the kernel, three loops block the matrices for the caches
// (sizes in kernelTable, kernel.go, per kernel):
//
//	for each nc-wide column block of C (B block kc×nc lives in L3)
//	  for each kc-deep slice of k: pack B's kc×nc block
//	    for each mc-high row block: pack A's mc×kc block (lives in L2)
//	      for each nr-wide panel of the B block (kc×nr lives in L1)
//	        for each mr-high strip of the A block: the micro-kernel
//
// The innermost loop runs inside the assembly: one call computes the
// panel's tiles for every strip of the A block (a call from Go costs
// ≈ 40 ns, a few % of a tile). kc is chosen so that one B panel (kc·nr
// numbers) fills about half of L1 while the A strip streams past it, or
// deeper (kcRows) where A is read along its rows, so that C's tiles are
// read and written fewer times; mc so that A's block fills at most half
// of the L2 the CPU reports (mcFor); nc is large, as B's block is reused from L3. A product
// smaller than one block is a single pass over each loop: no fixed cost
// beyond a few function calls. MulLower skips the tiles above C's
// diagonal (causal attention's scores).
//
// One row times Bᵀ (float32 x·Wᵀ or q·kᵀ for a single token) is a matrix-
// vector product, each element of B used once: gemvT computes it as dot
// products over B's rows in place instead of transposing B into panels.
//
// # Order of the sums and threads
//
// Element (i, j) of C is the sum over p in blocks of kc (or kcRows) taken
// in order, each block summed in order by the micro-kernel from zero and
// then added to C. That order depends on the shape, whether A is
// transposed and the kernel only: never on the block of C an element
// falls in nor on the number of threads, so a product is bit-identical
// for every Workspace.Threads. The assembly rounds each multiply-add once
// (FMA); the Go kernel does too where the compiler fuses x*y + s (arm64),
// giving the assembly's bits, and rounds the product first on amd64: the
// tests bound that difference with stated tolerances and pin the bits of
// both (TestTwinBits).
//
// # Kernels
//
// bestPath is chosen at run time on amd64 (golang.org/x/sys/cpu): the
// AVX-512 kernels where the CPU has AVX-512F, AVX2+FMA where it has
// those, else the plain-Go micro-kernel (kernelGo: register blocks of 3×2
// on amd64, 4×4 elsewhere), which is also what `-tags purego` and the
// architectures without assembly run. arm64 runs the NEON kernels (8×12
// float32, 8×6 float64; kernel_arm64.s), which every arm64 core has. Products of at most 8 rows use the 6-row
// AVX2 tile even on AVX-512 machines (less padding). Every assembly
// kernel has a Go twin of the same tile shape that the tests compare it
// with (TestMul), and PeakGFLOPS measures the core's peak for the
// benchmarks (bench_test.go).
//
// A Workspace with BF16 set makes its float32 products bfloat16 products
// (bf16.go): operands rounded to bfloat16 as they are packed, float32
// sums, on the AVX512_BF16 kernel (VDPBF16PS) where the CPU has it, else
// on its plain-Go twin, which gives the same bits.
package gemm

import (
	"runtime"
	"unsafe"

	"github.com/gptg/gptg/graph/internal/pool"
)

// Float is the element type of a product.
type Float interface{ float32 | float64 }

// Workspace holds the packing buffers of a product, so that a product
// allocates nothing once the buffers have grown to the largest size asked
// of them.
//
// Threads is the number of goroutines one product may use: 0 or 1 runs it
// in the calling goroutine only; n > 1 splits C's rows (or columns) into
// up to n bands, one per goroutine, each with its own packing buffers kept
// here. Products too small to gain from it run in the calling goroutine.
//
// A Workspace must not be used by two goroutines at once: callers that
// run several products concurrently use one Workspace each.
type Workspace struct {
	Threads int
	// BF16 makes the float32 products through this Workspace bfloat16
	// products: both operands rounded to bfloat16 (RoundBF16: to nearest,
	// ties to even) as they are packed, their products summed in float32
	// (see bf16.go; BF16Kernel names the kernel). Float64 products ignore it.
	BF16 bool
	// Pool runs the bands of a split product. Nil: the Workspace starts
	// its own pool of Threads workers at its first split product (and
	// stops it when the Workspace is garbage collected).
	Pool *pool.Pool

	workers      []*worker // workers[0] runs in the calling goroutine
	run32, run64 func(part int)
	gemv         gemvJob // the split one-row product under way
	runGemv      func(part int)
	gemvX        []uint32  // gemvBF16's x in bfloat16 pairs
	sum32        []float32 // SumRows's block sums
	sum64        []float64
}

// worker is one goroutine's share of a product: its packing buffers, an
// edge tile, and the job it runs.
type worker struct {
	a32, b32 []float32
	a64, b64 []float64
	t32      [maxTile]float32
	t64      [maxTile]float64
	aBF, bBF []uint32  // packed bfloat16 pairs (runBF16)
	scratch  []float32 // a strip or panel transposed before it is packed (packBF16)
	amxT     []float32 // runAMX's edge tile and a block's sums before they are added
	job32    job[float32]
	job64    job[float64]
	// crowdsL1's last answer, for rows of crowdRows numbers crowdStride
	// bytes apart.
	crowdStride, crowdRows int
	crowds                 bool
}

func (w *Workspace) worker(i int) *worker {
	for len(w.workers) <= i {
		w.workers = append(w.workers, &worker{})
	}
	return w.workers[i]
}

// pool returns the pool that runs split products, starting the
// Workspace's own on first use; run32/run64 are bound once so that a
// split product allocates nothing.
func (w *Workspace) pool() *pool.Pool {
	if w.Pool == nil {
		p := pool.New(w.Threads)
		runtime.AddCleanup(w, func(p *pool.Pool) { p.Close() }, p)
		w.Pool = p
	}
	if w.run32 == nil {
		w.run32 = func(t int) { wk := w.workers[t]; wk.job32.run(wk) }
		w.run64 = func(t int) { wk := w.workers[t]; wk.job64.run(wk) }
	}
	return w.Pool
}

// job is the product restricted to rows i0…i1−1 and columns j0…j1−1 of C.
type job[F Float] struct {
	ks             *kernels
	asm            bool
	transA, transB bool
	i0, i1, j0, j1 int
	k              int
	a              []F
	lda            int
	b              []F
	ldb            int
	bias           []F  // added to every row of C in the first k block (MulBias), or nil
	lower          bool // only the tiles that reach the diagonal or below it (MulLower)
	c              []F
	ldc            int
	accumulate     bool
	bf16           bool // a float32 product on bfloat16 operands (runBF16)
}

// parallelMinFlops is the smallest product (2·m·n·k) split over threads:
// below it, starting and waking goroutines (a few µs) costs more than the
// second core saves. Measured with BenchmarkThreads.
var parallelMinFlops = 2.0 * (1 << 20)

// parallelMinGemv is parallelMinFlops for a product of one row (gemvSplit),
// which packs nothing that each thread would repeat: split from a quarter
// of the size. Measured on GPT-2 124M's cached graph (768 × 768
// projections, 2.4 MFLOP of each 2.6 MB matrix): 60 tokens in 1.40 s on
// two threads at parallelMinFlops, 1.15 s at this, 1.71 s on one.
var parallelMinGemv = parallelMinFlops / 4

// Mul computes C = op(A)·op(B), or C += op(A)·op(B) when accumulate is set,
// where op(A) is m×k and op(B) is k×n, all row-major: element (i, p) of
// op(A) is a[i*lda+p], or a[p*lda+i] when transA is set (A stored k×m), and
// likewise for B; element (i, j) of C is c[i*ldc+j]. Nothing outside the
// m×n elements of C is written.
func Mul[F Float](w *Workspace, transA, transB bool, m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int, accumulate bool) {
	mul(w, transA, transB, m, n, k, a, lda, b, ldb, nil, c, ldc, accumulate, false)
}

// MulBias computes C = op(A)·op(B) + bias, bias (n numbers) added to
// every row: the numbers of copying bias into each row of C and calling
// Mul with accumulate, without the pass over C that the copy is (x·Wᵀ + b
// of a linear layer; the kernel adds the bias where it would add C).
func MulBias[F Float](w *Workspace, transA, transB bool, m, n, k int, a []F, lda int, b []F, ldb int, bias []F, c []F, ldc int) {
	mul(w, transA, transB, m, n, k, a, lda, b, ldb, bias[:n], c, ldc, false, false)
}

// MulLower computes C = op(A)·op(B) as Mul does, but only where C has
// entries on or below its diagonal (j ≤ i): tiles entirely above it are
// neither computed nor written, and the entries above the diagonal inside
// the tiles that cross it are computed like the others. Causal attention's
// scores q·kᵀ take it: one product per head instead of one per block of
// rows, so kᵀ is packed once. Every computed entry has Mul's bits.
func MulLower[F Float](w *Workspace, transA, transB bool, m, n, k int, a []F, lda int, b []F, ldb int, c []F, ldc int) {
	mul(w, transA, transB, m, n, k, a, lda, b, ldb, nil, c, ldc, false, true)
}

// mul is Mul, MulBias and MulLower: the empty and one-row products first
// (the bias copied, a gemv), then one job on one worker or split across
// workers in bands of whole tiles. It stays one function because each
// case is a fast path that returns, tried in the order the cheaper ones
// need, on the path of every product.
func mul[F Float](w *Workspace, transA, transB bool, m, n, k int, a []F, lda int, b []F, ldb int, bias []F, c []F, ldc int, accumulate, lower bool) {
	if m <= 0 || n <= 0 {
		return
	}
	ks, asm := kernelsFor[F](m)
	bf16 := w.BF16 && unsafe.Sizeof(F(0)) == 4
	if bf16 {
		ks, asm = &bf16Kernels, bf16Asm()
		if bf16AMX() {
			ks = &amxKernels
		}
	}
	if bias != nil && (k <= 0 || m == 1) {
		// Nothing to fuse the bias with (one row goes to gemvT): copy it.
		for i := 0; i < m; i++ {
			copy(c[i*ldc:i*ldc+n], bias)
		}
		bias, accumulate = nil, true
	}
	if k <= 0 {
		if !accumulate {
			for i := 0; i < m; i++ {
				clear(c[i*ldc : i*ldc+n])
			}
		}
		return
	}
	if m == 1 && !transA && transB && (asm || bf16) && unsafe.Sizeof(F(0)) == 4 {
		x, bt, ct := any(a).([]float32), any(b).([]float32), any(c).([]float32)
		var xw []uint32 // x rounded, in pairs (gemvBF16)
		if bf16 {
			w.gemvX = growWords(w.gemvX, (k+1)/2)
			xw = w.gemvX
			packBF16Rows(asm, false, xw, (k+1)/2, 1, x, k, 0, k, 0, 1)
		}
		if w.Threads > 1 && n >= 8 && 2*float64(n)*float64(k) >= parallelMinGemv {
			w.gemvSplit(n, k, x, xw, asm, bt, ldb, ct, accumulate)
			return
		}
		gemvRows(n, k, x, xw, asm, bt, ldb, ct, accumulate)
		return
	}
	wk0 := w.worker(0)
	j := jobOf[F](wk0)
	*j = job[F]{ks: ks, asm: asm, transA: transA, transB: transB, i1: m, j1: n, k: k,
		a: a, lda: lda, b: b, ldb: ldb, bias: bias, lower: lower, c: c, ldc: ldc, accumulate: accumulate, bf16: bf16}
	threads := w.Threads
	if threads <= 1 || 2*float64(m)*float64(n)*float64(k) < parallelMinFlops {
		j.run(wk0)
		*j = job[F]{} // drop the references to the caller's matrices
		return
	}
	// Split the larger dimension of C into bands of whole tiles: each
	// goroutine packs all of the other operand, so that one is the smaller
	// to repeat.
	byRows := m >= n
	units := (m + ks.mr - 1) / ks.mr
	unit, extent := ks.mr, m
	if !byRows {
		units = (n + ks.nr - 1) / ks.nr
		unit, extent = ks.nr, n
	}
	p := w.pool()
	parts := min(threads, units, p.Size())
	w.worker(parts - 1)
	for t := range parts {
		lo, hi := t*units/parts*unit, min((t+1)*units/parts*unit, extent)
		part := *j
		if byRows {
			part.i0, part.i1 = lo, hi
		} else {
			part.j0, part.j1 = lo, hi
		}
		*jobOf[F](w.workers[t]) = part
	}
	if unsafe.Sizeof(F(0)) == 4 {
		p.Run(parts, w.run32)
	} else {
		p.Run(parts, w.run64)
	}
	for _, wk := range w.workers[:parts] {
		*jobOf[F](wk) = job[F]{} // drop the references to the caller's matrices
	}
}

// run computes the job's block of C with the buffers of wk: the loops of
// the package comment. It stays one function because it is that loop
// nest, tuned as a whole: the blocks' sizes, the packing choices and the
// tiles' closures share its state, and helpers in its inner loops would
// pass it through calls at every tile.
func (j *job[F]) run(wk *worker) {
	if j.bf16 {
		if j.ks == &amxKernels {
			runAMX(any(j).(*job[float32]), wk)
		} else {
			runBF16(any(j).(*job[float32]), wk)
		}
		return
	}
	ks := j.ks
	mr, nr := ks.mr, ks.nr
	ap, bp, tile := buffers[F](wk)
	tile = edgeTile(tile, mr*nr)
	// The depth of the k blocks: C's tiles are read and written once per
	// block, so deeper blocks cost less while A's strips stream well. A
	// read along its rows (x·Wᵀ, dy·W) streams 16 rows in order and takes
	// blocks of kcRows; a transposed A (dyᵀ·x) takes a new row of the
	// array — a new page — at every step, and blocks deeper than kc miss
	// the TLB (bench/NOTES.md G12). B's packed block keeps to nc·kc numbers.
	kcMax, ncMax := ks.kc, ks.nc
	if !j.transA {
		kcMax = ks.kcRows
		ncMax = max(nr, ks.nc*ks.kc/kcMax/nr*nr)
	}
	size := int(unsafe.Sizeof(F(0)))
	kBlock := min(kcMax, j.k)
	mcMax := mcFor(ks, kBlock, size)
	mBlock := min(mcMax, roundUp(j.i1-j.i0, mr))
	nBlock := min(ncMax, roundUp(j.j1-j.j0, nr))
	*ap = grow(*ap, mBlock*kBlock)
	*bp = grow(*bp, nBlock*kBlock)
	// Packing an operand pays when the kernel reads the packed copy many
	// times. The kernel broadcasts A one element at a time, so it reads A
	// where it lies (its whole strips; the edge strip is still packed,
	// zero-padded) unless the rows of a strip crowd into a few sets of the
	// L1 and would evict each other (crowdsL1). Packing A (a transposition
	// for x·Wᵀ and dy·W) cost more than the strided reads: at 768 rows ×
	// 128 the products ran at 80–92 GFLOP/s with A packed, 100–110 in place
	// (Zen 4), and the deep products at C 384 6–9 % faster in place on Zen
	// 5 (bench/NOTES.md G5, K2). B's panels, read as whole vectors once per
	// strip of A, are read in place (when not transposed) if there are at
	// most four strips: for small products packing would cost as much as
	// the arithmetic.
	inPlaceA := j.transA
	if !inPlaceA {
		if wk.crowdStride != j.lda*size || wk.crowdRows != mr {
			wk.crowdStride, wk.crowdRows, wk.crowds = j.lda*size, mr, crowdsL1(mr, j.lda*size)
		}
		inPlaceA = !wk.crowds
	}
	inPlaceB := !j.transB && roundUp(j.i1-j.i0, mr) <= 4*mr
	for jc := j.j0; jc < j.j1; jc += ncMax {
		nc := min(ncMax, j.j1-jc)
		for pc := 0; pc < j.k; pc += kcMax {
			kc := min(kcMax, j.k-pc)
			acc := j.accumulate || pc > 0
			// Panel q of B's block: bp[q·nr·kc …], nr numbers per step of p.
			for jr := 0; jr < nc; jr += nr {
				cols := min(nr, nc-jr)
				if inPlaceB && cols == nr {
					continue
				}
				dst := (*bp)[jr*kc : (jr+nr)*kc]
				if j.transB {
					packTrans(dst, nr, j.b, j.ldb, pc, kc, jc+jr, cols)
				} else {
					packCopy(dst, nr, j.b, j.ldb, pc, kc, jc+jr, cols)
				}
			}
			for ic := j.i0; ic < j.i1; ic += mcMax {
				mc := min(mcMax, j.i1-ic)
				// Strip s of A's block: ap[s·mr·kc …], mr numbers per step.
				for ir := 0; ir < mc; ir += mr {
					rows := min(mr, mc-ir)
					if inPlaceA && rows == mr {
						continue
					}
					dst := (*ap)[ir*kc : (ir+mr)*kc]
					if j.transA {
						packCopy(dst, mr, j.a, j.lda, pc, kc, ic+ir, rows)
					} else {
						packTrans(dst, mr, j.a, j.lda, pc, kc, ic+ir, rows)
					}
				}
				// stripA: where the strip of A's block at row ir lies
				// (packed, or in place) and how far the next strip is.
				stripA := func(ir, rows int) (as []F, aRow, aStep, aNext int) {
					switch {
					case !inPlaceA || rows < mr:
						return (*ap)[ir*kc:], 1, mr, mr * kc
					case j.transA:
						return j.a[pc*j.lda+ic+ir:], 1, j.lda, mr
					default:
						return j.a[(ic+ir)*j.lda+pc:], j.lda, 1, mr * j.lda
					}
				}
				for jr := 0; jr < nc; jr += nr {
					cols := min(nr, nc-jr)
					bs, bStep := (*bp)[jr*kc:(jr+nr)*kc], nr
					if inPlaceB && cols == nr {
						bs, bStep = j.b[pc*j.ldb+jc+jr:], j.ldb
					}
					// The whole tiles of this panel, in one call: what the
					// kernel adds its sums to is nothing, C, or the bias.
					whole := 0
					if cols == nr {
						whole = mc / mr
					}
					// Under lower, the strips whose last row lies above the
					// panel's first column are skipped.
					first := 0
					if j.lower {
						first = max(0, (jc+jr-ic)/mr)
					}
					// addTo returns what the kernel adds its sums to for
					// the tile at c0: nothing, C, or the bias.
					addTo := func(c0 int) (add []F, ldAdd int) {
						switch {
						case acc:
							return j.c[c0:], j.ldc
						case j.bias != nil:
							return j.bias[jc+jr:], 0
						}
						return nil, 0
					}
					if whole > first {
						as, aRow, aStep, aNext := stripA(first*mr, mr)
						c0 := (ic+first*mr)*j.ldc + jc + jr
						add, ldAdd := addTo(c0)
						microKernel(ks, j.asm, kc, whole-first, as, aRow, aStep, aNext, bs, bStep, j.c[c0:], j.ldc, add, ldAdd)
					}
					// The edge tiles (short of rows or of columns): the
					// assembly computes each whole aside and what exists is
					// kept; the Go kernel takes any shape, so it computes
					// only what exists, in place (the same sums: a product
					// of one row does not compute mr−1 rows of padding).
					for ir := whole * mr; ir < mc; ir += mr {
						rows := min(mr, mc-ir)
						if j.lower && ic+ir+rows <= jc+jr {
							continue
						}
						as, aRow, aStep, _ := stripA(ir, rows)
						c0 := (ic+ir)*j.ldc + jc + jr
						if !j.asm {
							add, ldAdd := addTo(c0)
							kernelGo(rows, cols, kc, as, aRow, aStep, bs, bStep, j.c[c0:], j.ldc, add, ldAdd)
							continue
						}
						microKernel(ks, j.asm, kc, 1, as, aRow, aStep, 0, bs, bStep, tile, nr, nil, 0)
						storeEdge(j.c[c0:], j.ldc, tile, nr, rows, cols, acc, from(j.bias, jc+jr))
					}
				}
			}
		}
	}
}

// storeEdge stores the rows×cols corner of an edge tile computed whole
// (tile, row stride nr) into C: added to C when acc is set, else added to
// bias (when not nil), else copied.
func storeEdge[F Float](c []F, ldc int, tile []F, nr, rows, cols int, acc bool, bias []F) {
	for r := 0; r < rows; r++ {
		dst := c[r*ldc : r*ldc+cols]
		src := tile[r*nr : r*nr+cols]
		switch {
		case acc:
			for x, v := range src {
				dst[x] += v
			}
		case bias != nil:
			for x, v := range src {
				dst[x] = bias[x] + v
			}
		default:
			copy(dst, src)
		}
	}
}

// gemvT is Mul for one row times Bᵀ in float32 (x·Wᵀ for one token, q·kᵀ
// for one query): c[j] (+)= Σ_p x[p]·b[j·ldb + p]. The tiled path would
// pack all of Bᵀ, a transposition that costs more than the multiply-adds
// when each element of B is used once; here B's rows are read in place,
// four dot products at a time (dot4F32), the last k mod 16 terms and the
// last n mod 4 columns in Go. It runs in the calling goroutine whatever
// Workspace.Threads says, so the order of each sum depends on n and k only.
func gemvT(n, k int, x, b []float32, ldb int, c []float32, accumulate bool) {
	k16 := k &^ 15
	x = x[:k]
	var out [4]float32
	for j := 0; j < n; j += 4 {
		rows := min(4, n-j)
		if rows == 4 && k16 > 0 {
			_ = b[(j+3)*ldb+k-1] // the last element dot4F32 reads
			dot4F32(k16, unsafe.Pointer(&x[0]), unsafe.Pointer(&b[j*ldb]), ldb, unsafe.Pointer(&out[0]))
		} else {
			out = [4]float32{}
		}
		for r := 0; r < rows; r++ {
			s := out[r]
			p0 := k16
			if rows < 4 {
				p0 = 0
			}
			row := b[(j+r)*ldb : (j+r)*ldb+k]
			for p := p0; p < k; p++ {
				s += x[p] * row[p]
			}
			if accumulate {
				c[j+r] += s
			} else {
				c[j+r] = s
			}
		}
	}
}

// gemvRows is gemvT, or gemvBF16 where x comes rounded in pairs (xw).
func gemvRows(n, k int, x []float32, xw []uint32, asm bool, b []float32, ldb int, c []float32, accumulate bool) {
	if xw != nil {
		gemvBF16(asm, n, k, xw, b, ldb, c, accumulate)
		return
	}
	gemvT(n, k, x, b, ldb, c, accumulate)
}

// gemvJob is gemvT's product split over threads by bands of columns.
type gemvJob struct {
	n, k, ldb, parts int
	x, b, c          []float32
	xw               []uint32
	asm, accumulate  bool
}

// gemvSplit is gemvT (or gemvBF16) with its columns (B's rows) split over the
// Workspace's threads: one token's product with a large weight matrix
// reads every weight once, and two cores read faster than one. The bands
// start at multiples of 4 columns, where gemvT's groups of four start
// anyway, so every column is summed as gemvT alone sums it: the same bits
// for any number of threads.
func (w *Workspace) gemvSplit(n, k int, x []float32, xw []uint32, asm bool, b []float32, ldb int, c []float32, accumulate bool) {
	p := w.pool()
	parts := min(w.Threads, p.Size(), (n+3)/4)
	w.gemv = gemvJob{n: n, k: k, ldb: ldb, parts: parts, x: x, xw: xw, asm: asm, b: b, c: c, accumulate: accumulate}
	if w.runGemv == nil {
		w.runGemv = func(t int) {
			j := &w.gemv
			units := (j.n + 3) / 4
			lo, hi := t*units/j.parts*4, min((t+1)*units/j.parts*4, j.n)
			if lo < hi {
				gemvRows(hi-lo, j.k, j.x, j.xw, j.asm, j.b[lo*j.ldb:], j.ldb, j.c[lo:hi], j.accumulate)
			}
		}
	}
	p.Run(parts, w.runGemv)
	w.gemv = gemvJob{} // drop the references to the caller's matrices
}

// sumBlock is how many rows SumRows adds from zero before adding their sum
// to out: the depth of the micro-kernel's sums (kc), so that the column
// sums are the ones the product 1ᵀ·a gives.
const sumBlock = 256

// SumRows sets out[j] to the sum of column j of the m×n matrix a (row
// stride lda): the gradient of a bias added to every row. It reads a row
// after row, as a lies in memory, summing blocks of sumBlock rows from
// zero and adding each block's sum to out in order. (As the product 1ᵀ·a
// it walked down panels 16 columns wide, a page per row, and took 5 % of
// a training step at the 10.8M shape; bench/NOTES.md G7.)
func SumRows[F Float](w *Workspace, m, n int, a []F, lda int, out []F) {
	out = out[:n]
	clear(out)
	part := sumBuffer[F](w, n)
	for i0 := 0; i0 < m; i0 += sumBlock {
		sum := out
		if i0 > 0 {
			sum = part
			clear(sum)
		}
		for i := i0; i < min(i0+sumBlock, m); i++ {
			addRow(sum, a[i*lda:i*lda+n])
		}
		if i0 > 0 {
			addRow(out, sum)
		}
	}
}

// sumBuffer returns w's buffer of n numbers for SumRows's block sums.
func sumBuffer[F Float](w *Workspace, n int) []F {
	var z F
	switch any(z).(type) {
	case float32:
		w.sum32 = grow(w.sum32, n)
		return any(w.sum32).([]F)
	default:
		w.sum64 = grow(w.sum64, n)
		return any(w.sum64).([]F)
	}
}

// addRow sets dst[j] += src[j], eight float32 at a time in assembly where
// there is AVX (the same single rounding per add as the Go loop).
func addRow[F Float](dst, src []F) {
	src = src[:len(dst)]
	j := 0
	if d32, ok := any(dst).([]float32); ok && haveAVX && !forceGo {
		if j = len(dst) &^ 7; j > 0 {
			addF32(unsafe.Pointer(&d32[0]), unsafe.Pointer(&any(src).([]float32)[0]), j)
		}
	}
	for ; j < len(dst); j++ {
		dst[j] += src[j]
	}
}

// packCopy packs cnt ≤ w neighbouring entries of kc rows of a row-major
// matrix: dst[p·w + r] = src[(p0+p)·ld + c0 + r], zero for cnt ≤ r < w.
// (A strip of Aᵀ, or a panel of B.)
func packCopy[F Float](dst []F, w int, src []F, ld, p0, kc, c0, cnt int) {
	dst = dst[:kc*w]
	if cnt == w && copyRows(dst, w, src, ld, p0, kc, c0) {
		return
	}
	for p := 0; p < kc; p++ {
		d := dst[p*w : p*w+w]
		off := (p0+p)*ld + c0
		copy(d, src[off:off+cnt])
		clear(d[cnt:])
	}
}

// copyRows is packCopy for whole rows of 64 or 128 bytes (the width of
// most strips and panels), where there is assembly to copy them with
// vector moves: copy calls memmove, which costs as much as the 64 bytes
// it moves (so does assigning a [16]float32, which Go compiles to memmove).
func copyRows[F Float](dst []F, w int, src []F, ld, p0, kc, c0 int) bool {
	size := int(unsafe.Sizeof(F(0)))
	if !haveAVX || (w*size != 64 && w*size != 128) {
		return false
	}
	_ = dst[kc*w-1]
	_ = src[(p0+kc-1)*ld+c0+w-1]
	d, s := unsafe.Pointer(&dst[0]), unsafe.Pointer(&src[p0*ld+c0])
	if w*size == 64 {
		copyRows64B(d, s, ld*size, kc)
	} else {
		copyRows128B(d, s, ld*size, kc)
	}
	return true
}

// packTrans packs cnt ≤ w neighbouring rows of a row-major matrix,
// transposed: dst[p·w + r] = src[(c0+r)·ld + p0 + p], zero for
// cnt ≤ r < w. (A strip of A, or a panel of Bᵀ.) Float32 goes 8×8 blocks
// at a time through the AVX transpose where there is one; the rest four
// rows at a time, so that each step of p stores four neighbours.
func packTrans[F Float](dst []F, w int, src []F, ld, p0, kc, c0, cnt int) {
	dst = dst[:kc*w]
	r := 0
	if d32, ok := any(dst).([]float32); ok && haveAVX {
		s32 := any(src).([]float32)
		for ; r+8 <= cnt; r += 8 {
			rows := s32[(c0+r)*ld+p0:]
			_ = rows[7*ld+kc-1] // the last element the transposes read
			p := kc &^ 7
			if p > 0 {
				_ = d32[(p-1)*w+r+7] // the last element the transposes write
				transposeF32(&d32[r], w, &rows[0], ld, p/8)
			}
			for ; p < kc; p++ {
				for i := 0; i < 8; i++ {
					d32[p*w+r+i] = rows[i*ld+p]
				}
			}
		}
	}
	for ; r+4 <= cnt; r += 4 {
		s := src[(c0+r)*ld+p0:]
		s0, s1, s2, s3 := s[:kc], s[ld:ld+kc], s[2*ld:2*ld+kc], s[3*ld:3*ld+kc]
		for p := range s0 {
			d := dst[p*w+r : p*w+r+4 : p*w+r+4]
			d[0], d[1], d[2], d[3] = s0[p], s1[p], s2[p], s3[p]
		}
	}
	for ; r < cnt; r++ {
		s := src[(c0+r)*ld+p0 : (c0+r)*ld+p0+kc]
		for p, v := range s {
			dst[p*w+r] = v
		}
	}
	if r < w {
		for p := 0; p < kc; p++ {
			clear(dst[p*w+r : p*w+w])
		}
	}
}

func roundUp(x, to int) int { return (x + to - 1) / to * to }

func grow[F Float](s []F, n int) []F {
	if guardBuffer != nil {
		return unsafe.Slice((*F)(guardBuffer(n, int(unsafe.Sizeof(F(0))))), n)
	}
	if cap(s) < n {
		return make([]F, n)
	}
	return s[:n]
}

// guardBuffer, which only the guard-page tests set, allocates every
// buffer grow and growWords return: exactly n numbers of size bytes that
// end at an inaccessible page, so that a kernel touching more of a buffer
// than the Go code sized it for faults.
var guardBuffer func(n, size int) unsafe.Pointer

// edgeTile is the first n numbers of a worker's edge tile, or under the
// guard-page tests a buffer of exactly n that ends at an inaccessible page.
func edgeTile[F Float](tile []F, n int) []F {
	if guardBuffer != nil {
		return grow[F](nil, n)
	}
	return tile[:n]
}

// buffers returns wk's packing buffers and edge tile for element type F.
func buffers[F Float](wk *worker) (ap, bp *[]F, tile []F) {
	var z F
	switch any(z).(type) {
	case float32:
		return any(&wk.a32).(*[]F), any(&wk.b32).(*[]F), any(wk.t32[:]).([]F)
	default:
		return any(&wk.a64).(*[]F), any(&wk.b64).(*[]F), any(wk.t64[:]).([]F)
	}
}

func jobOf[F Float](wk *worker) *job[F] {
	var z F
	switch any(z).(type) {
	case float32:
		return any(&wk.job32).(*job[F])
	default:
		return any(&wk.job64).(*job[F])
	}
}
