package expf

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExp: Exp is within 2 float32 ulps (relative 2.4e-7) of the correctly
// rounded e^x over the range a softmax meets, 0 below it and +Inf above.
func TestExp(t *testing.T) {
	worst := 0.0
	for x := float32(-87.3); x <= 88.7; x += 0.0137 {
		want := math.Exp(float64(x))
		if e := math.Abs(float64(Exp(x))-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 2.4e-7 {
		t.Errorf("largest relative error %.3g, want ≤ 2.4e-7", worst)
	}
	if Exp(-100) != 0 || !math.IsInf(float64(Exp(100)), 1) || Exp(0) != 1 || !math.IsNaN(float64(Exp(float32(math.NaN())))) {
		t.Errorf("Exp(-100), Exp(100), Exp(0), Exp(NaN) = %v, %v, %v, %v",
			Exp(-100), Exp(100), Exp(0), Exp(float32(math.NaN())))
	}
}

// implementations lists the ways this machine can compute (false: Go,
// true: assembly) and restores haveAsm when the test ends.
func implementations(t *testing.T) []bool {
	t.Cleanup(func(h bool) func() { return func() { haveAsm = h } }(haveAsm))
	impls := []bool{false}
	if haveAsm {
		impls = append(impls, true)
	}
	return impls
}

// expInputs: the whole float32 range a little apart, the edges of the
// clamps and their neighbours, the infinities and NaN; 5 more than a
// multiple of 8, so that the Go tail runs too.
func expInputs() []float32 {
	var x []float32
	for v := float32(-100); v <= 100; v += 0.00731 {
		x = append(x, v)
	}
	for _, edge := range []float32{expLo, expHi, 0, -87.68, 88.37} {
		x = append(x, math.Nextafter32(edge, -1e30), edge, math.Nextafter32(edge, 1e30))
	}
	inf := float32(math.Inf(1))
	x = append(x, inf, -inf, float32(math.NaN()), -1e30, 1e30, math.SmallestNonzeroFloat32)
	for len(x)%8 != 5 {
		x = append(x, 1)
	}
	return x
}

// TestExpsMatchesExp: the vector loop gives Exp's bits, lane for lane,
// without a shift and with one.
func TestExpsMatchesExp(t *testing.T) {
	x := expInputs()
	for _, asm := range implementations(t) {
		haveAsm = asm
		for _, shift := range []float32{0, 1.5} {
			y := make([]float32, len(x))
			Exps(y, x, shift)
			for i, v := range x {
				if want := Exp(v - shift); math.Float32bits(y[i]) != math.Float32bits(want) {
					t.Fatalf("asm %v: Exps at %v − %v = %v, Exp %v", asm, v, shift, y[i], want)
				}
			}
		}
	}
}

// TestLogSumExp: the assembly gives the Go loop's bits on every length from
// 1 to 70 and a few long rows, and both are within 3e-7 of log Σ e^x in
// float64 (Exp's 2 ulps of each term, relative, are at most 2.4e-7 of the
// sum, so of its log).
func TestLogSumExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	lengths := []int{65, 255, 256, 257, 1000}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(5 * rng.NormFloat64())
		}
		m, sum := math.Inf(-1), 0.0
		for _, v := range x {
			m = max(m, float64(v))
		}
		for _, v := range x {
			sum += math.Exp(float64(v) - m)
		}
		want := m + math.Log(sum)
		var got []float64
		for _, asm := range implementations(t) {
			haveAsm = asm
			got = append(got, LogSumExp(x))
			if e := math.Abs(got[len(got)-1] - want); e > 3e-7 {
				t.Fatalf("asm %v, n %d: LogSumExp %v, want %v", asm, n, got[len(got)-1], want)
			}
		}
		if len(got) == 2 && math.Float64bits(got[0]) != math.Float64bits(got[1]) {
			t.Fatalf("n %d: LogSumExp %v (Go), %v (asm)", n, got[0], got[1])
		}
	}
}

// TestSoftmaxMatchesGo: the assembly row gives softmaxGo's bits on every
// length from 1 to 70 (every tail, rows of one to eight vectors) and on a
// few long rows, scores spread over a wide range so that some terms
// underflow to 0.
func TestSoftmaxMatchesGo(t *testing.T) {
	if !haveAsm {
		t.Log("no AVX2 here (or purego): only the Go version exists")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	lengths := []int{255, 256, 257, 1000}
	for n := 1; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	for _, n := range lengths {
		for _, spread := range []float64{1, 30, 3000} {
			s := make([]float32, n)
			for i := range s {
				s[i] = float32(spread * rng.NormFloat64())
			}
			want := append([]float32(nil), s...)
			softmaxGo(want, 0.125)
			Softmax(s, 0.125)
			for i := range s {
				if math.Float32bits(s[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n %d, spread %v: softmax[%d] = %v, Go %v", n, spread, i, s[i], want[i])
				}
			}
		}
	}
}

// TestSoftmaxAgainstFloat64: every implementation within a few float32
// ulps of the float64 softmax: 4e-7 relative (Exp's 2 ulps, the
// normalisation's 1), plus what rounding the argument a = (s − max)·scale
// to float32 twice costs, 1.2e-7·|a|; and each row sums to 1 within 1e-6.
func TestSoftmaxAgainstFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, asm := range implementations(t) {
		haveAsm = asm
		for _, n := range []int{1, 7, 8, 9, 33, 64, 256, 259} {
			s := make([]float32, n)
			for i := range s {
				s[i] = float32(4 * rng.NormFloat64())
			}
			want := make([]float64, n)
			maxv, sum := math.Inf(-1), 0.0
			for _, v := range s {
				maxv = max(maxv, float64(v))
			}
			for i, v := range s {
				want[i] = math.Exp((float64(v) - maxv) * 0.7)
				sum += want[i]
			}
			s0 := append([]float32(nil), s...)
			Softmax(s, 0.7)
			total := 0.0
			for i, v := range s {
				total += float64(v)
				a := (float64(s0[i]) - maxv) * 0.7
				if w := want[i] / sum; math.Abs(float64(v)-w) > (4e-7+1.2e-7*math.Abs(a))*w {
					t.Fatalf("asm %v, n %d: softmax[%d] = %v, want %v", asm, n, i, v, w)
				}
			}
			if math.Abs(total-1) > 1e-6 {
				t.Errorf("asm %v, n %d: the row sums to %v", asm, n, total)
			}
		}
	}
}

// BenchmarkSoftmax: ns per element over the rows of one causal (T, T)
// attention matrix (row i has i + 1 scores), as the attention kernel calls
// it, at nanoGPT's CPU context (64) and the 10.8M model's (256).
func BenchmarkSoftmax(b *testing.B) {
	for _, T := range []int{64, 256} {
		s := make([]float32, T)
		for i := range s {
			s[i] = float32(i%17) - 8
		}
		for _, impl := range []struct {
			name string
			f    func([]float32, float32)
		}{{"go", softmaxGo}, {"asm", Softmax}} {
			if impl.name == "asm" && !haveAsm {
				continue
			}
			b.Run(impl.name+"/T="+itoa(T), func(b *testing.B) {
				for b.Loop() {
					for i := 1; i <= T; i++ {
						impl.f(s[:i], 0.25)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(T*(T+1)/2), "ns/element")
			})
		}
	}
}

// BenchmarkExps: ns per element of Exp one at a time and Exps, 4k elements.
func BenchmarkExps(b *testing.B) {
	x, y := make([]float32, 4096), make([]float32, 4096)
	for i := range x {
		x[i] = float32(i%200-180) / 10
	}
	b.Run("Exp", func(b *testing.B) {
		for b.Loop() {
			for i, v := range x {
				y[i] = Exp(v)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/element")
	})
	b.Run("Exps", func(b *testing.B) {
		for b.Loop() {
			Exps(y, x, 0)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/element")
	})
}

// BenchmarkLogSumExp: ns per element on rows of 65 (the character
// vocabulary, as the cross-entropy calls it).
func BenchmarkLogSumExp(b *testing.B) {
	x := make([]float32, 65)
	for i := range x {
		x[i] = float32(i%13) - 6
	}
	for _, impl := range []struct {
		name string
		asm  bool
	}{{"go", false}, {"asm", true}} {
		if impl.asm && !haveAsm {
			continue
		}
		b.Run(impl.name, func(b *testing.B) {
			defer func(h bool) { haveAsm = h }(haveAsm)
			haveAsm = impl.asm
			for b.Loop() {
				LogSumExp(x)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(x)), "ns/element")
		})
	}
}

func itoa(n int) string {
	s := ""
	for ; n > 0; n /= 10 {
		s = string(rune('0'+n%10)) + s
	}
	return s
}
