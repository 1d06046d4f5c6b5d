package layernorm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gptg/gptg/internal/armwords"
)

// row is one layer's inputs for a row of n: x, w, b, dy, and a dw to add to.
type row struct{ x, w, b, dy, dw []float32 }

func randomRow(rng *rand.Rand, n int) row {
	r := row{make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)}
	for i := range n {
		r.x[i] = float32(3 + 2*rng.NormFloat64()) // an offset, so that x − mean cancels
		r.w[i] = float32(1 + 0.3*rng.NormFloat64())
		r.b[i] = float32(0.1 * rng.NormFloat64())
		r.dy[i] = float32(rng.NormFloat64())
		r.dw[i] = float32(rng.NormFloat64())
	}
	return r
}

// outputs runs every kernel on r with or without the assembly: the
// statistics, y with and without the bias, dx, and dw after the add.
func outputs(r row, asm bool) (stats [2]float64, y, yNoBias, dx, dw []float32) {
	defer func(h bool) { haveAsm = h }(haveAsm)
	haveAsm = asm
	n := len(r.x)
	mean, rstd := RowStats(r.x, 1e-5)
	y, yNoBias, dx = make([]float32, n), make([]float32, n), make([]float32, n)
	dw = append([]float32(nil), r.dw...)
	Normalize(y, r.x, r.w, r.b, mean, rstd)
	Normalize(yNoBias, r.x, r.w, nil, mean, rstd)
	BackwardX(dx, r.x, r.w, r.dy, mean, rstd)
	AccumulateW(dw, r.x, r.dy, mean, rstd)
	return [2]float64{mean, rstd}, y, yNoBias, dx, dw
}

// TestAsmMatchesGo: the assembly gives the Go loops' bits on every length
// from 1 to 70 (every tail) and at the model widths 128, 384, 385.
func TestAsmMatchesGo(t *testing.T) {
	if !haveAsm {
		t.Log("no AVX2 or NEON here (or purego): only the Go loops exist")
		return
	}
	rng := rand.New(rand.NewPCG(1, 2))
	lengths := []int{128, 384, 385}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		r := randomRow(rng, n)
		s1, y1, yn1, dx1, dw1 := outputs(r, true)
		s0, y0, yn0, dx0, dw0 := outputs(r, false)
		if s1 != s0 {
			t.Fatalf("n %d: mean, rstd %v (asm), %v (Go)", n, s1, s0)
		}
		for name, pair := range map[string][2][]float32{"y": {y1, y0}, "y without bias": {yn1, yn0}, "dx": {dx1, dx0}, "dw": {dw1, dw0}} {
			for i := range pair[0] {
				if math.Float32bits(pair[0][i]) != math.Float32bits(pair[1][i]) {
					t.Fatalf("n %d: %s[%d] = %v (asm), %v (Go)", n, name, i, pair[0][i], pair[1][i])
				}
			}
		}
	}
}

// TestAgainstFloat64: every implementation against layer norm in float64
// with one running sum: mean and rstd within 1e-12 relative (the sums'
// order), y and dw within 1 float32 ulp of their float64 value (they are
// float64 results rounded once), dx within 2e-7 of the largest |dx| of the
// row (it subtracts two means; their float64 error is far below this).
func TestAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	impls := []bool{false}
	if haveAsm {
		impls = append(impls, true)
	}
	for _, n := range []int{1, 5, 8, 13, 64, 128, 384, 389} {
		r := randomRow(rng, n)
		mean, variance := 0.0, 0.0
		for _, v := range r.x {
			mean += float64(v)
		}
		mean /= float64(n)
		for _, v := range r.x {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		rstd := 1 / math.Sqrt(variance/float64(n)+1e-5)
		wantY, wantDx, wantDw := make([]float64, n), make([]float64, n), make([]float64, n)
		mg, mgn, largest := 0.0, 0.0, 0.0
		for i, v := range r.x {
			norm := (float64(v) - mean) * rstd
			g := float64(r.dy[i]) * float64(r.w[i])
			wantY[i] = norm*float64(r.w[i]) + float64(r.b[i])
			wantDw[i] = float64(r.dw[i]) + float64(float32(float64(r.dy[i])*norm))
			mg += g / float64(n)
			mgn += g * norm / float64(n)
		}
		for i, v := range r.x {
			norm := (float64(v) - mean) * rstd
			wantDx[i] = (float64(r.dy[i])*float64(r.w[i]) - mg - norm*mgn) * rstd
			largest = max(largest, math.Abs(wantDx[i]))
		}
		for _, asm := range impls {
			stats, y, _, dx, dw := outputs(r, asm)
			if math.Abs(stats[0]-mean) > 1e-12*math.Abs(mean) || math.Abs(stats[1]-rstd) > 1e-12*rstd {
				t.Fatalf("asm %v, n %d: mean, rstd %v, want %v, %v", asm, n, stats, mean, rstd)
			}
			for i := range n {
				if ulps(y[i], wantY[i]) > 1 || ulps(dw[i], wantDw[i]) > 1 {
					t.Fatalf("asm %v, n %d: y[%d], dw[%d] = %v, %v; want %v, %v", asm, n, i, i, y[i], dw[i], wantY[i], wantDw[i])
				}
				if math.Abs(float64(dx[i])-wantDx[i]) > 2e-7*largest {
					t.Fatalf("asm %v, n %d: dx[%d] = %v, want %v", asm, n, i, dx[i], wantDx[i])
				}
			}
		}
	}
}

// ulps: how many float32 steps got is from want rounded to float32.
func ulps(got float32, want float64) int {
	d := int64(math.Float32bits(got)) - int64(math.Float32bits(float32(want)))
	if (got < 0) != (float32(want) < 0) && got != 0 && float32(want) != 0 {
		return math.MaxInt32
	}
	return int(max(d, -d))
}

// BenchmarkRow: ns per element of each kernel on one row at the model
// widths (nanoGPT CPU 128, the 10.8M model 384), assembly and Go.
func BenchmarkRow(b *testing.B) {
	for _, n := range []int{128, 384} {
		r := randomRow(rand.New(rand.NewPCG(5, 6)), n)
		y := make([]float32, n)
		mean, rstd := RowStats(r.x, 1e-5)
		for _, asm := range []bool{false, true} {
			if asm && !haveAsm {
				continue
			}
			impl := map[bool]string{false: "go", true: "asm"}[asm]
			for _, k := range []struct {
				name string
				f    func()
			}{
				{"stats", func() { RowStats(r.x, 1e-5) }},
				{"normalize", func() { Normalize(y, r.x, r.w, r.b, mean, rstd) }},
				{"backwardX", func() { BackwardX(y, r.x, r.w, r.dy, mean, rstd) }},
				{"accumulateW", func() { AccumulateW(y, r.x, r.dy, mean, rstd) }},
			} {
				b.Run(fmt.Sprintf("%s/%s/C=%d", k.name, impl, n), func(b *testing.B) {
					defer func(h bool) { haveAsm = h }(haveAsm)
					haveAsm = asm
					for b.Loop() {
						k.f()
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/element")
				})
			}
		}
	}
}

// TestNEONEncodings: every instruction that layernorm_arm64.s writes as a
// WORD is the one its comment names (binutils' disassembler reads it).
func TestNEONEncodings(t *testing.T) {
	armwords.Check(t, "layernorm_arm64.s")
}
