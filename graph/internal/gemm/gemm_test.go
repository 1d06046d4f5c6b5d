package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// naive is the textbook triple loop in float64.
func naive(transA, transB bool, m, n, k int, a []float64, lda int, b []float64, ldb int) []float64 {
	c := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				ai, bi := i*lda+p, p*ldb+j
				if transA {
					ai = p*lda + i
				}
				if transB {
					bi = j*ldb + p
				}
				s += a[ai] * b[bi]
			}
			c[i*n+j] = s
		}
	}
	return c
}

// TestMul checks every transpose combination, edge tiles in both
// directions, strides wider than the matrices, accumulation and k = 0, for
// both element types and both micro-kernels (assembly where the CPU has it).
func TestMul(t *testing.T) {
	kernels := []bool{false}
	if haveAsm {
		kernels = append(kernels, true)
	}
	defer func(h bool) { haveAsm = h }(haveAsm)
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][3]int{{1, 1, 1}, {4, 16, 8}, {5, 17, 3}, {7, 9, 33}, {128, 65, 64}, {32, 32, 64}, {3, 20, 0}}
	for _, useAsm := range kernels {
		haveAsm = useAsm
		for _, s := range shapes {
			m, n, k := s[0], s[1], s[2]
			for _, tA := range []bool{false, true} {
				for _, tB := range []bool{false, true} {
					for _, acc := range []bool{false, true} {
						name := fmt.Sprintf("asm%v/%dx%dx%d/tA%v_tB%v_acc%v", useAsm, m, n, k, tA, tB, acc)
						t.Run(name, func(t *testing.T) {
							// Strides 3 wider than needed catch any read or write past a row.
							lda, ldb, ldc := k+3, n+3, n+3
							if tA {
								lda = m + 3
							}
							if tB {
								ldb = k + 3
							}
							// Exactly as long as the strides need, so a read past
							// the end panics.
							a := randoms(rng, rowsOf(tA, m, k)*lda)
							b := randoms(rng, rowsOf(tB, k, n)*ldb)
							c0 := randoms(rng, m*ldc)
							want := naive(tA, tB, m, n, k, a, lda, b, ldb)
							if acc {
								for i := 0; i < m; i++ {
									for j := 0; j < n; j++ {
										want[i*n+j] += c0[i*ldc+j]
									}
								}
							}
							check64(t, m, n, ldc, want, c0, func(c []float64) {
								Mul(&Workspace{}, tA, tB, m, n, k, a, lda, b, ldb, c, ldc, acc)
							})
							check32(t, m, n, ldc, want, c0, func(c []float32) {
								Mul(&Workspace{}, tA, tB, m, n, k, to32(a), lda, to32(b), ldb, c, ldc, acc)
							})
						})
					}
				}
			}
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

func TestSumRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, s := range [][2]int{{1, 1}, {7, 3}, {128, 65}, {33, 256}} {
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
		for j := range want {
			if math.Abs(got[j]-want[j]) > 1e-12*float64(m) || math.Abs(float64(got32[j])-want[j]) > 1e-5*float64(m) {
				t.Fatalf("%dx%d column %d: %v, %v, want %v", m, n, j, got[j], got32[j], want[j])
			}
		}
	}
}

func check64(t *testing.T, m, n, ldc int, want, c0 []float64, mul func([]float64)) {
	t.Helper()
	c := append([]float64(nil), c0...)
	mul(c)
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := c[i*ldc+j]
			if j >= n {
				if got != c0[i*ldc+j] {
					t.Fatalf("float64: wrote past the row at (%d, %d)", i, j)
				}
				continue
			}
			if w := want[i*n+j]; math.Abs(got-w) > 1e-12*(1+math.Abs(w)) {
				t.Fatalf("float64 (%d, %d): %v, want %v", i, j, got, w)
			}
		}
	}
}

func check32(t *testing.T, m, n, ldc int, want, c0 []float64, mul func([]float32)) {
	t.Helper()
	c := to32(c0)
	mul(c)
	for i := 0; i < m; i++ {
		for j := 0; j < ldc; j++ {
			got := float64(c[i*ldc+j])
			if j >= n {
				if got != float64(float32(c0[i*ldc+j])) {
					t.Fatalf("float32: wrote past the row at (%d, %d)", i, j)
				}
				continue
			}
			if w := want[i*n+j]; math.Abs(got-w) > 1e-4*(1+math.Abs(w)) {
				t.Fatalf("float32 (%d, %d): %v, want %v", i, j, got, w)
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

// BenchmarkMul times the products of one seed-config training step.
func BenchmarkMul(b *testing.B) {
	for _, s := range []struct {
		name    string
		tA, tB  bool
		m, n, k int
	}{
		{"x·Wᵀ_128x64x64", false, true, 128, 64, 64},
		{"x·Wᵀ_128x256x64", false, true, 128, 256, 64},
		{"x·Wᵀ_128x64x256", false, true, 128, 64, 256},
		{"dy·W_128x64x256", false, false, 128, 64, 256},
		{"dyᵀ·x_256x64x128", true, false, 256, 64, 128},
		{"q·kᵀ_32x32x64", false, true, 32, 32, 64},
	} {
		lda, ldb := s.k, s.n
		if s.tA {
			lda = s.m
		}
		if s.tB {
			ldb = s.k
		}
		a := to32(randoms(rand.New(rand.NewPCG(1, 1)), s.m*s.k))
		bb := to32(randoms(rand.New(rand.NewPCG(1, 2)), s.n*s.k))
		c := make([]float32, s.m*s.n)
		var w Workspace
		b.Run(s.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				Mul(&w, s.tA, s.tB, s.m, s.n, s.k, a, lda, bb, ldb, c, s.n, false)
			}
			b.ReportMetric(float64(2*s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
