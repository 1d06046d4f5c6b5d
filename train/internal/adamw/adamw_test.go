package adamw

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAssemblyMatchesGo runs several steps both ways on the same data and
// requires bit-identical parameters and moments, at a length that leaves a
// tail for the Go loop.
func TestAssemblyMatchesGo(t *testing.T) {
	if !haveAsm {
		t.Skip("no AVX2: only the Go loop runs here")
	}
	defer func(h bool) { have512 = h }(have512)
	for _, wide := range []bool{false, true} { // AVX2 alone; AVX-512 with an AVX2 and a Go tail
		if wide && !have512 {
			t.Log("no AVX-512F here: the AVX2 loop only")
			continue
		}
		have512 = wide
		assemblyMatchesGo(t)
	}
}

func assemblyMatchesGo(t *testing.T) {
	const n = 1031
	rng := rand.New(rand.NewPCG(3, 4))
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
	}
	wa, wg := append([]float32(nil), w...), append([]float32(nil), w...)
	ma, va, mg, vg := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	g := make([]float32, n)
	for step := 1; step <= 5; step++ {
		for i := range g {
			g[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
		}
		lr, b1, b2 := 1e-3, 0.9, 0.999
		c := Coefs{Beta1: b1, Beta2: b2, Eps: 1e-8, Decay: 1 - lr*0.01,
			StepSize: lr / (1 - math.Pow(b1, float64(step))), InvSqrtBias2: 1 / math.Sqrt(1-math.Pow(b2, float64(step)))}
		Update(wa, g, ma, va, c)
		update(wg, g, mg, vg, &c)
	}
	for i := range wa {
		if math.Float32bits(wa[i]) != math.Float32bits(wg[i]) || math.Float32bits(ma[i]) != math.Float32bits(mg[i]) || math.Float32bits(va[i]) != math.Float32bits(vg[i]) {
			t.Fatalf("entry %d: assembly p %v m %v v %v, Go p %v m %v v %v", i, wa[i], ma[i], va[i], wg[i], mg[i], vg[i])
		}
	}
}

func BenchmarkUpdate32(b *testing.B) {
	const n = 110_000
	w, g := make([]float32, n), make([]float32, n)
	m, v := make([]float32, n), make([]float32, n)
	for i := range g {
		g[i] = float32(i%17) * 0.01
	}
	c := Coefs{Beta1: 0.9, Beta2: 0.999, Eps: 1e-8, Decay: 0.99999, StepSize: 1e-3, InvSqrtBias2: 30}
	for i := 0; i < b.N; i++ {
		Update(w, g, m, v, c)
	}
}

// TestUpdate32RoundsOnce: a step on float32 weights and moments gives, for
// every stored value, the float64 step on the same values rounded once to
// float32 — the promise of the package comment — at a length that runs
// the AVX-512, AVX2 and Go paths.
func TestUpdate32RoundsOnce(t *testing.T) {
	const n = 1031
	rng := rand.New(rand.NewPCG(9, 10))
	w, g, m, v := make([]float32, n), make([]float32, n), make([]float32, n), make([]float32, n)
	w64, g64, m64, v64 := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64())
		g[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(8)-4)))
		m[i] = float32(0.1 * float64(g[i]) * rng.Float64())
		v[i] = float32(0.001 * float64(g[i]) * float64(g[i]) * rng.Float64())
		w64[i], g64[i], m64[i], v64[i] = float64(w[i]), float64(g[i]), float64(m[i]), float64(v[i])
	}
	c := Coefs{Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, Decay: 1 - 1e-3*0.1, StepSize: 1e-3 / (1 - 0.9*0.9), InvSqrtBias2: 1 / math.Sqrt(1-0.95*0.95)}
	Update(w, g, m, v, c)
	Update(w64, g64, m64, v64, c)
	for i := range w {
		if w[i] != float32(w64[i]) || m[i] != float32(m64[i]) || v[i] != float32(v64[i]) {
			t.Fatalf("entry %d: float32 step p %v m %v v %v, float64 step rounded p %v m %v v %v",
				i, w[i], m[i], v[i], float32(w64[i]), float32(m64[i]), float32(v64[i]))
		}
	}
}
