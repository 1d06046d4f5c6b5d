package gemm

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// naive is the textbook triple loop in float64; it also returns, per
// element, Σ_p |a·b|, the scale of the rounding error of any order of the sum.
func naive(transA, transB bool, m, n, k int, a []float64, lda int, b []float64, ldb int) (c, scale []float64) {
	c, scale = make([]float64, m*n), make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s, abs := 0.0, 0.0
			for p := 0; p < k; p++ {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				s += a[ai] * b[bi]
				abs += math.Abs(a[ai] * b[bi])
			}
			c[i*n+j], scale[i*n+j] = s, abs
		}
	}
	return c, scale
}

// paths lists the kernel families this machine runs, Go first.
func paths() []kernelPath {
	ps := machinePaths()
	slices.Reverse(ps)
	return ps
}

// withPath runs f with Mul forced onto kernel family p (its Go twin when
// twin is set).
func withPath(p kernelPath, twin bool, f func()) {
	defer func(p kernelPath, g bool) { activePath, forceGo = p, g }(activePath, forceGo)
	activePath, forceGo = p, twin
	f()
}

// withTinyBlocks runs f with blocking sizes of a few tiles, so that small
// products cross every block boundary (mc, kc or kcRows, nc) of every loop.
func withTinyBlocks(f func()) {
	saved := kernelTable
	defer func() { kernelTable = saved }()
	for p := range kernelTable {
		for t := range kernelTable[p] {
			ks := &kernelTable[p][t]
			ks.mc, ks.kc, ks.kcRows, ks.nc = 2*ks.mr, 5, 7, 3*ks.nr
		}
	}
	f()
}

type mulCase struct {
	tA, tB, acc bool
	m, n, k     int
	lda, ldb    int
	ldc         int
	a, b, c0    []float64
}

func newCase(rng *rand.Rand, tA, tB, acc bool, m, n, k int) mulCase {
	// Strides wider than needed (by a random 0…3) catch any read or write
	// past a row; the slices are exactly as long as the strides need, so a
	// read past the end panics.
	mc := mulCase{tA: tA, tB: tB, acc: acc, m: m, n: n, k: k}
	mc.lda = map[bool]int{false: k, true: m}[tA] + rng.IntN(4)
	mc.ldb = map[bool]int{false: n, true: k}[tB] + rng.IntN(4)
	mc.ldc = n + rng.IntN(4)
	mc.a = randoms(rng, max(rowsOf(tA, m, k)*mc.lda, 1))
	mc.b = randoms(rng, max(rowsOf(tB, k, n)*mc.ldb, 1))
	mc.c0 = randoms(rng, m*mc.ldc)
	return mc
}

func (mc mulCase) String() string {
	return fmt.Sprintf("%dx%dx%d_tA%v_tB%v_acc%v", mc.m, mc.n, mc.k, mc.tA, mc.tB, mc.acc)
}

func mul64(w *Workspace, mc mulCase) []float64 {
	c := append([]float64(nil), mc.c0...)
	Mul(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, mc.a, mc.lda, mc.b, mc.ldb, c, mc.ldc, mc.acc)
	return c
}

func mul32(w *Workspace, mc mulCase) []float32 {
	c := to32(mc.c0)
	Mul(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, to32(mc.a), mc.lda, to32(mc.b), mc.ldb, c, mc.ldc, mc.acc)
	return c
}

// check compares got with the exact product: any order of a k-term sum
// of products, with FMA or not, is within γ·Σ|a·b| of it, γ = (k+2)·u
// (u = 2⁻²⁴ float32, 2⁻⁵³ float64; +2 for the final add to C and the
// rounding of the inputs' float64 reference), doubled for float64 since
// the reference itself is float64. It also checks nothing past column n
// of C changed.
func check[F Float](t *testing.T, label string, mc mulCase, got []F) {
	t.Helper()
	want, scale := naive(mc.tA, mc.tB, mc.m, mc.n, mc.k, mc.a, mc.lda, mc.b, mc.ldb)
	u := 0x1p-24
	var z F
	if _, ok := any(z).(float64); ok {
		u = 2 * 0x1p-53
	}
	for i := 0; i < mc.m; i++ {
		for j := 0; j < mc.ldc; j++ {
			g, c0 := float64(got[i*mc.ldc+j]), float64(F(mc.c0[i*mc.ldc+j]))
			if j >= mc.n {
				if g != c0 {
					t.Fatalf("%s: wrote past the row at (%d, %d)", label, i, j)
				}
				continue
			}
			w, tol := want[i*mc.n+j], float64(mc.k+2)*u*scale[i*mc.n+j]
			if mc.acc {
				w += c0
				tol += 2 * u * math.Abs(c0)
			}
			if math.Abs(g-w) > tol+1e-300 {
				t.Fatalf("%s (%d, %d): %v, want %v ± %.3g", label, i, j, g, w, tol)
			}
		}
	}
}

// TestMul checks every kernel family this machine runs, its assembly and
// its Go twin, on every transpose combination, random shapes with edge
// tiles in both directions, strides wider than the matrices, accumulation
// and k = 0, for both element types, with the real blocking sizes and with
// tiny ones that make small products cross every block boundary. Each
// assembly result must also be within twice the rounding bound of its Go
// twin's.
func TestMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{{1, 1, 1}, {16, 16, 16}, {6, 16, 8}, {5, 17, 3}, {7, 9, 33}, {3, 20, 0},
		{33, 47, 300}, {300, 40, 21}, {2, 2100, 3}, {2, 4200, 2}, {128, 64, 256},
		{1, 70, 40}, {1, 9, 16}, {1, 4, 300}}
	for range 8 {
		shapes = append(shapes, [3]int{1 + rng.IntN(70), 1 + rng.IntN(70), 1 + rng.IntN(70)})
	}
	for _, tiny := range []bool{false, true} {
		for _, s := range shapes {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					for _, acc := range []bool{false, true} {
						mc := newCase(rng, tA, tB, acc, s[0], s[1], s[2])
						run := func(f func()) {
							if tiny {
								withTinyBlocks(f)
							} else {
								f()
							}
						}
						run(func() { checkPaths(t, fmt.Sprintf("tiny%v/%v", tiny, mc), mc) })
					}
				}
			}
		}
	}
}

func checkPaths(t *testing.T, name string, mc mulCase) {
	t.Helper()
	for _, p := range paths() {
		var asm32, twin32 []float32
		var asm64, twin64 []float64
		withPath(p, false, func() { asm32, asm64 = mul32(&Workspace{}, mc), mul64(&Workspace{}, mc) })
		withPath(p, true, func() { twin32, twin64 = mul32(&Workspace{}, mc), mul64(&Workspace{}, mc) })
		check(t, fmt.Sprintf("%s/%v/float32", name, p), mc, asm32)
		check(t, fmt.Sprintf("%s/%v/float64", name, p), mc, asm64)
		check(t, fmt.Sprintf("%s/%v-twin/float32", name, p), mc, twin32)
		check(t, fmt.Sprintf("%s/%v-twin/float64", name, p), mc, twin64)
		// The twin against the assembly directly: both are within the
		// bound of the exact sum, so within twice it of each other.
		_, scale := naive(mc.tA, mc.tB, mc.m, mc.n, mc.k, mc.a, mc.lda, mc.b, mc.ldb)
		for i := 0; i < mc.m; i++ {
			for j := 0; j < mc.n; j++ {
				x := i*mc.ldc + j
				tol := 2 * float64(mc.k+2) * scale[i*mc.n+j]
				if mc.acc {
					tol += 4 * math.Abs(mc.c0[x])
				}
				if d := math.Abs(float64(asm32[x] - twin32[x])); d > tol*0x1p-24 {
					t.Fatalf("%s/%v: float32 (%d, %d) assembly %v, Go twin %v", name, p, i, j, asm32[x], twin32[x])
				}
				if d := math.Abs(asm64[x] - twin64[x]); d > tol*0x1p-53 {
					t.Fatalf("%s/%v: float64 (%d, %d) assembly %v, Go twin %v", name, p, i, j, asm64[x], twin64[x])
				}
			}
		}
	}
}

// TestThreadsBitIdentical: a product is the same to the bit for every
// thread count, on every kernel family, with bands of rows and of columns
// and edge tiles inside a band.
func TestThreadsBitIdentical(t *testing.T) {
	defer func(v, g float64) { parallelMinFlops, parallelMinGemv = v, g }(parallelMinFlops, parallelMinGemv)
	parallelMinFlops, parallelMinGemv = 0, 0 // split even the small products
	rng := rand.New(rand.NewPCG(3, 4))
	shapes := [][3]int{{200, 37, 300}, {37, 200, 300}, {67, 45, 9}, {5, 300, 40}, {1, 70, 3}, {1, 203, 37}}
	for _, p := range paths() {
		for _, s := range shapes {
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					mc := newCase(rng, tA, tB, true, s[0], s[1], s[2])
					withPath(p, false, func() {
						one32, one64 := mul32(&Workspace{Threads: 1}, mc), mul64(&Workspace{Threads: 1}, mc)
						for threads := 2; threads <= 5; threads++ {
							w := &Workspace{Threads: threads}
							got32, got64 := mul32(w, mc), mul64(w, mc)
							for x := range one32 {
								if math.Float32bits(got32[x]) != math.Float32bits(one32[x]) ||
									math.Float64bits(got64[x]) != math.Float64bits(one64[x]) {
									t.Fatalf("%v/%v threads %d: element %d differs from one thread's", p, mc, threads, x)
								}
							}
						}
					})
				}
			}
		}
	}
}

// TestNoAllocations: after a warm-up product, products (threaded or not)
// allocate nothing.
func TestNoAllocations(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	mc := newCase(rng, false, true, false, 256, 200, 128)
	a, b, c := to32(mc.a), to32(mc.b), to32(mc.c0)
	for _, threads := range []int{1, 2} {
		w := &Workspace{Threads: threads}
		// 200 runs: AllocsPerRun rounds the mean down, so a one-off of the
		// runtime (a pool worker that parks for the first time gets a
		// sudog; earlier tests' pools being cleaned up) does not count,
		// while an allocation in every product still does.
		allocs := testing.AllocsPerRun(200, func() {
			Mul(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, a, mc.lda, b, mc.ldb, c, mc.ldc, false)
			Mul(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, mc.a, mc.lda, mc.b, mc.ldb, mc.c0, mc.ldc, false)
		})
		if allocs != 0 {
			t.Errorf("threads %d: %v allocations per product after warm-up, want 0", threads, allocs)
		}
	}
}

// rowsOf is the number of stored rows of a matrix whose op is r×c.
func rowsOf(trans bool, r, c int) int {
	if trans {
		return c
	}
	return r
}

// TestSumRows checks the column sums against float64 sums, across block
// boundaries (m > sumBlock) and vector tails (n not a multiple of 8), and
// that the assembly adds give the Go loop's bits.
func TestSumRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][2]int{{1, 1}, {7, 3}, {128, 65}, {33, 256}, {600, 77}, {0, 5}} {
		m, n := s[0], s[1]
		a := randoms(rng, m*(n+2))
		want := make([]float64, n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				want[j] += a[i*(n+2)+j]
			}
		}
		var w Workspace
		got := make([]float64, n)
		SumRows(&w, m, n, a, n+2, got)
		got32 := make([]float32, n)
		SumRows(&w, m, n, to32(a), n+2, got32)
		twin := make([]float32, n)
		withPath(activePath, true, func() { SumRows(&w, m, n, to32(a), n+2, twin) })
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-12*float64(m) || math.Abs(float64(got32[j])-want[j]) > 1e-5*float64(m) {
				t.Fatalf("%dx%d column %d: %v, %v, want %v", m, n, j, got[j], got32[j], want[j])
			}
			if got32[j] != twin[j] {
				t.Fatalf("%dx%d column %d: %v, Go loop %v", m, n, j, got32[j], twin[j])
			}
		}
	}
}

func randoms(rng *rand.Rand, n int) []float64 {
	s := make([]float64, n)
	for i := range s {
		s[i] = 2*rng.Float64() - 1
	}
	return s
}

func to32(s []float64) []float32 {
	out := make([]float32, len(s))
	for i, v := range s {
		out[i] = float32(v)
	}
	return out
}

// TestUseSwitchesPaths: Use really selects each family Paths names, and
// its restore function brings back the fastest.
func TestUseSwitchesPaths(t *testing.T) {
	for _, name := range Paths() {
		restore := Use(name)
		if got := activePath.String(); got != name {
			t.Errorf("Use(%q): active path %s", name, got)
		}
		restore()
		if activePath != bestPath {
			t.Errorf("after Use(%q) and restore: active path %s, want %s", name, activePath, bestPath)
		}
	}
}

// TestMulBias checks MulBias against what it replaces — the bias copied
// into every row of C, then Mul with accumulate — bit for bit, on every
// kernel path and its Go twin, with 1 and 3 threads, across block
// boundaries (tiny blocks) and edge tiles.
// setting is one way of running products: a kernel path, its assembly or
// its Go twin, normal or tiny blocks, a thread count at which every
// product is split, and for bfloat16 products on the AVX-512 path
// VDPBF16PS instead of AMX tiles (noAMX, where AMX runs).
type setting struct {
	path    kernelPath
	twin    bool
	tiny    bool
	threads int
	noAMX   bool
}

func (st setting) String() string {
	return fmt.Sprintf("%v twin %v tiny %v threads %d noAMX %v", st.path, st.twin, st.tiny, st.threads, st.noAMX)
}

// settings lists every setting this machine runs.
func settings() []setting {
	var all []setting
	for _, tiny := range []bool{false, true} {
		for _, p := range paths() {
			for _, twin := range []bool{false, true} {
				for _, threads := range []int{1, 3} {
					all = append(all, setting{p, twin, tiny, threads, false})
					if p == pathAVX512 && !twin && haveBF16 && amxWhyNot() == "" {
						all = append(all, setting{p, twin, tiny, threads, true})
					}
				}
			}
		}
	}
	return all
}

// run calls f with a workspace of st's threads, under st's path and blocks.
func (st setting) run(f func(w *Workspace)) {
	defer func(v float64, o bool) { parallelMinFlops, amxOff = v, o }(parallelMinFlops, amxOff)
	parallelMinFlops, amxOff = 0, st.noAMX
	w := &Workspace{Threads: st.threads}
	withPath(st.path, st.twin, func() {
		if st.tiny {
			withTinyBlocks(func() { f(w) })
		} else {
			f(w)
		}
	})
}

func TestMulBias(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := [][3]int{{1, 5, 7}, {16, 16, 16}, {33, 47, 300}, {300, 40, 21}, {64, 64, 0}, {40, 130, 70}}
	for _, st := range settings() {
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			a64, b64, bias64 := randoms(rng, m*k+1), randoms(rng, k*n+1), randoms(rng, n)
			a, b, bias := to32(a64), to32(b64), to32(bias64)
			want, got := make([]float32, m*(n+3)), make([]float32, m*(n+3))
			want64, got64 := make([]float64, m*(n+3)), make([]float64, m*(n+3))
			st.run(func(w *Workspace) {
				for i := 0; i < m; i++ {
					copy(want[i*(n+3):], bias)
				}
				Mul(w, false, true, m, n, k, a, max(k, 1), b, max(k, 1), want, n+3, true)
				MulBias(w, false, true, m, n, k, a, max(k, 1), b, max(k, 1), bias, got, n+3)
				for i := 0; i < m; i++ {
					copy(want64[i*(n+3):], bias64)
				}
				Mul(w, false, true, m, n, k, a64, max(k, 1), b64, max(k, 1), want64, n+3, true)
				MulBias(w, false, true, m, n, k, a64, max(k, 1), b64, max(k, 1), bias64, got64, n+3)
			})
			for i := range want {
				if (got[i] != want[i] || got64[i] != want64[i]) && i%(n+3) < n {
					t.Fatalf("%v %dx%dx%d: element %d = %v, %v, want %v, %v",
						st, m, n, k, i, got[i], got64[i], want[i], want64[i])
				}
			}
		}
	}
}

// TestMulLower: MulLower writes every entry on or below the diagonal with
// Mul's bits, for both orientations of each operand, in every setting;
// what it writes above the diagonal is Mul's value too, and whole tiles
// above it keep what was there.
func TestMulLower(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := [][3]int{{1, 1, 5}, {16, 16, 16}, {40, 40, 64}, {256, 256, 64}, {70, 33, 300}, {33, 90, 17}}
	const untouched = -12345
	for _, st := range settings() {
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			for _, tA := range []bool{false, true} {
				tB := !tA
				a, b := to32(randoms(rng, m*k)), to32(randoms(rng, k*n))
				lda, ldb := k, n
				if tA {
					lda = m
				}
				if tB {
					ldb = k
				}
				want, got := make([]float32, m*n), make([]float32, m*n)
				for i := range got {
					got[i] = untouched
				}
				st.run(func(w *Workspace) {
					Mul(w, tA, tB, m, n, k, a, lda, b, ldb, want, n, false)
					MulLower(w, tA, tB, m, n, k, a, lda, b, ldb, got, n)
				})
				if n > 32 && got[n-1] != untouched { // C[0][n−1] lies in a tile wholly above the diagonal
					t.Fatalf("%v %dx%dx%d: C[0][%d] written, want it skipped", st, m, n, k, n-1)
				}
				for i := 0; i < m; i++ {
					for j := 0; j < n; j++ {
						g, w := got[i*n+j], want[i*n+j]
						if g != w && (j <= i || g != untouched) {
							t.Fatalf("%v %dx%dx%d transA %v: C[%d][%d] = %v, want %v", st, m, n, k, tA, i, j, g, w)
						}
					}
				}
			}
		}
	}
}

// bitsShapes are products whose every sum is taken in the same order on
// every kernel path: k within one block of each (k ≤ 256), or A
// transposed, whose blocks are kc = 256 deep on every path; m ≥ 2, so
// that no float32 product goes to gemvT.
var bitsShapes = []struct {
	m, n, k         int
	fused, separate string // FNV-1a of C's bits: with FMA, and with products rounded before the add
}{
	{2, 300, 40, "1ec77a9fa206b4ad", "9b0ae6b29d17a877"},
	{16, 16, 16, "dc663be56ff5990b", "0221916a96d2f7cf"},
	{33, 47, 256, "c11eddceb9645552", "4af9a0b69ab48c97"},
	{70, 9, 100, "4c5c919b2f5d965f", "da79ae40851de160"},
	{5, 37, 64, "33b5eca0c9f918a9", "f12a7322ab08a597"},
	{130, 70, 200, "033c0fc7723b06b9", "7f9e4c03b7a188bd"},
	{40, 30, 300, "27a76cf090ce4d54", "ca38ba2113eb702a"}, // A transposed only
}

// twinFuses reports whether this build's Go twin rounds each multiply-add
// once (the compiler fuses a*b + c into an FMA instruction: arm64,
// amd64 with GOAMD64=v3) or rounds the product first (amd64 v1). It
// computes −(1+2⁻¹¹) + (1+2⁻¹²)², whose product needs 2⁻²⁴: fused, the
// sum is 2⁻²⁴; rounded first, 0.
func twinFuses() (f32, f64 bool) {
	defer func(p kernelPath, g bool) { activePath, forceGo = p, g }(activePath, forceGo)
	activePath, forceGo = pathGo, true
	var w Workspace
	c32 := []float32{0}
	x := float32(1 + 0x1p-12)
	Mul(&w, false, false, 1, 1, 2, []float32{-(1 + 0x1p-11), x}, 2, []float32{1, x}, 1, c32, 1, false)
	c64 := []float64{0}
	y := 1 + 0x1p-27
	Mul(&w, false, false, 1, 1, 2, []float64{-(1 + 0x1p-26), y}, 2, []float64{1, y}, 1, c64, 1, false)
	return c32[0] != 0, c64[0] != 0
}

// bitsOf runs every transpose combination of one shape, with and without
// accumulation, in both element types, and hashes the bits of every C.
func bitsOf(m, n, k int) string {
	rng := rand.New(rand.NewPCG(uint64(m), uint64(n*1000+k)))
	h := fnv.New64a()
	var buf [8]byte
	for _, tA := range []bool{true, false} {
		for _, tB := range []bool{false, true} {
			if k > 256 && !tA {
				continue
			}
			for _, acc := range []bool{false, true} {
				mc := newCase(rng, tA, tB, acc, m, n, k)
				for _, v := range mul32(&Workspace{}, mc) {
					binary.LittleEndian.PutUint32(buf[:4], math.Float32bits(v))
					h.Write(buf[:4])
				}
				for _, v := range mul64(&Workspace{}, mc) {
					binary.LittleEndian.PutUint64(buf[:], math.Float64bits(v))
					h.Write(buf[:])
				}
			}
		}
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

// TestTwinBits pins the bits of the products: the assembly kernels (every
// one this machine has) give the fused column, and the Go twin gives the
// fused column where the compiler fuses its multiply-adds (arm64: the Go
// twin is bit-identical to the assembly there) and the separate column
// where it does not (amd64), with either of its register blocks. A
// rewrite of the Go twin that changes the order of any sum fails here on
// every architecture.
func TestTwinBits(t *testing.T) {
	f32, f64 := twinFuses()
	if f32 != f64 {
		t.Fatalf("the Go twin fuses float32 %v, float64 %v: want both or neither", f32, f64)
	}
	defer func(w bool) { goBlockWide = w }(goBlockWide)
	for _, s := range bitsShapes {
		for _, p := range paths() {
			for _, twin := range []bool{false, true} {
				goTwin := twin || p == pathGo
				want, kind := s.separate, "separate"
				if !goTwin || f32 {
					want, kind = s.fused, "fused"
				}
				// The Go twin with either register block (the other
				// architecture's too): the same sums.
				for _, wide := range []bool{false, true} {
					goBlockWide = wide
					var got string
					withPath(p, twin, func() { got = bitsOf(s.m, s.n, s.k) })
					if got != want {
						t.Errorf("%dx%dx%d on %v (Go twin %v, 4×4 blocks %v): bits %s, want the %s column's %s", s.m, s.n, s.k, p, goTwin, wide, got, kind, want)
					}
					if !goTwin {
						break
					}
				}
			}
		}
	}
}
