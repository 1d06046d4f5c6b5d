package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// roundBF16Ref rounds x to 8 significant bits by a route of its own: the
// two bfloat16 neighbours of x (its significand truncated, and one unit of
// the 8th bit further from zero), the nearer one by float64 distance, the
// one with an even last bit on a tie; denormals to zero, NaN to a NaN.
func roundBF16Ref(x float32) float32 {
	switch {
	case x != x:
		return x
	case math.IsInf(float64(x), 0):
		return x
	case math.Abs(float64(x)) < 0x1p-126:
		return float32(math.Copysign(0, float64(x)))
	}
	frac, exp := math.Frexp(math.Abs(float64(x))) // |x| = frac·2^exp, frac in [0.5, 1)
	lo := math.Floor(frac*256) / 256
	hi := lo + 1.0/256
	d := frac - lo
	pick := lo
	if d > hi-frac || d == hi-frac && int(lo*256)%2 == 1 {
		pick = hi
	}
	return float32(math.Copysign(math.Ldexp(pick, exp), float64(x))) // beyond float32's range: ±Inf
}

// TestRoundBF16 checks RoundBF16 against roundBF16Ref on random bit
// patterns, on every tie and near-tie around random numbers, and on the
// special values, and that NaN stays NaN.
func TestRoundBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	var xs []float32
	for range 200000 {
		xs = append(xs, math.Float32frombits(rng.Uint32()))
	}
	for range 20000 {
		u := rng.Uint32() &^ 0xffff
		for _, low := range []uint32{0x7fff, 0x8000, 0x8001, 0xffff, 0x0001} {
			xs = append(xs, math.Float32frombits(u|low))
		}
	}
	xs = append(xs, 0, float32(math.Copysign(0, -1)), math.MaxFloat32, -math.MaxFloat32,
		math.Float32frombits(0x7f7f8000), math.Float32frombits(0x7f7f7fff), // the tie to infinity, and below it
		math.Float32frombits(1), math.Float32frombits(0x807fffff), 0x1p-126, -0x1p-126,
		float32(math.Inf(1)), float32(math.Inf(-1)), 1, 1+0x1p-8, 1+0x1p-7+0x1p-8, 3.14159)
	for _, x := range xs {
		got, want := RoundBF16(x), roundBF16Ref(x)
		if x != x {
			if got == got || math.Float32bits(got)&0xffff != 0 || math.Float32bits(got)>>31 != math.Float32bits(x)>>31 {
				t.Fatalf("RoundBF16(NaN %#08x) = %#08x, want a NaN of its sign", math.Float32bits(x), math.Float32bits(got))
			}
			continue
		}
		if math.Float32bits(got) != math.Float32bits(want) {
			t.Fatalf("RoundBF16(%g = %#08x) = %g (%#08x), want %g (%#08x)", x, math.Float32bits(x), got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
}

// roundedCase is mc with A and B rounded to bfloat16: the operands a
// bfloat16 product multiplies.
func roundedCase(mc mulCase) mulCase {
	r := mc
	r.a, r.b = make([]float64, len(mc.a)), make([]float64, len(mc.b))
	for i, v := range mc.a {
		r.a[i] = float64(RoundBF16(float32(v)))
	}
	for i, v := range mc.b {
		r.b[i] = float64(RoundBF16(float32(v)))
	}
	return r
}

// checkBF16 compares a bfloat16 product with two references.
//
// Against the exact (float64) product of the rounded operands: the
// float32 sum of k exact products in any order, its blocks added to C, is
// within (k+2)·2⁻²⁴·Σ|â·b̂| plus 2·2⁻²⁴·|c0| for the add to C (the bound of
// check), plus 2⁻¹²⁶ per add for a flushed denormal.
//
// Against the exact product of the operands as given (what a float32
// product approximates): rounding each operand to 8 significant bits
// moves it by at most 2⁻⁸ of itself, so each product by at most
// (2·2⁻⁸ + 2⁻¹⁶)·|a·b|; to that the float32 bound above.
func checkBF16(t *testing.T, label string, mc mulCase, got []float32) {
	t.Helper()
	rc := roundedCase(mc)
	wantR, scaleR := naive(rc.tA, rc.tB, rc.m, rc.n, rc.k, rc.a, rc.lda, rc.b, rc.ldb)
	want, scale := naive(mc.tA, mc.tB, mc.m, mc.n, mc.k, mc.a, mc.lda, mc.b, mc.ldb)
	const u = 0x1p-24
	for i := 0; i < mc.m; i++ {
		for j := 0; j < mc.ldc; j++ {
			g, c0 := float64(got[i*mc.ldc+j]), float64(float32(mc.c0[i*mc.ldc+j]))
			if j >= mc.n {
				if g != c0 {
					t.Fatalf("%s: wrote past the row at (%d, %d)", label, i, j)
				}
				continue
			}
			x := i*mc.n + j
			sum := float64(mc.k+2)*u*scaleR[x] + float64(mc.k+1)*0x1p-126
			wR, tolR := wantR[x], sum
			w, tol := want[x], (2*0x1p-8+0x1p-16)*scale[x]+sum
			if mc.acc {
				wR, w = wR+c0, w+c0
				tolR += 2 * u * math.Abs(c0)
				tol += 2 * u * math.Abs(c0)
			}
			if math.Abs(g-wR) > tolR {
				t.Fatalf("%s (%d, %d): %v, want %v ± %.3g (the exact product of the rounded operands)", label, i, j, g, wR, tolR)
			}
			if math.Abs(g-w) > tol {
				t.Fatalf("%s (%d, %d): %v, want %v ± %.3g (the exact product)", label, i, j, g, w, tol)
			}
		}
	}
}

// mulBF16 is mul32 through a bfloat16 Workspace.
func mulBF16(w *Workspace, mc mulCase) []float32 {
	w.BF16 = true
	defer func() { w.BF16 = false }()
	return mul32(w, mc)
}

// TestMulBF16 checks bfloat16 products in every setting (each kernel
// family forced, its assembly or the Go twin, on the AVX-512 family AMX
// tiles and VDPBF16PS where AMX runs, real and tiny blocks, one
// thread and three) on every transpose combination, with accumulation,
// edges in both directions, odd k, k = 0 and one-row products (gemvBF16
// where B is transposed, split over threads at 1×601×700): each against
// checkBF16's references, and
// bit for bit against the Go twin (the assembly kernel must give the
// twin's bits) and against one thread.
func TestMulBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	shapes := [][3]int{{1, 1, 1}, {12, 32, 16}, {1, 70, 41}, {1, 4, 300}, {1, 601, 700}, {5, 17, 3}, {7, 9, 33},
		{3, 20, 0}, {33, 47, 300}, {30, 40, 600}, {2, 100, 7}, {128, 64, 256}}
	for range 6 {
		shapes = append(shapes, [3]int{1 + rng.IntN(70), 1 + rng.IntN(70), 1 + rng.IntN(70)})
	}
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, acc := range []bool{false, true} {
					mc := newCase(rng, tA, tB, acc, s[0], s[1], s[2])
					var twin []float32
					setting{pathGo, true, false, 1, false}.run(func(w *Workspace) { twin = mulBF16(w, mc) })
					checkBF16(t, fmt.Sprintf("%v/Go twin", mc), mc, twin)
					for _, st := range settings() {
						var got []float32
						st.run(func(w *Workspace) { got = mulBF16(w, mc) })
						for x := range got {
							if math.Float32bits(got[x]) != math.Float32bits(twin[x]) {
								t.Fatalf("%v %v: element %d = %v, the Go twin on one thread %v", mc, st, x, got[x], twin[x])
							}
						}
					}
				}
			}
		}
	}
}

// TestMulBiasLowerBF16: MulBias gives the bits of the bias copied into C
// and Mul with accumulate, MulLower Mul's bits on and below the diagonal,
// with bfloat16 operands, in every setting.
func TestMulBiasLowerBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	for _, st := range settings() {
		for _, s := range [][3]int{{1, 5, 7}, {16, 16, 16}, {33, 47, 300}, {300, 40, 21}, {64, 64, 0}, {40, 130, 70}} {
			m, n, k := s[0], s[1], s[2]
			a, b, bias := to32(randoms(rng, m*k+1)), to32(randoms(rng, k*n+1)), to32(randoms(rng, n))
			ld := max(k, 1)
			want, got := make([]float32, m*(n+3)), make([]float32, m*(n+3))
			sq, lower := make([]float32, m*m), make([]float32, m*m)
			st.run(func(w *Workspace) {
				w.BF16 = true
				for i := 0; i < m; i++ {
					copy(want[i*(n+3):], bias)
				}
				Mul(w, false, true, m, n, k, a, ld, b, ld, want, n+3, true)
				MulBias(w, false, true, m, n, k, a, ld, b, ld, bias, got, n+3)
				Mul(w, false, true, m, m, k, a, ld, a, ld, sq, m, false)
				MulLower(w, false, true, m, m, k, a, ld, a, ld, lower, m)
			})
			for i := range want {
				if got[i] != want[i] && i%(n+3) < n {
					t.Fatalf("%v %dx%dx%d: MulBias element %d = %v, want %v", st, m, n, k, i, got[i], want[i])
				}
			}
			for i := 0; i < m; i++ {
				for j := 0; j <= i; j++ {
					if lower[i*m+j] != sq[i*m+j] {
						t.Fatalf("%v %dx%dx%d: MulLower (%d, %d) = %v, want %v", st, m, m, k, i, j, lower[i*m+j], sq[i*m+j])
					}
				}
			}
		}
	}
}

// TestBF16IgnoredByFloat64: a float64 product through a bfloat16
// Workspace is the float64 product.
func TestBF16IgnoredByFloat64(t *testing.T) {
	mc := newCase(rand.New(rand.NewPCG(17, 18)), false, true, false, 20, 30, 40)
	want, got := mul64(&Workspace{}, mc), mul64(&Workspace{BF16: true}, mc)
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element %d: %v, want the float64 product's %v", i, got[i], want[i])
		}
	}
}

// TestBF16NoAllocations: bfloat16 products allocate nothing after a
// warm-up, on one thread and split over two.
func TestBF16NoAllocations(t *testing.T) {
	defer func(v, g float64) { parallelMinFlops, parallelMinGemv = v, g }(parallelMinFlops, parallelMinGemv)
	parallelMinFlops, parallelMinGemv = 0, 0
	mc := newCase(rand.New(rand.NewPCG(19, 20)), false, true, false, 40, 70, 64) // whole and edge tiles, small enough for the Go twin under qemu
	a, b, c := to32(mc.a), to32(mc.b), to32(mc.c0)
	for _, threads := range []int{1, 2} {
		w := &Workspace{Threads: threads, BF16: true}
		allocs := testing.AllocsPerRun(200, func() {
			Mul(w, mc.tA, mc.tB, mc.m, mc.n, mc.k, a, mc.lda, b, mc.ldb, c, mc.ldc, false)
			Mul(w, false, true, 1, mc.n, mc.k, a, mc.lda, b, mc.ldb, c, mc.ldc, false)
		})
		if allocs != 0 {
			t.Errorf("threads %d: %v allocations per product after warm-up, want 0", threads, allocs)
		}
	}
}

// goldenSum is one sum TDPBF16PS computed on a Sapphire Rapids core: c +
// the products of a and b (bfloat16 bits, an even number of them, at most
// 32: one instruction), and its result.
type goldenSum struct {
	line    int
	c, want float32
	a, b    []uint16
}

// readAMXGolden reads bench/amxmodel/testdata/golden.txt (made by
// bench/amx-numerics.sh golden from bench/amx/amxnum.c; see
// bench/NOTES.md, "AMX TDPBF16PS numerics"): a line a sum, "K c a… b…
// result" in hex bits.
func readAMXGolden(t *testing.T) []goldenSum {
	t.Helper()
	const path = "../../../bench/amxmodel/testdata/golden.txt"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var sums []goldenSum
	for n, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		w := strings.Fields(line)
		k, err := strconv.Atoi(w[0])
		if err != nil || k < 2 || k > 32 || k%2 != 0 || len(w) != 3+2*k {
			t.Fatalf("%s:%d: want K (even, 2..32), c, K a, K b and the result", path, n+1)
		}
		hex := func(s string) uint32 {
			v, err := strconv.ParseUint(s, 16, 32)
			if err != nil {
				t.Fatalf("%s:%d: %v", path, n+1, err)
			}
			return uint32(v)
		}
		g := goldenSum{line: n + 1, c: math.Float32frombits(hex(w[1])), want: math.Float32frombits(hex(w[2+2*k]))}
		for i := range k {
			g.a = append(g.a, uint16(hex(w[2+i])))
			g.b = append(g.b, uint16(hex(w[2+k+i])))
		}
		sums = append(sums, g)
	}
	if len(sums) < 1000 {
		t.Fatalf("%s holds %d sums, want 1000", path, len(sums))
	}
	return sums
}

// pairWords packs bfloat16 bits into words in pairs order.
func pairWords(h []uint16) []uint32 {
	w := make([]uint32, len(h)/2)
	for q := range w {
		w[q] = uint32(h[2*q]) | uint32(h[2*q+1])<<16
	}
	return w
}

// TestChunkGivesAMXBits checks chunkBF16, the twin's arithmetic for one
// chunk, bit for bit against 1000 sums AMX's TDPBF16PS computed (hard
// cases: ties, cancellation, denormal products and operands, overflow;
// a NaN need only stay a NaN). A chunk's s is the instruction's C, its
// words the instruction's steps (K of them, not padded to 32, as the
// hardware summed them). The sums tell the model's order from
// VDPBF16PS's (dpbf16 pair after pair from C): that order must differ
// from the hardware in a tenth of them or more, so that this test fails
// if chunkBF16's order changes.
func TestChunkGivesAMXBits(t *testing.T) {
	bad, sdm := 0, 0
	sums := readAMXGolden(t)
	for _, g := range sums {
		a, b := pairWords(g.a), pairWords(g.b)
		got := chunkBF16(g.c, a, 1, b, 1, len(a))
		if !sameBits(got, g.want) {
			if bad++; bad <= 10 {
				t.Errorf("golden.txt:%d (K=%d, c=%08x): chunkBF16 %08x, AMX %08x", g.line, len(g.a),
					math.Float32bits(g.c), math.Float32bits(got), math.Float32bits(g.want))
			}
		}
		s := flushDenormal(g.c)
		for q := range a {
			s = dpbf16(s, a[q], b[q])
		}
		if !sameBits(s, g.want) {
			sdm++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d sums differ from AMX's", bad, len(sums))
	}
	if sdm < len(sums)/10 {
		t.Errorf("VDPBF16PS's order differs from AMX in %d of %d golden sums, want a tenth or more", sdm, len(sums))
	}
}

// sameBits reports whether x and y have the same bits, or are both NaN.
func sameBits(x, y float32) bool {
	return math.Float32bits(x) == math.Float32bits(y) || x != x && y != y
}

// TestKernelBF16GoChunks checks the twin's blocks against a
// sum of its own: from +0, chunk after chunk of 16 words, then the plain
// add.
func TestKernelBF16GoChunks(t *testing.T) {
	const mr, nr, kp = 3, 4, 32
	rng := rand.New(rand.NewPCG(25, 26))
	a, b := make([]uint32, mr*kp), make([]uint32, kp*nr)
	for i := range a {
		a[i] = bf16Bits(float32(rng.NormFloat64())) | bf16Bits(float32(rng.NormFloat64()))<<16
	}
	for i := range b {
		b[i] = bf16Bits(float32(rng.NormFloat64())) | bf16Bits(float32(rng.NormFloat64()))<<16
	}
	add := to32(randoms(rng, mr*nr))
	c := make([]float32, mr*nr)
	kernelBF16Go(mr, nr, mr, nr, kp, a, kp, 1, b, c, nr, add, nr)
	for r := range mr {
		for j := range nr {
			var s float32
			for q0 := 0; q0 < kp; q0 += 16 {
				var even, odd float64
				for q := q0; q < q0+16; q++ {
					x, y := a[r*kp+q], b[q*nr+j]
					even = float64(float32(even + float64(math.Float32frombits(x<<16))*float64(math.Float32frombits(y<<16))))
					odd = float64(float32(odd + float64(math.Float32frombits(x&0xffff0000))*float64(math.Float32frombits(y&0xffff0000))))
				}
				s += float32(even) + float32(odd)
			}
			if want := add[r*nr+j] + s; !sameBits(c[r*nr+j], want) {
				t.Fatalf("(%d, %d) = %v, want %v", r, j, c[r*nr+j], want)
			}
		}
	}
}

// TestPackBF16Layouts checks the Go packers' words against bf16Steps's
// steps, in both orders, every k mod 4 and past kc, and that bf16Steps
// visits each step once.
func TestPackBF16Layouts(t *testing.T) {
	for _, chains := range []bool{false, true} {
		seen := map[int]bool{}
		for q := range 16 {
			lo, hi := bf16Steps(chains, q)
			seen[lo], seen[hi] = true, true
			if chains && (lo%2 != q%2 || hi%2 != q%2 || lo != hi+2) {
				t.Errorf("chains: word %d holds steps %d (low), %d (high), want two of chain %d, the later low", q, lo, hi, q%2)
			}
		}
		if len(seen) != 32 {
			t.Errorf("chains %v: 16 words hold %d distinct steps, want 32", chains, len(seen))
		}
		for _, kc := range []int{1, 2, 3, 4, 5, 6, 7, 33} {
			kp := bf16BlockWords(kc)
			src := make([]float32, kc) // step p is p+1: exact in bfloat16
			for p := range src {
				src[p] = float32(p + 1)
			}
			rows, cols := make([]uint32, kp), make([]uint32, kp)
			packBF16Rows(false, chains, rows, kp, 1, src, kc, 0, kc, 0, 1)
			packBF16Go(chains, cols, kp, 1, src, 1, false, 0, kc, 0, 1)
			for q := range kp {
				lo, hi := bf16Steps(chains, q)
				step := func(p int) uint32 {
					if p >= kc {
						return 0
					}
					return bf16Bits(float32(p + 1))
				}
				want := step(lo) | step(hi)<<16
				if rows[q] != want || cols[q] != want {
					t.Fatalf("chains %v kc %d: word %d = %#08x (rows), %#08x (columns), want %#08x", chains, kc, q, rows[q], cols[q], want)
				}
			}
		}
	}
}
