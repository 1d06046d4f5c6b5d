package gemm

import "unsafe"

// kernelPath names a family of micro-kernels.
type kernelPath int

const (
	pathGo     kernelPath = iota // plain Go (kernelGo)
	pathAVX2                     // AVX2 + FMA, 256-bit registers
	pathAVX512                   // AVX-512F, 512-bit registers
)

func (p kernelPath) String() string {
	return [...]string{"Go", "AVX2", "AVX-512"}[p]
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
const maxTile = 16 * 16

// kernelTable holds the kernels per family, float32 then float64, with
// their blocking sizes for this machine's caches (L1d 32 KiB, L2 1 MiB per
// core) and typical ones: kc·nr·size ≈ 16 KiB (a B panel fills half of
// L1), mc·kc·size ≈ 256 KiB (the A block in L2), nc·kc·size ≈ 4 MiB (the
// B block in a share of L3). Measured with BenchmarkMul; see bench/NOTES.md.
// kcRows, the depth when A is read along its rows, is deeper for the
// AVX-512 float32 kernel, whose large products measured 3–4 % faster with
// C's tiles read and written once per 1536 steps instead of per 256 (G12).
var kernelTable = [...][2]kernels{
	pathGo: {
		{path: pathGo, mr: 4, nr: 8, mc: 128, kc: 256, kcRows: 256, nc: 4096},
		{path: pathGo, mr: 4, nr: 8, mc: 128, kc: 256, kcRows: 256, nc: 2048},
	},
	pathAVX2: {
		{path: pathAVX2, mr: 6, nr: 16, mc: 144, kc: 256, kcRows: 256, nc: 4096, run: avx2F32},
		{path: pathAVX2, mr: 6, nr: 8, mc: 96, kc: 256, kcRows: 256, nc: 2048, run: avx2F64},
	},
	pathAVX512: {
		{path: pathAVX512, mr: 16, nr: 16, mc: 256, kc: 256, kcRows: 1536, nc: 4096, run: avx512F32},
		{path: pathAVX512, mr: 16, nr: 8, mc: 128, kc: 256, kcRows: 256, nc: 2048, run: avx512F64},
	},
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

// kernelGo is the micro-kernel in plain Go for any tile up to maxTile:
// the tile is summed in a local array, one product per step of p, in the
// order of the assembly's vector registers.
func kernelGo[F Float](mr, nr, k int, a []F, aRow, aStep int, b []F, bStep int, c []F, ldc int, add []F, ldAdd int) {
	var acc [maxTile]F
	t := acc[:mr*nr]
	for p := 0; p < k; p++ {
		bp := b[p*bStep : p*bStep+nr]
		for r := 0; r < mr; r++ {
			av := a[r*aRow+p*aStep]
			row := t[r*nr : r*nr+nr]
			for j, bv := range bp {
				row[j] += av * bv
			}
		}
	}
	for r := 0; r < mr; r++ {
		dst := c[r*ldc : r*ldc+nr]
		src := t[r*nr : r*nr+nr]
		if add != nil {
			old := add[r*ldAdd : r*ldAdd+nr]
			for j, v := range src {
				dst[j] = old[j] + v
			}
		} else {
			copy(dst, src)
		}
	}
}

// Paths names the kernel families this machine runs, fastest first:
// "AVX-512", "AVX2" (assembly) and "Go" (the plain Go twins, what -tags
// purego builds). Use switches Mul to one of them; the packages above gemm
// test their golden numbers on each (graph's TestGoldenOnEveryKernelPath).
func Paths() []string {
	var names []string
	for p := bestPath; p >= pathGo; p-- {
		names = append(names, p.String())
	}
	return names
}

// Use makes Mul run the kernel family name (one of Paths) until restore
// is called. Not safe while products run: tests call it between runs.
func Use(name string) (restore func()) {
	saved, savedGo := activePath, forceGo
	for p := bestPath; p >= pathGo; p-- {
		if p.String() == name {
			activePath, forceGo = p, p == pathGo
		}
	}
	return func() { activePath, forceGo = saved, savedGo }
}
