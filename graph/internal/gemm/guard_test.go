package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/gptg/gptg/internal/guardmem"
)

// guardShapes are the products the guard-page tests run (m, n, k): one
// row (gemvT and gemvBF16 where B is transposed, dot4 groups and their
// rest, a split gemv), tiles and their edges (cnt < w) for every tile
// shape, odd k, k crossing the depth of a block (kc 256, bfloat16's 512,
// kcRows 1536), rows crossing the highest blocks (mc 252, 144, 128: a
// transposed A's widest bfloat16 pack; AMX's 512), a product of at most 8 rows (the
// AVX2 tile on an AVX-512 machine), columns past nc, and a few at random.
var guardShapes = [][3]int{
	{1, 1, 1}, {1, 37, 33}, {1, 64, 64}, {1, 9, 700}, {1, 41, 97}, {1, 4, 17},
	{5, 17, 3}, {12, 32, 16}, {13, 33, 17}, {41, 40, 7}, {6, 16, 8}, {16, 8, 5},
	{8, 16, 9}, {7, 9, 33}, {3, 20, 0}, {253, 40, 31}, {145, 20, 9}, {129, 9, 3},
	{13, 33, 515}, {9, 35, 1537}, {2, 4097, 3}, {513, 33, 5},
}

func init() { // and a few at random
	rng := rand.New(rand.NewPCG(45, 46))
	for range 4 {
		guardShapes = append(guardShapes, [3]int{1 + rng.IntN(40), 1 + rng.IntN(70), 1 + rng.IntN(70)})
	}
}

// guardPaths lists the kernel families with assembly that this machine
// runs (the Go family's products reach the assembly only through the
// packs, which the others run too), or the Go family where there are none.
func guardPaths() []kernelPath {
	var ps []kernelPath
	for _, p := range paths() {
		if p != pathGo {
			ps = append(ps, p)
		}
	}
	if len(ps) == 0 {
		return []kernelPath{pathGo}
	}
	return ps
}

// guardOperand is an operand of rows×cols (row stride ld) as short as it
// can be: its last element the last of the slice.
func guardOperand(rng *rand.Rand, rows, cols, ld int) []float64 {
	return randoms(rng, max(0, (rows-1)*ld+cols))
}

// withGuardedBuffers makes every packing buffer and edge tile of tb's
// products exactly as long as the Go code asks for, against a guard page,
// and the zero step that pads an odd k too.
func withGuardedBuffers(tb testing.TB, f func()) {
	saved := zeroStep
	defer func() { guardBuffer, zeroStep = nil, saved }()
	zeroStep = guardmem.CopyEnd(tb, saved)
	guardBuffer = func(n, size int) unsafe.Pointer {
		return unsafe.Pointer(unsafe.SliceData(guardmem.End[byte](tb, n*size)))
	}
	f()
}

// TestGuardPages runs Mul, MulBias, MulLower (float32, float64 and
// bfloat16) and SumRows on every assembly kernel family this machine runs
// (guardPaths), one thread and two, and with blocks of a few tiles
// (withTinyBlocks), with every operand and output placed against an
// inaccessible page — after its last element, then before its first —
// and every packing buffer and edge tile ending at one: any read or write
// by the assembly outside what its Go caller checked faults, and fails
// the test here. Each result must equal the same call's on ordinary
// memory, bit for bit.
func TestGuardPages(t *testing.T) {
	defer func(f, g float64) { parallelMinFlops, parallelMinGemv = f, g }(parallelMinFlops, parallelMinGemv)
	parallelMinFlops, parallelMinGemv = 0, 0 // split every product over the threads
	rng := rand.New(rand.NewPCG(41, 42))
	for _, s := range guardShapes {
		m, n, k := s[0], s[1], s[2]
		t.Run(fmt.Sprintf("%dx%dx%d", m, n, k), func(t *testing.T) {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					mc := newCase(rng, tA, tB, rng.IntN(2) == 0, m, n, k)
					ar, ac := m, k
					if tA {
						ar, ac = k, m
					}
					br, bc := k, n
					if tB {
						br, bc = n, k
					}
					mc.a = guardOperand(rng, ar, ac, mc.lda)
					mc.b = guardOperand(rng, br, bc, mc.ldb)
					mc.c0 = guardOperand(rng, m, n, mc.ldc)
					bias := randoms(rng, n) // also SumRows's output
					for _, p := range guardPaths() {
						for _, threads := range []int{1, 2} {
							label := fmt.Sprintf("%v/%v threads %d", mc, p, threads)
							withPath(p, false, func() { guardProducts(t, label, mc, bias, threads) })
						}
						if m <= 41 && n <= 64 && k <= 33 { // the larger shapes cross the real blocks
							label := fmt.Sprintf("%v/%v tiny blocks", mc, p)
							withPath(p, false, func() { withTinyBlocks(func() { guardProducts(t, label, mc, bias, 1) }) })
						}
					}
				}
			}
		})
	}
}

// guardProducts runs mc's products on ordinary memory, then with every
// operand on guarded memory, and compares.
func guardProducts(t *testing.T, label string, mc mulCase, bias []float64, threads int) {
	// A call places its operands with p32 and p64 (copies, on ordinary or
	// guarded memory) and returns its outputs.
	type call func(w *Workspace, p32 func([]float64) []float32, p64 func([]float64) []float64) ([]float32, []float64)
	calls := map[string]call{
		"Mul": func(w *Workspace, p32 func([]float64) []float32, p64 func([]float64) []float64) ([]float32, []float64) {
			c, c64 := p32(mc.c0), p64(mc.c0)
			Mul(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, p32(mc.a), mc.lda, p32(mc.b), mc.ldb, c, mc.ldc, mc.acc)
			Mul(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, p64(mc.a), mc.lda, p64(mc.b), mc.ldb, c64, mc.ldc, mc.acc)
			return c, c64
		},
		"MulBias": func(w *Workspace, p32 func([]float64) []float32, p64 func([]float64) []float64) ([]float32, []float64) {
			c, c64 := p32(mc.c0), p64(mc.c0)
			MulBias(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, p32(mc.a), mc.lda, p32(mc.b), mc.ldb, p32(bias), c, mc.ldc)
			MulBias(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, p64(mc.a), mc.lda, p64(mc.b), mc.ldb, p64(bias), c64, mc.ldc)
			return c, c64
		},
		"MulLower": func(w *Workspace, p32 func([]float64) []float32, p64 func([]float64) []float64) ([]float32, []float64) {
			c, c64 := p32(mc.c0), p64(mc.c0)
			MulLower(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, p32(mc.a), mc.lda, p32(mc.b), mc.ldb, c, mc.ldc)
			MulLower(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, p64(mc.a), mc.lda, p64(mc.b), mc.ldb, c64, mc.ldc)
			return c, c64
		},
		// B as an m×n matrix (when not transposed): its column sums.
		"SumRows": func(w *Workspace, p32 func([]float64) []float32, p64 func([]float64) []float64) ([]float32, []float64) {
			if mc.tB || mc.k == 0 {
				return nil, nil
			}
			out, out64 := p32(bias), p64(bias)
			SumRows(w, mc.k, mc.n, p32(mc.b), mc.ldb, out)
			SumRows(w, mc.k, mc.n, p64(mc.b), mc.ldb, out64)
			return out, out64
		},
	}
	plain32 := func(s []float64) []float32 { return to32(s) }
	plain64 := func(s []float64) []float64 { return append([]float64(nil), s...) }
	// The bfloat16 products run on AMX tiles where they can, and on
	// VDPBF16PS too there.
	type mode struct{ bf16, amx bool }
	modes := []mode{{false, false}, {true, false}}
	if bf16Asm() && amxWhyNot() == "" {
		modes = append(modes, mode{true, true})
	}
	defer func(o bool) { amxOff = o }(amxOff)
	for _, md := range modes {
		bf16 := md.bf16
		amxOff = !md.amx
		for _, name := range []string{"Mul", "MulBias", "MulLower", "SumRows"} {
			cl := calls[name]
			want, want64 := cl(&Workspace{Threads: threads, BF16: bf16}, plain32, plain64)
			for _, place := range guardmem.Placements {
				label := fmt.Sprintf("%s/%s bf16 %v AMX %v/%v", label, name, bf16, md.amx, place)
				p32 := func(s []float64) []float32 { return guardmem.Copy(t, place, to32(s)) }
				p64 := func(s []float64) []float64 { return guardmem.Copy(t, place, s) }
				var got []float32
				var got64 []float64
				withGuardedBuffers(t, func() {
					guardmem.Run(t, label, func() { got, got64 = cl(&Workspace{Threads: threads, BF16: bf16}, p32, p64) })
				})
				for x := range got {
					if math.Float32bits(got[x]) != math.Float32bits(want[x]) {
						t.Fatalf("%s: float32 [%d] = %v on guarded memory, %v on ordinary memory", label, x, got[x], want[x])
					}
					if math.Float64bits(got64[x]) != math.Float64bits(want64[x]) {
						t.Fatalf("%s: float64 [%d] = %v on guarded memory, %v on ordinary memory", label, x, got64[x], want64[x])
					}
				}
			}
		}
	}
}

// TestGuardPagesFixedOutputs: the one-row kernels write their sums into
// fixed-size arrays in Go (gemvT's 4 sums, gemvBF16's 4×16 lanes); here
// each array, x and B end at (then start after) an inaccessible page, so
// that a kernel writing more than the array or reading past x or B
// faults. The sums must match the Go reference: float64 sums within the
// float32 bound for dot4F32, dpbf16's lane sums bit for bit for dot4BF16.
func TestGuardPagesFixedOutputs(t *testing.T) {
	if bestPath == pathGo {
		t.Log("no assembly here (purego, or no AVX2): gemvT sums in Go")
		return
	}
	rng := rand.New(rand.NewPCG(47, 48))
	const k, ldb = 64, 67
	x64, b64 := randoms(rng, k), randoms(rng, 3*ldb+k)
	for _, place := range guardmem.Placements {
		x, b := guardmem.Copy(t, place, to32(x64)), guardmem.Copy(t, place, to32(b64))
		out := guardmem.Copy(t, place, make([]float32, 4))
		guardmem.Run(t, fmt.Sprintf("dot4F32, %v", place), func() {
			dot4F32(k, unsafe.Pointer(&x[0]), unsafe.Pointer(&b[0]), ldb, unsafe.Pointer(&out[0]))
		})
		for r := range 4 {
			want, scale := 0.0, 0.0
			for p := range k {
				want += float64(x[p]) * float64(b[r*ldb+p])
				scale += math.Abs(float64(x[p]) * float64(b[r*ldb+p]))
			}
			if d := math.Abs(float64(out[r]) - want); d > float64(k+1)*0x1p-24*scale {
				t.Fatalf("dot4F32, %v: row %d sums to %v, want %v", place, r, out[r], want)
			}
		}
		if !haveBF16 {
			continue
		}
		const chunks = k / 32
		xw := guardmem.Copy(t, place, make([]uint32, k/2))
		packBF16Rows(false, false, xw, k/2, 1, x, k, 0, k, 0, 1)
		lanes := guardmem.Copy(t, place, make([]float32, 64))
		guardmem.Run(t, fmt.Sprintf("dot4BF16, %v", place), func() {
			dot4BF16(chunks, unsafe.Pointer(&xw[0]), unsafe.Pointer(&b[0]), ldb, unsafe.Pointer(&lanes[0]))
		})
		for r := range 4 {
			for l := range 16 {
				var s float32
				for q := l; q < chunks*16; q += 16 {
					w := bf16Bits(b[r*ldb+2*q]) | bf16Bits(b[r*ldb+2*q+1])<<16
					s = dpbf16(s, xw[q], w)
				}
				if got := lanes[r*16+l]; math.Float32bits(got) != math.Float32bits(s) {
					t.Fatalf("dot4BF16, %v: row %d lane %d = %v, want %v", place, r, l, got, s)
				}
			}
		}
	}
}
