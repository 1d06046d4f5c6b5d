package gemm

import (
	"runtime"
	"unsafe"
)

// kernelPath names a family of micro-kernels.
type kernelPath int

const (
	pathGo     kernelPath = iota // plain Go (kernelGo)
	pathAVX2                     // AVX2 + FMA, 256-bit registers
	pathAVX512                   // AVX-512F, 512-bit registers
	pathNEON                     // arm64 Advanced SIMD, 128-bit registers
)

func (p kernelPath) String() string {
	return [...]string{"Go", "AVX2", "AVX-512", "NEON"}[p]
}

// pathArch is the architecture whose assembly each family is; the Go
// kernel runs on every one.
var pathArch = [...]string{pathGo: runtime.GOARCH, pathAVX2: "amd64", pathAVX512: "amd64", pathNEON: "arm64"}

// machinePaths lists the kernel families this machine runs, fastest
// first: bestPath, the slower families of its architecture, then Go.
func machinePaths() []kernelPath {
	var ps []kernelPath
	for p := bestPath; p >= pathGo; p-- {
		if pathArch[p] == pathArch[bestPath] {
			ps = append(ps, p)
		}
	}
	return ps
}

// kernels is one micro-kernel with its tile (mr×nr) and blocking sizes.
type kernels struct {
	path       kernelPath
	mr, nr     int
	mc, kc, nc int
	kcRows     int // kc when A is read along its rows (see job.run)
	// run is the assembly kernel (nil for pathGo): microKernel for the
	// element type of the table entry, a, b, c pointing at its first elements.
	run func(k int, a unsafe.Pointer, aRow, aStep int, b unsafe.Pointer, bStep int, c unsafe.Pointer, ldc int, add unsafe.Pointer, ldAdd int, accumulate bool, aNext, strips int)
}

// maxTile is the largest mr·nr of any kernel (the edge tile's size).
const maxTile = 12 * 32

// kernelTable holds the kernels per family, float32 then float64, with
// blocking sizes for the caches of the CPUs measured (L1d 32 KiB on Zen 4,
// 48 KiB on Zen 5, L2 1 MiB per core): kc·nr·size ≈ 16–32 KiB (a B panel
// fills half of L1 or more), mc·kc·size ≈ 256 KiB (the A block in L2),
// nc·kc·size ≈ 4 MiB (the B block in a share of L3). Measured with
// BenchmarkMul; see bench/NOTES.md. The AVX-512 float32 tile is 12×32,
// two registers a row: see kernel_amd64.s for why not 16×16.
// kcRows, the depth when A is read along its rows, is deeper for the
// AVX-512 float32 kernel, whose large products measured 3–4 % faster with
// C's tiles read and written once per 1536 steps instead of per 256 (G12).
var kernelTable = [...][2]kernels{
	pathGo: { // 12×8: whole 3×2 and 4×4 register blocks (kernelGo)
		{path: pathGo, mr: 12, nr: 8, mc: 120, kc: 256, kcRows: 256, nc: 4096},
		{path: pathGo, mr: 12, nr: 8, mc: 120, kc: 256, kcRows: 256, nc: 2048},
	},
	pathAVX2: {
		{path: pathAVX2, mr: 6, nr: 16, mc: 144, kc: 256, kcRows: 256, nc: 4096, run: avx2F32},
		{path: pathAVX2, mr: 6, nr: 8, mc: 96, kc: 256, kcRows: 256, nc: 2048, run: avx2F64},
	},
	pathAVX512: {
		{path: pathAVX512, mr: 12, nr: 32, mc: 252, kc: 256, kcRows: 1536, nc: 4096, run: avx512F32},
		{path: pathAVX512, mr: 16, nr: 8, mc: 128, kc: 256, kcRows: 256, nc: 2048, run: avx512F64},
	},
	// NEON's run is set on arm64 (kernel_arm64.go), where its assembly is.
	// Blocks for the smallest L1d and L2 it meets (64 KiB, 1 MiB:
	// Graviton 2/3; Apple's M cores have 128 KiB and a shared 12 MiB or
	// more): a B panel of 12 KiB, an A block of 128 KiB; nc is a whole
	// number of panels, as job.run's buffers need. Not measured: no arm64
	// machine was at hand (docs/performance.md).
	pathNEON: {
		{path: pathNEON, mr: 8, nr: 12, mc: 128, kc: 256, kcRows: 256, nc: 4092},
		{path: pathNEON, mr: 8, nr: 6, mc: 64, kc: 256, kcRows: 256, nc: 2046},
	},
}

// cacheSizes describes one core's data caches in bytes: the L1's size and
// ways (its sets times its line is l1d/l1dWays), and the L2's size.
type cacheSizes struct{ l1d, l1dWays, l2 int }

// cache is what this CPU reports (caches, CPUID on amd64); zero where it
// reports nothing, and then the blocks keep kernelTable's sizes and rules.
var cache = caches()

// mcFor is the height of A's blocks for blocks of depth kc: kernelTable's
// mc, or less where that block of A (mc·kc numbers of size bytes) would
// fill more than half of the L2, so that it stays there while every panel
// of B's block goes past it. It matters for deep products: at k = 1536
// (the down projection x·Wᵀ and dy·W at C 384) mc 252 made A's block 1.5
// MB, beyond Zen 5's 1 MB L2, and mc 84 ran those products 1–3 % faster
// (bench/NOTES.md K2).
func mcFor(ks *kernels, kc, size int) int {
	if cache.l2 == 0 || ks.mc*kc*size <= cache.l2/2 {
		return ks.mc // (no division: this runs for every product, the smallest too)
	}
	return max(ks.mr, cache.l2/2/(kc*size)/ks.mr*ks.mr)
}

// crowdsL1 reports whether a strip's rows of A, stride bytes apart, fall
// into so few sets of the L1 that reading them in place would evict each
// other and B's panel: more than half the L1's ways of them in one set.
// (A row r lies in the set of r·stride modulo the size of one way.) Then
// A is packed. Zen 5's 12-way L1 takes the 12 rows of an AVX-512 strip at
// strides of 2 or 6 KiB in place, six to a set; Zen 4's 8-way one does
// not. Where the CPU reports no L1, the rule measured on Zen 4: strides
// that are a multiple of 2 KiB crowd.
func crowdsL1(rows, stride int) bool {
	if cache.l1d == 0 || cache.l1dWays == 0 {
		return stride%2048 == 0
	}
	// One pass over the rows, counting rows per set (mod 64, which can
	// only merge sets: where an L1 has more, it errs towards packing).
	// job.run keeps the last answer per worker: products come back with
	// the same strides at every step, and the smallest take ≈ 100 ns.
	way := cache.l1d / cache.l1dWays
	var count [64]uint8
	for r, off := 0, 0; r < rows; r, off = r+1, (off+stride)%way {
		set := off / 64 % len(count)
		if count[set]++; int(count[set]) > cache.l1dWays/2 {
			return true
		}
	}
	return false
}

// activePath is the kernel family Mul uses: the best the CPU has
// (bestPath), or one the tests force. forceGo makes Mul run the Go twin
// of activePath's tile instead of its assembly.
var (
	activePath = bestPath
	forceGo    = false
)

// kernelsFor returns the kernels Mul uses for element type F and a
// product of m rows, and whether to run their assembly (else their Go
// twin). Products of at most 8 rows (a bias gradient 1ᵀ·dy, one token's
// x·Wᵀ) take the AVX2 kernels where the AVX-512 ones are active: their
// 6-row tile wastes less on the zero rows that pad m to a whole strip.
func kernelsFor[F Float](m int) (ks *kernels, asm bool) {
	t := 0
	if unsafe.Sizeof(F(0)) == 8 {
		t = 1
	}
	path := activePath
	if path == pathAVX512 && m <= 8 {
		path = pathAVX2
	}
	return &kernelTable[path][t], path != pathGo && !forceGo
}

// microKernel computes strips mr×nr tiles of C, one below the other, each
// from a strip of A and the same panel of B, packed or in place. Tile s
// is the one at c[s·mr·ldc …] from the strip at a[s·aNext …]:
//
//	c[r·ldc + j] = Σ_p a[r·aRow + p·aStep] · b[p·bStep + j]   (p = 0 … k−1, in order)
//
// or, when add is not nil, c[r·ldc + j] = add[r·ldAdd + j] + Σ (the sum
// is formed first, then added): add = c, ldAdd = ldc adds to C, and a bias
// row with ldAdd = 0 adds it to every row. A packed strip has aRow = 1,
// aStep = mr; a packed panel bStep = nr. One call covers a column of
// tiles because a call from Go costs ≈ 40 ns, 3–4 % of a 16×16×256 tile
// (bench/NOTES.md G11); the tiles are computed in the same order and
// with the same sums either way.
func microKernel[F Float](ks *kernels, asm bool, k, strips int, a []F, aRow, aStep, aNext int, b []F, bStep int, c []F, ldc int, add []F, ldAdd int) {
	// The assembly reads and writes these last elements and nothing beyond.
	last := strips - 1
	_ = a[last*aNext+(ks.mr-1)*aRow+(k-1)*aStep]
	_ = b[(k-1)*bStep+ks.nr-1]
	_ = c[(last*ks.mr+ks.mr-1)*ldc+ks.nr-1]
	addPtr := unsafe.Pointer(nil)
	if add != nil {
		_ = add[(last*ks.mr+ks.mr-1)*ldAdd+ks.nr-1]
		addPtr = unsafe.Pointer(&add[0])
	}
	if !asm {
		for s := range strips {
			var addS []F
			if add != nil {
				addS = add[s*ks.mr*ldAdd:]
			}
			kernelGo(ks.mr, ks.nr, k, a[s*aNext:], aRow, aStep, b, bStep, c[s*ks.mr*ldc:], ldc, addS, ldAdd)
		}
		return
	}
	ks.run(k, unsafe.Pointer(&a[0]), aRow, aStep, unsafe.Pointer(&b[0]), bStep, unsafe.Pointer(&c[0]), ldc, addPtr, ldAdd, add != nil, aNext, strips)
}

// kernelGo is the micro-kernel in plain Go, for a tile of any shape: the
// Go twin of every assembly kernel, and the kernel of -tags purego and of
// the architectures without assembly kernels (all but amd64 and arm64).
//
// Each element of the tile is summed as the assembly sums it — from zero,
// one product per step of p in order, then added to add — so the twin
// differs from the assembly only where the assembly fuses a multiply-add
// (FMA) and the Go compiler does not (see prod): on arm64 it does, and the
// twin gives the NEON assembly's bits (TestTwinBits).
//
// The tile is cut into register blocks, each summed over the whole k in
// local variables that the compiler keeps in registers (block3x2,
// block4x4; goBlockWide chooses); the rows and columns they leave are
// summed four columns at a time (block1x4), then one element at a time.
// The loop it replaces kept the tile in an array in memory, loading and
// storing every partial sum at every step (bench/NOTES.md, "The plain-Go
// kernel").
func kernelGo[F Float](mr, nr, k int, a []F, aRow, aStep int, b []F, bStep int, c []F, ldc int, add []F, ldAdd int) {
	if aRow < 0 || aStep < 0 || bStep < 0 || ldc < 0 || ldAdd < 0 {
		panic("gemm: negative stride") // the blocks' bounds checks assume none
	}
	R, C := 3, 2
	if goBlockWide {
		R, C = 4, 4
	}
	for r := 0; r < mr; r += R {
		rows := min(R, mr-r)
		for j := 0; j < nr; j += C {
			cols := min(C, nr-j)
			ab, bb, cb, addb := a[r*aRow:], b[j:], c[r*ldc+j:], from(add, r*ldAdd+j)
			switch {
			case rows < R || cols < C:
				restGo(rows, cols, k, ab, aRow, aStep, bb, bStep, cb, ldc, addb, ldAdd)
			case goBlockWide:
				block4x4(k, ab, aRow, aStep, bb, bStep, cb, ldc, addb, ldAdd)
			default:
				block3x2(k, ab, aRow, aStep, bb, bStep, cb, ldc, addb, ldAdd)
			}
		}
	}
}

// goBlockWide makes kernelGo sum 4×4 blocks, else 3×2. amd64 has 16
// scalar float registers (15 for Go, which keeps X15 zero) and, at
// GOAMD64=v1, no fused multiply-add: a product takes a register of its
// own before it is added, and Go's scheduler computes all of a step's
// products before its adds. 3×2 (6 sums, 6 products, 2 of B, 1 of A) is
// the largest block that does not spill there, and its 6 independent sums
// cover the add's latency (3 cycles at 2 adds a cycle). arm64 (and the
// other 64-bit architectures) have 32 registers and fuse x*y + s into one
// instruction: 16 sums, 4 of B and 4 of A.
var goBlockWide = runtime.GOARCH != "amd64" && runtime.GOARCH != "386"

// prod is the product that a multiply-add of the Go kernel adds to its
// sum. Go may fuse x*y + s into one FMA instruction that rounds once, and
// does on arm64: there the twin gives the assembly's bits. On amd64 it
// fuses only at GOAMD64=v3, and only where no operand comes straight from
// memory, so the same kernel would round some sums once and some twice:
// there the explicit conversion rounds every product first (a conversion
// prevents fusion, says the spec), as the twin always has on amd64. It
// compiles to nothing.
func prod[F Float](x, y F) F {
	if runtime.GOARCH == "amd64" {
		return F(x * y)
	}
	return x * y
}

// The blocks read A and B through unsafe pointers at byte offsets. With
// strides known only at run time the compiler cannot prove a[r·aRow +
// p·aStep] in range, and a slice expression per step cost a bounds check
// per load (6.2 GFLOP/s against 10.7 in a 3×2 block alone). Instead each
// block checks, before its loop, the last element of A and of B that it
// reads: the strides are not negative (kernelGo), so every offset in the
// loop lies between the first element and those, and no pointer is formed
// past an operand's end. (A helper func for the load left a NOP per
// inlined call in the loop: 9.0 against 11.6 GFLOP/s.)

// block3x2 sums a 3×2 block of C (see kernelGo).
func block3x2[F Float](k int, a []F, aRow, aStep int, b []F, bStep int, c []F, ldc int, add []F, ldAdd int) {
	_ = a[2*aRow+(k-1)*aStep] // the last elements read
	_ = b[(k-1)*bStep+1]
	size := int(unsafe.Sizeof(F(0)))
	a0, a1, a2 := unsafe.Pointer(&a[0]), unsafe.Pointer(&a[aRow]), unsafe.Pointer(&a[2*aRow])
	pb := unsafe.Pointer(&b[0])
	aStep, bStep = aStep*size, bStep*size
	var c00, c01, c10, c11, c20, c21 F
	for p, oa, ob := 0, 0, 0; p < k; p, oa, ob = p+1, oa+aStep, ob+bStep {
		b0, b1 := *(*F)(unsafe.Add(pb, ob)), *(*F)(unsafe.Add(pb, ob+size))
		x := *(*F)(unsafe.Add(a0, oa))
		c00 += prod(x, b0)
		c01 += prod(x, b1)
		x = *(*F)(unsafe.Add(a1, oa))
		c10 += prod(x, b0)
		c11 += prod(x, b1)
		x = *(*F)(unsafe.Add(a2, oa))
		c20 += prod(x, b0)
		c21 += prod(x, b1)
	}
	put(c, add, c00, c01)
	put(c[ldc:], from(add, ldAdd), c10, c11)
	put(c[2*ldc:], from(add, 2*ldAdd), c20, c21)
}

// block4x4 sums a 4×4 block of C (see kernelGo).
func block4x4[F Float](k int, a []F, aRow, aStep int, b []F, bStep int, c []F, ldc int, add []F, ldAdd int) {
	_ = a[3*aRow+(k-1)*aStep] // the last elements read
	_ = b[(k-1)*bStep+3]
	size := int(unsafe.Sizeof(F(0)))
	a0, a1 := unsafe.Pointer(&a[0]), unsafe.Pointer(&a[aRow])
	a2, a3 := unsafe.Pointer(&a[2*aRow]), unsafe.Pointer(&a[3*aRow])
	pb := unsafe.Pointer(&b[0])
	aStep, bStep = aStep*size, bStep*size
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 F
	for p, oa, ob := 0, 0, 0; p < k; p, oa, ob = p+1, oa+aStep, ob+bStep {
		b0, b1 := *(*F)(unsafe.Add(pb, ob)), *(*F)(unsafe.Add(pb, ob+size))
		b2, b3 := *(*F)(unsafe.Add(pb, ob+2*size)), *(*F)(unsafe.Add(pb, ob+3*size))
		x := *(*F)(unsafe.Add(a0, oa))
		c00 += prod(x, b0)
		c01 += prod(x, b1)
		c02 += prod(x, b2)
		c03 += prod(x, b3)
		x = *(*F)(unsafe.Add(a1, oa))
		c10 += prod(x, b0)
		c11 += prod(x, b1)
		c12 += prod(x, b2)
		c13 += prod(x, b3)
		x = *(*F)(unsafe.Add(a2, oa))
		c20 += prod(x, b0)
		c21 += prod(x, b1)
		c22 += prod(x, b2)
		c23 += prod(x, b3)
		x = *(*F)(unsafe.Add(a3, oa))
		c30 += prod(x, b0)
		c31 += prod(x, b1)
		c32 += prod(x, b2)
		c33 += prod(x, b3)
	}
	put(c, add, c00, c01, c02, c03)
	put(c[ldc:], from(add, ldAdd), c10, c11, c12, c13)
	put(c[2*ldc:], from(add, 2*ldAdd), c20, c21, c22, c23)
	put(c[3*ldc:], from(add, 3*ldAdd), c30, c31, c32, c33)
}

// block1x4 sums four neighbouring elements of one row of C (see kernelGo).
func block1x4[F Float](k int, a []F, aStep int, b []F, bStep int, c []F, add []F) {
	_ = a[(k-1)*aStep] // the last elements read
	_ = b[(k-1)*bStep+3]
	size := int(unsafe.Sizeof(F(0)))
	pa, pb := unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0])
	aStep, bStep = aStep*size, bStep*size
	var c0, c1, c2, c3 F
	for p, oa, ob := 0, 0, 0; p < k; p, oa, ob = p+1, oa+aStep, ob+bStep {
		x := *(*F)(unsafe.Add(pa, oa))
		c0 += prod(x, *(*F)(unsafe.Add(pb, ob)))
		c1 += prod(x, *(*F)(unsafe.Add(pb, ob+size)))
		c2 += prod(x, *(*F)(unsafe.Add(pb, ob+2*size)))
		c3 += prod(x, *(*F)(unsafe.Add(pb, ob+3*size)))
	}
	put(c, add, c0, c1, c2, c3)
}

// restGo sums the rows×cols elements of a tile that the register blocks
// leave, one row at a time: four columns at a time, then one by one.
func restGo[F Float](rows, cols, k int, a []F, aRow, aStep int, b []F, bStep int, c []F, ldc int, add []F, ldAdd int) {
	for r := 0; r < rows; r++ {
		ar, cr, addr := a[r*aRow:], c[r*ldc:], from(add, r*ldAdd)
		j := 0
		for ; j+4 <= cols; j += 4 {
			block1x4(k, ar, aStep, b[j:], bStep, cr[j:], from(addr, j))
		}
		for ; j < cols; j++ {
			var s F
			for p := 0; p < k; p++ {
				s += prod(ar[p*aStep], b[p*bStep+j])
			}
			put(cr[j:], from(addr, j), s)
		}
	}
}

// put stores a block's sums in a row of C: c[j] = sums[j], or add[j] +
// sums[j] when add is not nil (the sum is formed first, then added, as in
// the assembly).
func put[F Float](c, add []F, sums ...F) {
	c = c[:len(sums)]
	if add != nil {
		add = add[:len(sums)]
		for j, s := range sums {
			c[j] = add[j] + s
		}
		return
	}
	for j, s := range sums { // not copy: a call to memmove per row
		c[j] = s
	}
}

// from returns s[i:], or nil for a nil s (nothing to add).
func from[F Float](s []F, i int) []F {
	if s == nil {
		return nil
	}
	return s[i:]
}

// Paths names the kernel families this machine runs, fastest first:
// "AVX-512", "AVX2" (amd64 assembly) or "NEON" (arm64 assembly), and "Go"
// (the plain Go twins, what -tags purego builds). Use switches Mul to one of them; the packages above gemm
// test their golden numbers on each (graph's TestGoldenOnEveryKernelPath).
func Paths() []string {
	var names []string
	for _, p := range machinePaths() {
		names = append(names, p.String())
	}
	return names
}

// Use makes Mul run the kernel family name (one of Paths) until restore
// is called. Not safe while products run: tests call it between runs.
func Use(name string) (restore func()) {
	saved, savedGo := activePath, forceGo
	for _, p := range machinePaths() {
		if p.String() == name {
			activePath, forceGo = p, p == pathGo
		}
	}
	return func() { activePath, forceGo = saved, savedGo }
}
