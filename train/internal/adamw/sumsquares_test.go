package adamw

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSumSquares: the assembly gives the Go loop's bits on every length
// from 0 to 70, at 1031 and 100003, and is within 2n·2⁻⁵³ relative of one
// running sum in float64: each is within n·2⁻⁵³ of the exact sum of n
// positive terms (squares of float32 values are exact in float64; only
// the additions round, in another order).
func TestSumSquares(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	lengths := []int{1031, 100003}
	for n := 0; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	defer func(h bool) { haveAsm = h }(haveAsm)
	asmHere := haveAsm
	for _, n := range lengths {
		g := make([]float32, n)
		want := 0.0
		for i := range g {
			g[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
			want += float64(g[i]) * float64(g[i])
		}
		haveAsm = false
		pure := SumSquares(g)
		if math.Abs(pure-want) > float64(n)*0x1p-52*want {
			t.Fatalf("n %d: SumSquares %v, want %v", n, pure, want)
		}
		if asmHere {
			haveAsm = true
			if got := SumSquares(g); math.Float64bits(got) != math.Float64bits(pure) {
				t.Fatalf("n %d: assembly %v, Go %v", n, got, pure)
			}
		}
	}
}

// TestScaleAssemblyMatchesGo: Scale gives the loop's bits (each entry one
// float64 product rounded to float32, checked directly) on every length
// from 0 to 70 and at 1031, with and without the assembly.
func TestScaleAssemblyMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	defer func(h bool) { haveAsm = h }(haveAsm)
	impls := []bool{false}
	if haveAsm {
		impls = append(impls, true)
	}
	lengths := []int{1031}
	for n := 0; n <= 70; n++ {
		lengths = append(lengths, n)
	}
	const c = 0.37
	for _, n := range lengths {
		g := make([]float32, n)
		for i := range g {
			g[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
		}
		for _, asm := range impls {
			haveAsm = asm
			got := append([]float32(nil), g...)
			Scale(got, c)
			for i, v := range g {
				if want := float32(float64(v) * c); math.Float32bits(got[i]) != math.Float32bits(want) {
					t.Fatalf("asm %v, n %d: entry %d = %v, want %v", asm, n, i, got[i], want)
				}
			}
		}
	}
}

// BenchmarkSumSquares: ns per entry over 800k gradient entries (about
// nanoGPT's CPU model), assembly and Go.
func BenchmarkSumSquares(b *testing.B) {
	g := make([]float32, 800_000)
	for i := range g {
		g[i] = float32(i%101) / 100
	}
	for _, asm := range []bool{false, true} {
		if asm && !haveAsm {
			continue
		}
		b.Run(map[bool]string{false: "go", true: "asm"}[asm], func(b *testing.B) {
			defer func(h bool) { haveAsm = h }(haveAsm)
			haveAsm = asm
			for b.Loop() {
				SumSquares(g)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(g)), "ns/entry")
		})
	}
}
