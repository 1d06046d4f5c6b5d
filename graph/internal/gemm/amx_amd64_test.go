//go:build amd64 && !purego

package gemm

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"runtime/pprof"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAMXEncodings: every tile instruction amx_amd64.s writes as BYTEs
// is the one its comment names (objdump reads the test binary).
func TestAMXEncodings(t *testing.T) {
	checkBYTEs(t, "amx_amd64.s", 2, "ldtilecfg", "tilerelease", "tilezero", "tileloadd", "tilestored", "tdpbf16ps")
}

// TestAMXKernelBits: the AMX kernel gives the Go twin's bits
// (kernelBF16Go: the model, chunk after chunk) on the same words in pairs
// order (A rows laid out in tiles by amxTiles), on hard cases (bf16Words: any exponent, ties, products near
// float32's smallest normal; every third trial all tiny, so that the
// chunks' sums are often denormal and flushed), one block and several down a panel, from
// zero and added to C or a bias, one chunk and many. TDPBF16PS against
// the model, as TestBF16KernelBits is VDPBF16PS.
func TestAMXKernelBits(t *testing.T) {
	needAMX(t)
	const mr, nr = 32, 32
	rng := rand.New(rand.NewPCG(55, 56))
	tmp := make([]float32, mr*nr)
	for _, kp := range []int{16, 32, 64, 256} {
		for _, strips := range []int{1, 3} {
			for _, addKind := range []string{"none", "c", "bias"} {
				for trial := range 10 {
					tiny := trial%3 == 2 // chunk sums near 2⁻¹²⁶, which the model flushes
					a, b := bf16Words(rng, strips*mr*kp, tiny), bf16Words(rng, kp*nr, tiny)
					ldc := nr + 3
					c0 := to32(randoms(rng, strips*mr*ldc))
					got := append([]float32(nil), c0...)
					add, ldAdd := kernelAdd(rng, addKind, c0, ldc, nr)
					amxKernel(kp/16, strips, amxTiles(a, strips*mr, kp), b, got, ldc, add, ldAdd, tmp)
					want := twinStrips(mr, nr, kp, strips, a, kp, 1, mr*kp, b, c0, ldc, add, ldAdd)
					checkKernelBits(t, fmt.Sprintf("kp %d strips %d add %s trial %d", kp, strips, addKind, trial), got, want, ldc)
				}
			}
		}
	}
}

// amxTiles lays out rows of A (kp words each, row after row) in the AMX
// kernel's tiles: per strip of 32 rows, per chunk of 16 words, the
// strip's 32 rows of the chunk.
func amxTiles(a []uint32, rows, kp int) []uint32 {
	const mr, words = 32, 16
	out := make([]uint32, len(a))
	chunks := kp / words
	for r := range rows {
		for q := range kp {
			s, c := r/mr, q/words
			out[((s*chunks+c)*mr+r%mr)*words+q%words] = a[r*kp+q]
		}
	}
	return out
}

// needAMX skips a test of the AMX kernel where it does not run, naming
// why. .ci/run lets the TestAMX… tests skip only on a CPU without
// AMX-BF16: where the CPU has it, a refusal by the OS fails CI.
func needAMX(t *testing.T) {
	t.Helper()
	if why := amxWhyNot(); why != "" || !haveBF16 {
		t.Skipf("no AMX kernel here: %s", why)
	}
}

// withAMX runs f with bfloat16 products on the AVX-512 family, on AMX
// tiles (on) or VDPBF16PS (off).
func withAMX(on bool, f func()) {
	defer func(o bool) { amxOff = o }(amxOff)
	amxOff = !on
	withPath(pathAVX512, false, f)
}

// modelSum is the bfloat16 sum model (briefs: one element of C over one
// block of k), written out step by step from bfloat16 values: the block's
// steps padded with zeros to whole chunks of 32; per chunk two float32
// chains from +0, the even steps and the odd ones, each add of an exact
// product rounded once and a denormal result flushed to a zero of its
// sign; then s = s + (even + odd), both adds rounded and flushed.
func modelSum(a, b []float32) float32 {
	flush := func(x float64) float32 { // x's float32 rounding, denormals flushed
		f := float32(x)
		if f != 0 && math.Abs(float64(f)) < 0x1p-126 {
			return float32(math.Copysign(0, float64(f)))
		}
		return f
	}
	n := roundUp(len(a), 32)
	var s float32
	for c := 0; c < n; c += 32 {
		var even, odd float32
		for p := c; p < c+32; p++ {
			var x, y float32
			if p < len(a) {
				x, y = a[p], b[p]
			}
			prod := float64(x) * float64(y)
			if p%2 == 0 {
				even = flush(float64(even) + prod)
			} else {
				odd = flush(float64(odd) + prod)
			}
		}
		s = flush(float64(s) + float64(flush(float64(even)+float64(odd))))
	}
	return s
}

// modelProduct is a bfloat16 product by the model, from the operands as
// given: each rounded (RoundBF16), each element of C summed in blocks of
// kc steps (modelSum), each block's sum added to C (or the bias, or +0
// for the first block) by a plain float32 add.
func modelProduct(mc mulCase, bias []float32, kc int) []float32 {
	c := to32(mc.c0)
	a, b := make([]float32, mc.k), make([]float32, mc.k)
	for i := 0; i < mc.m; i++ {
		for j := 0; j < mc.n; j++ {
			for p := 0; p < mc.k; p++ {
				if mc.tA {
					a[p] = RoundBF16(float32(mc.a[p*mc.lda+i]))
				} else {
					a[p] = RoundBF16(float32(mc.a[i*mc.lda+p]))
				}
				if mc.tB {
					b[p] = RoundBF16(float32(mc.b[j*mc.ldb+p]))
				} else {
					b[p] = RoundBF16(float32(mc.b[p*mc.ldb+j]))
				}
			}
			x := &c[i*mc.ldc+j]
			for pc := 0; pc < mc.k; pc += kc {
				s := modelSum(a[pc:min(pc+kc, mc.k)], b[pc:min(pc+kc, mc.k)])
				switch {
				case pc > 0 || mc.acc:
					*x += s
				case bias != nil:
					*x = bias[j] + s
				default:
					*x = s
				}
			}
		}
	}
	return c
}

// hardOperand replaces a share of an operand's numbers with hard cases
// for the sums: any exponent (overflow to infinity, cancellation), ties
// of 1 + a few low bits, products near float32's smallest normal (2⁻¹²⁶:
// flushed results), and bfloat16 denormals (read as zero).
func hardOperand(rng *rand.Rand, x []float64) {
	for i := range x {
		sign := float64(1 - 2*rng.IntN(2))
		switch rng.IntN(8) {
		case 0:
			x[i] = sign * math.Ldexp(1+rng.Float64(), rng.IntN(120)-60)
		case 1:
			x[i] = sign * (1 + float64(rng.IntN(4))/128)
		case 2:
			x[i] = sign * math.Ldexp(1+rng.Float64(), -63-rng.IntN(3))
		case 3:
			if rng.IntN(8) == 0 {
				x[i] = sign * 0x1p-130
			}
		}
	}
}

// TestAMXModelBits: bfloat16 products on AMX tiles give the model's bits
// (modelProduct, the model in plain Go from the unpacked operands), for
// every transpose, from zero, added to C and to a bias, with edge blocks
// in both directions, odd k, k not a multiple of 32, k over several
// blocks of kc, split over threads, and MulLower's skipped blocks.
func TestAMXModelBits(t *testing.T) {
	needAMX(t)
	rng := rand.New(rand.NewPCG(51, 52))
	shapes := [][3]int{{2, 3, 1}, {32, 32, 32}, {33, 31, 17}, {64, 64, 64}, {70, 45, 77}, {31, 97, 513},
		{96, 40, 1100}, {5, 33, 300}, {130, 70, 33}}
	for range 4 {
		shapes = append(shapes, [3]int{2 + rng.IntN(100), 1 + rng.IntN(100), 1 + rng.IntN(200)})
	}
	for _, s := range shapes {
		for _, tA := range []bool{false, true} {
			for _, tB := range []bool{false, true} {
				for _, kind := range []string{"none", "acc", "bias", "lower"} {
					m, n := s[0], s[1]
					if kind == "lower" {
						n = m
					}
					mc := newCase(rng, tA, tB, kind == "acc", m, n, s[2])
					hardOperand(rng, mc.a)
					hardOperand(rng, mc.b)
					var bias []float32
					if kind == "bias" {
						bias = to32(randoms(rng, n))
					}
					want := modelProduct(mc, bias, amxKernels.kc)
					for _, threads := range []int{1, 3} {
						label := fmt.Sprintf("%v %s threads %d", mc, kind, threads)
						var got []float32
						defer func(v float64) { parallelMinFlops = v }(parallelMinFlops)
						parallelMinFlops = 0
						withAMX(true, func() {
							w := &Workspace{Threads: threads, BF16: true}
							a, b := to32(mc.a), to32(mc.b)
							got = to32(mc.c0)
							switch kind {
							case "bias":
								MulBias(w, tA, tB, m, n, mc.k, a, mc.lda, b, mc.ldb, bias, got, mc.ldc)
							case "lower":
								MulLower(w, tA, tB, m, n, mc.k, a, mc.lda, b, mc.ldb, got, mc.ldc)
							default:
								Mul(w, tA, tB, m, n, mc.k, a, mc.lda, b, mc.ldb, got, mc.ldc, mc.acc)
							}
						})
						for i := 0; i < m; i++ {
							for j := 0; j < mc.ldc; j++ {
								x := i*mc.ldc + j
								g, w := got[x], want[x]
								if kind == "lower" && j > i && j >= n {
									continue
								}
								if kind == "lower" && j > i && j < n && (j/32 > i/32 || math.Float32bits(g) == math.Float32bits(float32(mc.c0[x]))) {
									continue // above the diagonal: computed within a block that crosses it, else untouched
								}
								if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
									t.Fatalf("%s: element (%d, %d) = %g (%#08x), the model's %g (%#08x)", label, i, j, g, math.Float32bits(g), w, math.Float32bits(w))
								}
							}
						}
					}
				}
			}
		}
	}
}

// TestAMXUnderPreemption: AMX products give the same bits while the
// process takes signals and switches goroutines around them — many
// goroutines of products, others allocating and collecting (runtime.GC:
// stop-the-world preemption requests, SIGURG to every running thread), a
// CPU profile (SIGPROF, 1 kHz) — so that the tile state survives the
// kernel saving it in signal frames on Go's signal stacks, and no
// goroutine sees another's tiles.
func TestAMXUnderPreemption(t *testing.T) {
	needAMX(t)
	rng := rand.New(rand.NewPCG(53, 54))
	const m, n, k = 96, 70, 600
	a, b := to32(randoms(rng, m*k)), to32(randoms(rng, k*n))
	var want []float32
	withAMX(true, func() {
		want = make([]float32, m*n)
		Mul(&Workspace{BF16: true}, false, true, m, n, k, a, k, b, k, want, n, false)
	})
	var prof bytes.Buffer
	if err := pprof.StartCPUProfile(&prof); err == nil {
		defer pprof.StopCPUProfile()
	}
	stop := make(chan struct{})
	var churn sync.WaitGroup
	for range 2 {
		churn.Go(func() {
			var sink [][]byte
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				sink = append(sink, make([]byte, 64<<10))
				if i%64 == 0 {
					sink = nil
					runtime.GC()
				}
			}
		})
	}
	var bad atomic.Int64
	start := time.Now()
	withAMX(true, func() {
		var products sync.WaitGroup
		for g := range 16 {
			products.Go(func() {
				got := make([]float32, m*n)
				w := &Workspace{BF16: true, Threads: 1 + g%2}
				for time.Since(start) < 2*time.Second {
					Mul(w, false, true, m, n, k, a, k, b, k, got, n, false)
					for x := range got {
						if math.Float32bits(got[x]) != math.Float32bits(want[x]) {
							bad.Add(1)
						}
					}
					runtime.Gosched()
				}
			})
		}
		products.Wait()
	})
	close(stop)
	churn.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d elements differed from the first product's", bad.Load())
	}
}
