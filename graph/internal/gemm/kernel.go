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
	asm        bool // false: the Go twin of path's tile
	mr, nr     int
	mc, kc, nc int
	f32, f64   func(k int, a, b, c unsafe.Pointer, ldc int, accumulate bool)
}

// maxTile is the largest mr·nr of any kernel (the edge tile's size).
const maxTile = 16 * 16

// Blocking sizes per kernel and element type, for this machine's caches
// (L1d 32 KiB, L2 1 MiB per core) and typical ones: kc·nr·size ≈ 16 KiB
// (a B panel fills half of L1), mc·kc·size ≈ 256–512 KiB (the A block in
// L2), nc·kc·size ≈ 4 MiB (the B block in a share of L3). Measured with
// BenchmarkMul; see bench/NOTES.md.
var (
	go32      = kernels{path: pathGo, mr: 4, nr: 8, mc: 128, kc: 256, nc: 4096}
	go64      = kernels{path: pathGo, mr: 4, nr: 8, mc: 128, kc: 256, nc: 2048}
	avx2_32   = kernels{path: pathAVX2, mr: 6, nr: 16, mc: 144, kc: 256, nc: 4096}
	avx2_64   = kernels{path: pathAVX2, mr: 6, nr: 8, mc: 96, kc: 256, nc: 2048}
	avx512_32 = kernels{path: pathAVX512, mr: 16, nr: 16, mc: 256, kc: 256, nc: 4096}
	avx512_64 = kernels{path: pathAVX512, mr: 16, nr: 8, mc: 128, kc: 256, nc: 2048}
)

// activePath is the kernel family Mul uses: the best the CPU has
// (bestPath), or one the tests force. forceGo makes Mul run the Go twin
// of activePath's tile instead of its assembly.
var (
	activePath = bestPath
	forceGo    = false
)

// kernelsFor returns the kernels Mul uses for element type F.
func kernelsFor[F Float]() kernels {
	f32 := unsafe.Sizeof(F(0)) == 4
	var ks kernels
	switch activePath {
	case pathAVX512:
		ks = pick(f32, avx512_32, avx512_64)
		ks.f32, ks.f64 = avx512F32, avx512F64
	case pathAVX2:
		ks = pick(f32, avx2_32, avx2_64)
		ks.f32, ks.f64 = avx2F32, avx2F64
	default:
		ks = pick(f32, go32, go64)
	}
	ks.asm = activePath != pathGo && !forceGo
	return ks
}

func pick(f32 bool, a, b kernels) kernels {
	if f32 {
		return a
	}
	return b
}

// microKernel computes the mr×nr tile of C at c (row stride ldc) from a
// packed strip a (mr numbers per step) and panel b (nr numbers per step):
//
//	c[r·ldc + j] = Σ_p a[p·mr + r] · b[p·nr + j]   (p = 0 … k−1, in order)
//
// or c += … when accumulate is set (the sum is formed first, then added).
func microKernel[F Float](ks kernels, k int, a, b, c []F, ldc int, accumulate bool) {
	// The assembly reads and writes these last elements and nothing beyond.
	_ = a[k*ks.mr-1]
	_ = b[k*ks.nr-1]
	_ = c[(ks.mr-1)*ldc+ks.nr-1]
	if !ks.asm {
		kernelGo(ks.mr, ks.nr, k, a, b, c, ldc, accumulate)
		return
	}
	run := ks.f64
	if unsafe.Sizeof(F(0)) == 4 {
		run = ks.f32
	}
	run(k, unsafe.Pointer(&a[0]), unsafe.Pointer(&b[0]), unsafe.Pointer(&c[0]), ldc, accumulate)
}

// kernelGo is the micro-kernel in plain Go for any tile up to maxTile:
// the tile is summed in a local array, one product per step of p, in the
// order of the assembly's vector registers.
func kernelGo[F Float](mr, nr, k int, a, b, c []F, ldc int, accumulate bool) {
	var acc [maxTile]F
	t := acc[:mr*nr]
	for p := 0; p < k; p++ {
		bp := b[p*nr : p*nr+nr]
		for r, av := range a[p*mr : p*mr+mr] {
			row := t[r*nr : r*nr+nr]
			for j, bv := range bp {
				row[j] += av * bv
			}
		}
	}
	for r := 0; r < mr; r++ {
		dst := c[r*ldc : r*ldc+nr]
		src := t[r*nr : r*nr+nr]
		if accumulate {
			for j, v := range src {
				dst[j] += v
			}
		} else {
			copy(dst, src)
		}
	}
}
